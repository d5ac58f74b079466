#include "executor/engine/job_spec.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "executor/engine/datasets.h"
#include "executor/engine/member_reader.h"
#include "executor/engine/placeholders.h"
#include "executor/job_json.h"
#include "training/model_spec.h"
#include "trials/json_reader.h"

namespace tuner {

namespace {

using engine::DatasetInfo;
using engine::MemberReader;
using engine::object_member;
using job_json::fail;

const std::vector<std::string_view> kRootMembers = {
    "kind", "model", "data", "training", "threads", "backend", "precision", "convolution", "ranks",
    "nodes", "collective_timeout_s", "latency_batch", "artifacts_dir", "objective_metric",
    // Read by parse_trial_job (executor/trial_job.h): the executor's time limit and stop grace.
    "timeout_s", "stop_grace_s"};
const std::vector<std::string_view> kDataMembers = {"dataset", "dir", "train", "validation",
                                                    "test"};
const std::vector<std::string_view> kTrainingMembers = {
    "epochs",   "batch_size",      "optimizer",      "lr",     "weight_decay",
    "momentum", "schedule",        "warmup_epochs",  "min_lr", "step_epochs",
    "gamma",    "label_smoothing", "clip_grad_norm", "seed"};
const std::vector<std::string> kObjectives = {"train_loss", "val_loss", "val_accuracy"};

// The ranges of the training members.
constexpr NumberRange kPositive{.low = 0, .low_open = true};
constexpr NumberRange kNonNegative{.low = 0};
constexpr NumberRange kFraction{.low = 0, .high = 1, .high_open = true};

// --- The model ----------------------------------------------------------------------------------

// Whether the job's data object has member `key`.
bool data_has(const nlohmann::json& root, const char* key) {
  auto it = root.find("data");
  return it != root.end() && it->is_object() && it->contains(key);
}

// Refuses a model that does not fit the samples and classes of the dataset (as far as they are
// known without loading it). `model_path` is the job's "model" (e.g. "job.model").
void check_model_fits_data(const training::ModelSpec& model, const DatasetInfo& info,
                           const std::string& model_path) {
  const std::string name(info.name);
  if (info.sample.rank() > 0 && !(model.input == info.sample)) {
    fail(model_path + ".input", model.input.to_string() + " is not the shape of " + name +
                                    "'s samples, " + info.sample.to_string() +
                                    ": make the model's input " + info.sample.to_string());
  }
  if (info.classes > 0 && !(model.output == training::Shape{info.classes})) {
    const std::string last =
        model.layers.empty() ? model_path : model_path + "." + model.layers.back().path;
    const std::string want = "[" + std::to_string(info.classes) + "]";
    if (model.output.rank() == 1) {
      fail(last, "the model's output is " + model.output.to_string() + ", but " + name + " has " +
                     std::to_string(info.classes) + " classes: the last layer must give " + want +
                     " (one logit per class)");
    }
    fail(last, "the model's output is " + model.output.to_string() + ", but " + name + "'s " +
                   std::to_string(info.classes) + " classes need " + want +
                   " (one logit per class): end the model with {\"type\": \"flatten\"} and "
                   "{\"type\": \"linear\", \"out\": " +
                   std::to_string(info.classes) + "}");
  }
}

// A model spec parsed, its errors as Error(kInvalidArgument) under `model_path`.
training::ModelSpec parse_model(const nlohmann::json& model, const std::string& model_path) {
  try {
    return training::parse_model_spec(model.dump());
  } catch (const training::SpecError& e) {
    const bool at_root = e.path().empty() || e.path().front() == '(';
    fail(at_root ? model_path : model_path + "." + e.path(), e.reason());
  }
}

// The job's model checked against the data set; its canonical JSON, or empty for a template
// whose model holds placeholders (a concrete input is still checked).
std::string read_model(const nlohmann::json& root, const DatasetInfo& info,
                       const std::string& where, bool templated) {
  const std::string model_path = where + ".model";
  const nlohmann::json& model = object_member(root, "model", model_path, true);
  if (!templated || !engine::has_placeholder(model)) {
    const training::ModelSpec parsed = parse_model(model, model_path);
    check_model_fits_data(parsed, info, model_path);
    return parsed.json;
  }
  if (auto input = model.find("input");
      input != model.end() && !engine::has_placeholder(*input) && info.sample.rank() > 0) {
    // The placeholders are elsewhere: a concrete input is checked against the data now.
    nlohmann::json probe = model;
    probe["layers"] = nlohmann::json::array({nlohmann::json{{"type", "flatten"}}});
    const training::ModelSpec parsed = parse_model(probe, model_path);
    if (!(parsed.input == info.sample)) check_model_fits_data(parsed, info, model_path);
  }
  return {};
}

// --- data and training --------------------------------------------------------------------------

// data.train, validation and test into `c`, checked against the data set's sizes and the
// objective (those that are placeholders of a template are not checked).
void read_split_sizes(const nlohmann::json& root, const EngineJobSpec& spec,
                      const DatasetInfo& info, const std::string& where, bool templated,
                      EngineTrialConfig& c) {
  const std::string data_path = where + ".data";
  MemberReader data(object_member(root, "data", data_path, true), data_path, templated);
  auto train = data.integer("train", 1);
  auto validation = data.integer("validation", 0);
  auto test = data.integer("test", 0);
  if (train) c.train = *train;
  if (validation) c.validation = *validation;
  if (test) c.test = *test;
  if ((train || !data_has(root, "train")) && (validation || !data_has(root, "validation")) &&
      info.train_size >= 0 && c.train + c.validation > info.train_size) {
    fail(data_path, "train + validation is " + std::to_string(c.train + c.validation) + " but " +
                        std::string(info.name) + " has " + std::to_string(info.train_size) +
                        " training images");
  }
  if (test && info.test_size >= 0 && c.test > info.test_size) {
    fail(data_path + ".test", std::to_string(c.test) + " is more than the " +
                                  std::to_string(info.test_size) + " test images of " +
                                  std::string(info.name));
  }
  if (spec.objective_metric.starts_with("val_") && (validation || !data_has(root, "validation")) &&
      c.validation == 0) {
    fail(data_path + ".validation", "must be > 0: the objective metric " + spec.objective_metric +
                                        " needs a validation split");
  }
}

// The members under "training" into `c`, each checked on its own.
void read_training(const nlohmann::json& root, const std::string& training_path, bool templated,
                   EngineTrialConfig& c) {
  MemberReader t(object_member(root, "training", training_path, false), training_path, templated);
  t.only(kTrainingMembers, "training");
  if (auto v = t.integer("epochs", 1)) c.epochs = *v;
  if (auto v = t.integer("batch_size", 1)) c.batch_size = *v;
  if (auto v = t.choice("optimizer", {"adam", "adamw", "sgd"})) c.optimizer = *v;
  if (auto v = t.number("lr", kPositive)) c.lr = *v;
  if (auto v = t.number("weight_decay", kNonNegative)) c.weight_decay = *v;
  if (auto v = t.number("momentum", kFraction)) c.momentum = *v;
  if (auto v = t.choice("schedule", {"constant", "cosine", "step"})) c.schedule = *v;
  if (auto v = t.number("warmup_epochs", kNonNegative)) c.warmup_epochs = *v;
  if (auto v = t.number("min_lr", kNonNegative)) c.min_lr = *v;
  if (auto v = t.integer("step_epochs", 1)) c.step_epochs = *v;
  if (auto v = t.number("gamma", kPositive)) c.gamma = *v;
  if (auto v = t.number("label_smoothing", kFraction)) c.label_smoothing = *v;
  if (auto v = t.number("clip_grad_norm", kNonNegative)) c.clip_grad_norm = *v;
  if (auto v = t.integer("seed", 0)) c.seed = static_cast<uint64_t>(*v);
}

// The checks across training members (and data.train), once every value is known.
void check_training(const EngineTrialConfig& c, const std::string& training_path) {
  if (c.batch_size > c.train) {
    fail(training_path + ".batch_size", std::to_string(c.batch_size) +
                                            " is larger than the training split (data.train " +
                                            std::to_string(c.train) + ")");
  }
  if (c.schedule == "cosine" && c.min_lr > c.lr) {
    fail(training_path + ".min_lr", "must be <= lr (" + nlohmann::json(c.lr).dump() + ")");
  }
  if (c.schedule == "cosine" && c.warmup_epochs >= static_cast<double>(c.epochs)) {
    fail(training_path + ".warmup_epochs", "must be < epochs (" + std::to_string(c.epochs) + ")");
  }
}

// The members under data and training, and the model; `templated`: placeholders stay unchecked.
EngineTrialConfig read_config(const nlohmann::json& root, const EngineJobSpec& spec,
                              const std::string& where, bool templated) {
  EngineTrialConfig c;
  const DatasetInfo& info = engine::find_dataset(spec.dataset, where + ".data.dataset");
  c.model_json = read_model(root, info, where, templated);
  read_split_sizes(root, spec, info, where, templated, c);
  const std::string training_path = where + ".training";
  read_training(root, training_path, templated, c);
  if (!templated) check_training(c, training_path);
  return c;
}

// --- The job's own members ----------------------------------------------------------------------

// An integer member in [1, high] that cannot be a placeholder.
std::optional<int> bounded_integer(const MemberReader& top, const std::string& key, int64_t high,
                                   const std::string& where) {
  auto v = top.integer(key, 1, false);
  if (!v) return std::nullopt;
  if (*v > high) {
    fail(where + "." + key,
         "expected an integer in [1, " + std::to_string(high) + "], got " + std::to_string(*v));
  }
  return static_cast<int>(*v);
}

// threads, latency_batch, backend, precision and convolution.
void read_compute(const MemberReader& top, const std::string& where, EngineJobSpec& spec) {
  if (auto v = bounded_integer(top, "threads", 1024, where)) spec.threads = *v;
  if (auto v = bounded_integer(top, "latency_batch", 65536, where)) spec.latency_batch = *v;
  if (auto v = top.choice("backend", {"cpu", "cuda"}, false)) spec.backend = *v;
  if (auto v = top.choice("precision", {"fp32", "bf16"}, false)) spec.precision = *v;
  if (auto v = top.choice("convolution", {"gemm", "cudnn"}, false)) spec.convolution = *v;
  if (spec.convolution == "cudnn" && (spec.backend != "cuda" || spec.precision != "fp32")) {
    fail(where + ".convolution",
         "\"cudnn\" needs \"backend\": \"cuda\" and \"precision\": \"fp32\"");
  }
}

// ranks, nodes and collective_timeout_s.
void read_parallelism(const nlohmann::json& root, const MemberReader& top, const std::string& where,
                      EngineJobSpec& spec) {
  if (auto v = bounded_integer(top, "ranks", 256, where)) spec.ranks = *v;
  if (auto v = top.integer("nodes", 1, false)) {
    if (*v > 64 || spec.ranks % *v != 0) {
      fail(where + ".nodes", "expected an integer in [1, 64] that divides ranks (" +
                                 std::to_string(spec.ranks) + "), got " + std::to_string(*v));
    }
    spec.nodes = static_cast<int>(*v);
  }
  if (root.contains("collective_timeout_s") &&
      engine::placeholder_name(root["collective_timeout_s"])) {
    fail(where + ".collective_timeout_s",
         "cannot be a placeholder (" + root["collective_timeout_s"].dump() + ")");
  }
  if (auto v = top.number("collective_timeout_s",
                          NumberRange{.low = 0, .high = 86400, .low_open = true})) {
    spec.collective_timeout_s = *v;
  }
}

// artifacts_dir and objective_metric (required).
void read_outputs(const MemberReader& top, const std::string& where, EngineJobSpec& spec) {
  if (auto v = top.string("artifacts_dir")) spec.artifacts_dir = *v;
  auto objective = top.choice("objective_metric", kObjectives, false);
  if (!objective) {
    fail(where + ".objective_metric", "missing (one of " + choice_list(kObjectives) + ")");
  }
  spec.objective_metric = *objective;
  spec.maximize = spec.objective_metric.ends_with("_accuracy");
}

// data.dataset (required) and data.dir; the other data members are the trial's.
void read_data_source(const nlohmann::json& root, const std::string& where, EngineJobSpec& spec) {
  const std::string data_path = where + ".data";
  MemberReader data(object_member(root, "data", data_path, true), data_path, true);
  data.only(kDataMembers, "data");
  auto dataset = data.string("dataset");
  if (!dataset) fail(data_path + ".dataset", "missing (one of " + engine::known_datasets() + ")");
  spec.dataset = engine::find_dataset(*dataset, data_path + ".dataset").name;
  if (auto v = data.string("dir")) spec.data_dir = *v;
}

}  // namespace

EngineJobSpec parse_engine_job(std::string_view json, const std::string& where) {
  nlohmann::json root = job_json::parse_object(json, where);
  MemberReader top(root, where, true);
  top.only(kRootMembers, "an engine job");
  if (auto kind = top.string("kind"); !kind || *kind != "engine") {
    fail(where + ".kind", kind ? "expected \"engine\", got \"" + *kind + "\"" : "missing");
  }
  EngineJobSpec spec;
  read_compute(top, where, spec);
  read_parallelism(root, top, where, spec);
  read_outputs(top, where, spec);
  read_data_source(root, where, spec);
  read_config(root, spec, where, /*templated=*/true);
  spec.json = root.dump();
  return spec;
}

EngineTrialConfig resolve_engine_job(const EngineJobSpec& spec, const Params& params,
                                     const std::string& where) {
  const nlohmann::json root =
      nlohmann::json::parse(substitute_engine_params(spec.json, params, where));
  return read_config(root, spec, where, /*templated=*/false);
}

void check_engine_model(const EngineJobSpec& spec, const Params& params, const std::string& where) {
  const nlohmann::json root = job_json::parse_object(spec.json, where);
  const std::string model_path = where + ".model";
  const nlohmann::json model =
      engine::substitute(object_member(root, "model", model_path, true), model_path, params);
  check_model_fits_data(parse_model(model, model_path),
                        engine::find_dataset(spec.dataset, where + ".data.dataset"), model_path);
}

}  // namespace tuner
