#include "executor/engine/datasets.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "executor/engine/csv_loader.h"
#include "executor/engine/data_cache.h"
#include "executor/engine/fashion_mnist_loader.h"
#include "executor/engine/image_folder_loader.h"
#include "executor/engine/member_reader.h"
#include "executor/engine/npy_loader.h"
#include "executor/job_json.h"

namespace tuner::engine {

namespace {

const DatasetInfo kDatasets[] = {{.name = "fashion-mnist",
                                  .format = "idx",
                                  .train_size = 60000,
                                  .test_size = 10000,
                                  .sample = training::Shape{1, 28, 28},
                                  .classes = 10,
                                  .uint8 = true,  // pixels 0..255 (training/data/idx.h)
                                  .divisor = 255.0f,
                                  .load = load_fashion_mnist},
                                 {.name = "csv",
                                  .format = "csv",
                                  .train_size = -1,
                                  .test_size = -1,
                                  .sample = training::Shape{},
                                  .classes = 0,
                                  .uint8 = false,
                                  .divisor = 1.0f,
                                  .load = load_csv},
                                 {.name = "npy",
                                  .format = "npy",
                                  .train_size = -1,
                                  .test_size = -1,
                                  .sample = training::Shape{},
                                  .classes = 0,
                                  .uint8 = false,
                                  .divisor = 1.0f,
                                  .load = load_npy},
                                 {.name = "image_folder",
                                  .format = "image_folder",
                                  .train_size = -1,
                                  .test_size = -1,
                                  .sample = training::Shape{},
                                  .classes = 0,
                                  .uint8 = false,  // decoded to [0, 1] (image_folder_loader.h)
                                  .divisor = 1.0f,
                                  .load = load_image_folder_cached}};

}  // namespace

std::span<const DatasetInfo> engine_datasets() { return kDatasets; }

std::string known_datasets() {
  std::vector<std::string_view> names;
  for (const DatasetInfo& d : kDatasets) {
    if (d.format == "idx") names.push_back(d.name);
  }
  return join(names);
}

const DatasetInfo& find_dataset(std::string_view name, const std::string& path) {
  for (const DatasetInfo& d : kDatasets) {
    if (d.name == name) return d;
  }
  job_json::fail(path,
                 "unknown dataset \"" + std::string(name) + "\" (known: " + known_datasets() + ")");
}

const DatasetInfo* find_file_format(std::string_view format) {
  for (const DatasetInfo& d : kDatasets) {
    if (d.format == format && d.format != "idx") return &d;
  }
  return nullptr;
}

DataShape catalogue_shape(const DatasetInfo& info) {
  return DataShape{.name = std::string(info.name), .sample = info.sample, .classes = info.classes};
}

Splits load_raw_data(const EngineJobSpec& spec, const EngineTrialConfig& config,
                     const std::string& where) {
  const std::string path = where + ".data";
  const DatasetInfo& info = find_dataset(spec.dataset, path + ".dataset");
  return info.load(
      spec, SplitSizes{.train = config.train, .validation = config.validation, .test = config.test},
      path);
}

training::Normalizer fit_normalizer(const EngineJobSpec& spec, const training::Dataset& train,
                                    std::span<const FeatureColumn> columns) {
  const bool per_channel = spec.normalize.empty()
                               ? spec.format == "csv" || spec.format == "image_folder"
                               : spec.normalize == "channel";
  training::Normalizer norm = training::Normalizer::fit(
      train, per_channel ? training::NormalizeBy::kChannel : training::NormalizeBy::kAll);
  std::vector<int64_t> indices;  // the features of embedded columns
  int64_t at = 0;
  for (const FeatureColumn& c : columns) {
    if (c.embedding > 0) indices.push_back(at);
    at += !c.categorical || c.embedding > 0
              ? 1
              : static_cast<int64_t>(c.categories.size()) + (c.missing_slot ? 1 : 0);
  }
  if (!indices.empty()) {
    if (!per_channel) {
      job_json::fail("job.data.normalize",
                     "\"all\" would scale the category indices of the embedded columns; leave it "
                     "out (per feature) for data.embedding");
    }
    norm.keep_channels(indices);
  }
  return norm;
}

NormalizedSplits load_normalized_data(const EngineJobSpec& spec, const EngineTrialConfig& config,
                                      const std::string& where) {
  if (std::optional<NormalizedSplits> cached = load_normalized_cached(spec, config, where)) {
    return std::move(*cached);
  }
  NormalizedSplits out;
  out.splits = load_raw_data(spec, config, where);
  const training::Normalizer norm = fit_normalizer(spec, out.splits.train, out.splits.columns);
  norm.apply(out.splits.train);
  if (!out.splits.validation.empty()) norm.apply(out.splits.validation);
  if (!out.splits.test.empty()) norm.apply(out.splits.test);
  out.mean.assign(norm.mean().begin(), norm.mean().end());
  out.stddev.assign(norm.stddev().begin(), norm.stddev().end());
  return out;
}

Splits load_data(const EngineJobSpec& spec, EngineTrialConfig& config, const std::string& where) {
  NormalizedSplits normalized = load_normalized_data(spec, config, where);
  Splits s = std::move(normalized.splits);

  if (config.augments()) {
    const training::Shape& sample = s.train.sample_shape();
    if (sample.rank() != 3) {
      job_json::fail(where + ".data.augment", "needs image samples [C, H, W], but " + s.name +
                                                  "'s are " + sample.to_string());
    }
    // Padding is black in the images' own values: each channel's 0, normalized.
    std::vector<float> fill;
    for (size_t c = 0; c < normalized.mean.size(); ++c) {
      fill.push_back((0.0f - normalized.mean[c]) * (1.0f / normalized.stddev[c]));
    }
    s.augmentation = std::make_shared<training::Augmentation>(
        sample, training::AugmentOptions{
                    .crop_padding = config.crop_padding, .fill = fill, .flip = config.flip});
  }
  const std::string model_path = where + ".model";
  if (s.train.is_regression()) s.target_scaling = training::TargetScaling::fit(s.train);
  // Embedded columns: the layers take the features with each index replaced by its vector.
  nlohmann::json embeddings = nlohmann::json::array();
  int64_t encoded = s.train.sample_shape().rank() == 1 ? s.train.sample_shape()[0] : 0;
  for (size_t k = 0, at = 0; k < s.columns.size(); ++k) {
    const FeatureColumn& c = s.columns[k];
    if (c.embedding > 0) {
      embeddings.push_back(
          {{"at", at},
           {"categories", static_cast<int64_t>(c.categories.size()) + (c.missing_slot ? 1 : 0)},
           {"dim", c.embedding}});
      encoded += c.embedding - 1;
    }
    at += !c.categorical || c.embedding > 0 ? 1 : c.categories.size() + (c.missing_slot ? 1 : 0);
  }
  const DataShape data{
      .name = s.name,
      .sample = embeddings.empty() ? s.train.sample_shape() : training::Shape{encoded},
      .classes = s.train.num_classes(),
      .targets = s.train.num_targets(),
      .task = spec.task};
  const nlohmann::json unbound = nlohmann::json::parse(config.model_json);
  check_model_outs_fit_task(unbound, spec.task, model_path);
  if (unbound.is_object() && unbound.contains("embeddings")) {
    job_json::fail(model_path + ".embeddings",
                   "made from data.embedding; the model does not give it itself");
  }
  nlohmann::json bound = bind_model(unbound, data);
  training::ModelSpec model = parse_model(bound, model_path);
  check_model_fits_data(model, data, model_path);
  if (!embeddings.empty()) {
    // The model takes the features as the loader encodes them, index features included.
    bound["embeddings"] = std::move(embeddings);
    const std::span<const int64_t> raw = s.train.sample_shape().dims();
    bound["input"] = std::vector<int64_t>(raw.begin(), raw.end());
    model = parse_model(bound, model_path);
  }
  config.model_json = model.json;
  config.train = s.train.size();
  config.validation = s.validation.size();
  config.test = s.test.size();
  if (config.batch_size > config.train) {
    job_json::fail(where + ".training.batch_size",
                   std::to_string(config.batch_size) + " is larger than the training split (" +
                       std::to_string(config.train) + " samples of " + s.name + ")");
  }
  return s;
}

}  // namespace tuner::engine
