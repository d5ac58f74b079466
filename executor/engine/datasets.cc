#include "executor/engine/datasets.h"

#include <vector>

#include "executor/engine/fashion_mnist_loader.h"
#include "executor/engine/member_reader.h"
#include "executor/job_json.h"

namespace tuner::engine {

namespace {

const DatasetInfo kDatasets[] = {{.name = "fashion-mnist",
                                  .train_size = 60000,
                                  .test_size = 10000,
                                  .sample = training::Shape{1, 28, 28},
                                  .classes = 10,
                                  .uint8 = true,  // pixels 0..255 (training/data/idx.h)
                                  .divisor = 255.0f,
                                  .load = load_fashion_mnist}};

}  // namespace

std::span<const DatasetInfo> engine_datasets() { return kDatasets; }

std::string known_datasets() {
  std::vector<std::string_view> names;
  for (const DatasetInfo& d : kDatasets) names.push_back(d.name);
  return join(names);
}

const DatasetInfo& find_dataset(std::string_view name, const std::string& path) {
  for (const DatasetInfo& d : kDatasets) {
    if (d.name == name) return d;
  }
  job_json::fail(path,
                 "unknown dataset \"" + std::string(name) + "\" (known: " + known_datasets() + ")");
}

Splits load_raw_data(const EngineJobSpec& spec, const EngineTrialConfig& config,
                     const std::string& where) {
  const std::string path = where + ".data";
  const DatasetInfo& info = find_dataset(spec.dataset, path + ".dataset");
  return info.load(
      spec.data_dir,
      SplitSizes{.train = config.train, .validation = config.validation, .test = config.test},
      path);
}

training::Normalizer fit_normalizer(const training::Dataset& train) {
  return training::Normalizer::fit(train, training::NormalizeBy::kAll);
}

Splits load_data(const EngineJobSpec& spec, const EngineTrialConfig& config,
                 const std::string& where) {
  Splits s = load_raw_data(spec, config, where);
  const training::Normalizer norm = fit_normalizer(s.train);
  norm.apply(s.train);
  if (!s.validation.empty()) norm.apply(s.validation);
  if (!s.test.empty()) norm.apply(s.test);
  return s;
}

}  // namespace tuner::engine
