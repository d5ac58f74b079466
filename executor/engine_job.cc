#include "executor/engine_job.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "executor/argv_template.h"
#include "executor/job_json.h"
#include "executor/node_store.h"
#include "executor/tensorboard_events.h"
#include "training/backends/cpu/cpu_backend.h"
#include "training/backends/cuda/cuda_backend.h"
#include "training/checkpoint.h"
#include "training/data/dataset.h"
#include "training/data/fashion_mnist.h"
#include "training/data/idx.h"
#include "training/distributed/communicator.h"
#include "training/distributed/gloo_communicator.h"
#include "training/distributed/nccl_communicator.h"
#include "training/model_spec.h"
#include "training/optim/adam.h"
#include "training/optim/lr_schedule.h"
#include "training/optim/sgd.h"
#include "training/trainer.h"
#include "trials/error.h"
#include "trials/json_reader.h"

namespace tuner {

std::optional<std::string> engine_placeholder(std::string_view text) {
  if (text.size() < 3 || text.front() != '{' || text.back() != '}') return std::nullopt;
  std::string name(text.substr(1, text.size() - 2));
  if (name.find_first_of("{}") != std::string::npos) return std::nullopt;
  return name;
}

namespace {

namespace fs = std::filesystem;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kHistoryVersion = 1;

using job_json::fail;

std::string join(const std::vector<std::string_view>& names) {
  std::string out;
  for (std::string_view n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

// --- Placeholders -------------------------------------------------------------------------------

std::optional<std::string> placeholder_name(const nlohmann::json& v) {
  return v.is_string() ? engine_placeholder(v.get_ref<const std::string&>()) : std::nullopt;
}

bool has_placeholder(const nlohmann::json& v) {
  if (placeholder_name(v)) return true;
  if (v.is_structured()) {
    for (const nlohmann::json& child : v) {
      if (has_placeholder(child)) return true;
    }
  }
  return false;
}

nlohmann::json param_json(const ParamValue& value) {
  return std::visit([](const auto& x) { return nlohmann::json(x); }, value);
}

// `v` with every placeholder replaced by its parameter.
nlohmann::json substitute(const nlohmann::json& v, const std::string& path, const Params& params) {
  if (auto name = placeholder_name(v)) {
    auto it = params.find(*name);
    if (it == params.end()) {
      fail(path, v.dump() + ": the trial has no parameter '" + *name + "'");
    }
    return param_json(it->second);
  }
  if (v.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, child] : v.items())
      out[key] = substitute(child, path + "." + key, params);
    return out;
  }
  if (v.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < v.size(); ++i) {
      out.push_back(substitute(v[i], path + "[" + std::to_string(i) + "]", params));
    }
    return out;
  }
  return v;
}

// --- Typed values -------------------------------------------------------------------------------

// Reads one member of `object` that may be a placeholder. Absent: nullopt (the caller keeps its
// default). A placeholder while `templated` (no trial yet): nullopt too, its type unknown.
class Reader {
 public:
  Reader(const nlohmann::json& object, std::string path, bool templated)
      : object_(object), path_(std::move(path)), templated_(templated) {}

  // Refuses members not in `known`.
  void only(const std::vector<std::string_view>& known, std::string_view what) const {
    for (const auto& [key, value] : object_.items()) {
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        fail(path_ + "." + key,
             "unknown member (" + std::string(what) + " has " + join(known) + ")");
      }
    }
  }

  std::optional<int64_t> integer(const std::string& key, int64_t min,
                                 bool placeholder_ok = true) const {
    const nlohmann::json* v = get(key, placeholder_ok);
    if (!v) return std::nullopt;
    return read_integer(Json(*v), path_ + "." + key, min);
  }

  // A finite number in `range`.
  std::optional<double> number(const std::string& key, const NumberRange& range) const {
    const nlohmann::json* v = get(key, true);
    if (!v) return std::nullopt;
    return read_number(Json(*v), path_ + "." + key, range);
  }

  std::optional<std::string> choice(const std::string& key, const std::vector<std::string>& choices,
                                    bool placeholder_ok = true) const {
    const nlohmann::json* v = get(key, placeholder_ok);
    if (!v) return std::nullopt;
    return choices[read_choice(Json(*v), path_ + "." + key, choices)];
  }

  std::optional<std::string> string(const std::string& key) const {
    const nlohmann::json* v = get(key, false);
    if (!v) return std::nullopt;
    return read_string(Json(*v), path_ + "." + key);
  }

 private:
  const nlohmann::json* get(const std::string& key, bool placeholder_ok) const {
    auto it = object_.find(key);
    if (it == object_.end()) return nullptr;
    if (placeholder_name(*it)) {
      if (!placeholder_ok) fail(path_ + "." + key, "cannot be a placeholder (" + it->dump() + ")");
      if (templated_) return nullptr;
    }
    return &*it;
  }

  const nlohmann::json& object_;
  const std::string path_;
  const bool templated_;
};

const std::vector<std::string_view> kRootMembers = {
    "kind",          "model",     "data",        "training", "threads",
    "backend",       "precision", "convolution", "ranks",    "nodes",
    "collective_timeout_s", "latency_batch", "artifacts_dir", "objective_metric",
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

// A dataset the engine can load. Sizes are -1, the sample shape empty and the classes 0 where
// only loading tells (a CSV file, later).
struct DatasetInfo {
  std::string_view name;
  int64_t train_size;  // images in the training file: train + validation come from it
  int64_t test_size;   // images in the test file
  training::Shape sample;  // one sample's shape, the model's input
  int32_t classes;         // the labels, the model's output [classes]
  // The files' values and the loader's scaling of them (EngineInputPipeline): uint8 pixels
  // divided by 255 (training/data/idx.h).
  bool uint8;
  float divisor;
};
const DatasetInfo kDatasets[] = {
    {"fashion-mnist", 60000, 10000, training::Shape{1, 28, 28}, 10, true, 255.0f}};

std::vector<std::string_view> dataset_names() {
  std::vector<std::string_view> names;
  for (const DatasetInfo& d : kDatasets) names.push_back(d.name);
  return names;
}

const DatasetInfo& dataset_info(const std::string& name, const std::string& path) {
  for (const DatasetInfo& d : kDatasets) {
    if (d.name == name) return d;
  }
  fail(path, "unknown dataset \"" + name + "\" (known: " + join(dataset_names()) + ")");
}

const nlohmann::json& object_member(const nlohmann::json& root, const std::string& key,
                                    const std::string& path, bool required) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  auto it = root.find(key);
  if (it == root.end()) {
    if (required) fail(path, "missing");
    return kEmpty;
  }
  if (!it->is_object()) expect_object(Json(*it), path);
  return *it;
}

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

// The members under data and training, and the model; `templated`: placeholders stay unchecked.
EngineTrialConfig read_config(const nlohmann::json& root, const EngineJobSpec& spec,
                              const std::string& where, bool templated) {
  EngineTrialConfig c;
  const std::string model_path = where + ".model";
  const nlohmann::json& model = object_member(root, "model", model_path, true);
  const DatasetInfo& info = dataset_info(spec.dataset, where + ".data.dataset");
  if (!templated || !has_placeholder(model)) {
    const training::ModelSpec parsed = parse_model(model, model_path);
    check_model_fits_data(parsed, info, model_path);
    c.model_json = parsed.json;
  } else if (auto input = model.find("input");
             input != model.end() && !has_placeholder(*input) && info.sample.rank() > 0) {
    // The placeholders are elsewhere: a concrete input is checked against the data now.
    nlohmann::json probe = model;
    probe["layers"] = nlohmann::json::array({nlohmann::json{{"type", "flatten"}}});
    const training::ModelSpec parsed = parse_model(probe, model_path);
    if (!(parsed.input == info.sample)) check_model_fits_data(parsed, info, model_path);
  }

  const std::string data_path = where + ".data";
  Reader data(object_member(root, "data", data_path, true), data_path, templated);
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

  const std::string training_path = where + ".training";
  Reader t(object_member(root, "training", training_path, false), training_path, templated);
  t.only(kTrainingMembers, "training");
  if (auto v = t.integer("epochs", 1)) c.epochs = *v;
  if (auto v = t.integer("batch_size", 1)) c.batch_size = *v;
  if (auto v = t.choice("optimizer", {"adam", "adamw", "sgd"})) c.optimizer = *v;
  if (auto v = t.number("lr", kPositive)) c.lr = *v;
  if (auto v = t.number("weight_decay", kNonNegative)) {
    c.weight_decay = *v;
  }
  if (auto v = t.number("momentum", kFraction)) {
    c.momentum = *v;
  }
  if (auto v = t.choice("schedule", {"constant", "cosine", "step"})) c.schedule = *v;
  if (auto v = t.number("warmup_epochs", kNonNegative)) {
    c.warmup_epochs = *v;
  }
  if (auto v = t.number("min_lr", kNonNegative)) c.min_lr = *v;
  if (auto v = t.integer("step_epochs", 1)) c.step_epochs = *v;
  if (auto v = t.number("gamma", kPositive)) c.gamma = *v;
  if (auto v = t.number("label_smoothing", kFraction)) {
    c.label_smoothing = *v;
  }
  if (auto v = t.number("clip_grad_norm", kNonNegative)) {
    c.clip_grad_norm = *v;
  }
  if (auto v = t.integer("seed", 0)) c.seed = static_cast<uint64_t>(*v);
  if (!templated) {
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
  return c;
}

// --- Files --------------------------------------------------------------------------------------

// Writes `text` to `path` atomically (a temporary file beside it, then rename).
void write_file_atomically(const std::string& path, const std::string& text) {
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw Error(ErrorCode::kUnavailable, tmp + ": cannot write");
  }
  fs::rename(tmp, path, ec);
  if (ec) throw Error(ErrorCode::kUnavailable, path + ": cannot write: " + ec.message());
}

nlohmann::json metrics_json(const Metrics& metrics) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : metrics)
    out[name] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json();
  return out;  // NaN and the infinities become null
}

Metrics metrics_from_json(const nlohmann::json& json) {
  Metrics out;
  for (const auto& [name, value] : json.items()) {
    out[name] = value.is_number() ? value.get<double>() : kNaN;
  }
  return out;
}

// One completed epoch.
struct EpochRecord {
  int64_t epoch = 0;  // 1-based
  Metrics metrics;
  double time = 0;  // when it ended, seconds since the Unix epoch; 0: not recorded
};

// [{"epoch": 1, "time": 1767225600.25, "train_loss": ...}, ...]: the trial's metrics.json and a
// checkpoint's history; MLflow tracking reads the times (tracking/mlflow_sync.h).
nlohmann::json history_json(const std::vector<EpochRecord>& history) {
  nlohmann::json epochs = nlohmann::json::array();
  for (const EpochRecord& r : history) {
    nlohmann::json e = metrics_json(r.metrics);
    e["epoch"] = r.epoch;
    if (r.time > 0) e["time"] = r.time;
    epochs.push_back(e);
  }
  return epochs;
}

std::string history_path(const std::string& checkpoint_path) {
  return checkpoint_path + ".history.json";
}

// The epochs' metrics saved beside a checkpoint, up to epoch `last` (the checkpoint's). A missing
// or unreadable file gives fewer epochs, which only narrows the best-epoch choice.
std::vector<EpochRecord> read_history(const std::string& path, int64_t last) {
  std::vector<EpochRecord> history;
  std::ifstream in(path);
  if (!in) return history;
  try {
    nlohmann::json json = nlohmann::json::parse(in);
    if (json.value("version", 0) != kHistoryVersion) return history;
    for (nlohmann::json epoch : json.at("epochs")) {
      const int64_t number = epoch.at("epoch").get<int64_t>();
      if (number > last) break;
      epoch.erase("epoch");
      const double time =
          epoch.contains("time") && epoch["time"].is_number() ? epoch["time"].get<double>() : 0.0;
      epoch.erase("time");
      history.push_back({number, metrics_from_json(epoch), time});
    }
  } catch (const nlohmann::json::exception&) {
    history.clear();
  }
  return history;
}

// --- Training -----------------------------------------------------------------------------------

struct Splits {
  training::Dataset train, validation, test;
};

Splits load_fashion_mnist(const std::string& dir_in, const EngineTrialConfig& c,
                          const std::string& path) {
  std::string dir = dir_in.empty() ? training::fashion_mnist_dir() : dir_in;
  if (dir.back() != '/') dir += '/';
  auto file = [&](const char* name) {
    std::string f = dir + name;
    if (!fs::exists(f)) {
      throw Error(ErrorCode::kNotFound,
                  path + ": " + f +
                      " does not exist (install Debian's dataset-fashion-mnist, set "
                      "TUNER_FASHION_MNIST_DIR or the job's data.dir)");
    }
    return f;
  };
  Splits s;
  try {
    training::Dataset all =
        training::read_idx(file("train-images-idx3-ubyte.gz"), file("train-labels-idx1-ubyte.gz"),
                           c.train + c.validation);
    if (all.size() < c.train + c.validation) {
      fail(path, "train + validation is " + std::to_string(c.train + c.validation) +
                     " but the training file has " + std::to_string(all.size()) + " images");
    }
    s.train = all.slice(0, c.train);
    s.validation = all.slice(c.train, c.train + c.validation);
    if (c.test > 0) {
      s.test = training::read_idx(file("t10k-images-idx3-ubyte.gz"),
                                  file("t10k-labels-idx1-ubyte.gz"), c.test);
      if (s.test.size() < c.test) {
        fail(path + ".test", std::to_string(c.test) + " is more than the test file's " +
                                 std::to_string(s.test.size()) + " images");
      }
    }
  } catch (const training::DataError& e) {
    throw Error(ErrorCode::kDataLoss, path + ": " + e.what());
  }
  return s;
}

// Loads the splits of the job's dataset, as its loader scales them.
Splits load_raw_data(const EngineJobSpec& spec, const EngineTrialConfig& c,
                     const std::string& where) {
  const std::string path = where + ".data";
  if (spec.dataset == "fashion-mnist") return load_fashion_mnist(spec.data_dir, c, path);
  fail(path + ".dataset",
       "unknown dataset \"" + spec.dataset + "\" (known: " + join(dataset_names()) + ")");
}

// The normalization of every split: one mean and standard deviation over the training split.
training::Normalizer fit_normalizer(const training::Dataset& train) {
  return training::Normalizer::fit(train, training::NormalizeBy::kAll);
}

// Loads the splits of the job's dataset, normalized with the training split's statistics.
Splits load_data(const EngineJobSpec& spec, const EngineTrialConfig& c, const std::string& where) {
  Splits s = load_raw_data(spec, c, where);
  const training::Normalizer norm = fit_normalizer(s.train);
  norm.apply(s.train);
  if (!s.validation.empty()) norm.apply(s.validation);
  if (!s.test.empty()) norm.apply(s.test);
  return s;
}

std::unique_ptr<training::Backend> make_backend(const EngineJobSpec& spec, int gpu,
                                                const std::string& where) {
  if (spec.backend == "cuda") {
    try {
      training::CudaBackendOptions options;
      if (spec.precision == "bf16") options.matmul = training::Precision::kBfloat16;
      if (spec.convolution == "cudnn") options.convolution = training::Convolution::kCudnn;
      return training::make_cuda_backend(gpu, options);
    } catch (const std::exception& e) {
      throw Error(ErrorCode::kUnavailable,
                  where + ".backend: \"cuda\" (device " + std::to_string(gpu) + "): " + e.what());
    }
  }
  const training::Precision matmul =
      spec.precision == "bf16" ? training::Precision::kBfloat16 : training::Precision::kFloat32;
  try {
    return training::make_cpu_backend(spec.threads, matmul);
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kUnavailable, where + ".precision: \"bf16\" on the CPU backend: " +
                                             training::cpu_bf16_unavailable() +
                                             " (use \"fp32\", or \"backend\": \"cuda\")");
  }
}

// The communicator of rank trial.rank of trial.world (null for one rank), made once every rank
// has come (the rendezvous is bounded by the job's collective_timeout_s).
std::unique_ptr<training::Communicator> make_communicator(const EngineJobSpec& spec,
                                                          const EngineTrial& trial,
                                                          training::Backend& backend,
                                                          const std::string& rank_where) {
  if (trial.world == 1) return nullptr;
  const auto timeout = std::chrono::milliseconds(
      static_cast<int64_t>(std::llround(spec.collective_timeout_s * 1000.0)));
  try {
    if (spec.backend == "cuda") {
      auto nccl = std::make_unique<training::NcclCommunicator>(trial.rank, trial.world,
                                                               trial.nccl_id, trial.gpu, timeout);
      nccl->set_producer_stream(training::cuda_stream_of(backend));
      return nccl;
    }
    if (!trial.node_store_dir.empty()) {
      // Ranks on several nodes: addresses travel through the coordinator's store.
      training::GlooOptions options{.timeout = timeout};
      if (!trial.rank_host.empty()) options.hostname = trial.rank_host;
      return std::make_unique<training::GlooCommunicator>(
          trial.rank, trial.world, std::make_shared<NodeStore>(trial.node_store_dir), options);
    }
    return std::make_unique<training::GlooCommunicator>(trial.rank, trial.world,
                                                        fs::path(trial.rendezvous_dir),
                                                        training::GlooOptions{.timeout = timeout});
  } catch (const training::CommunicatorError& e) {
    throw Error(ErrorCode::kUnavailable, rank_where + ": cannot join the other ranks: " + e.what());
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorCode::kInvalidArgument, rank_where + ": " + e.what());
  }
}

// Checks the rank fields of `trial` against the job.
void check_rank(const EngineJobSpec& spec, const EngineTrial& trial, const std::string& where) {
  if (trial.world != spec.ranks) {
    fail(where + ".ranks", "the job has " + std::to_string(spec.ranks) +
                               " rank(s) but this run is one of " + std::to_string(trial.world) +
                               " (`tuner trial` launches the ranks of a job)");
  }
  if (trial.rank < 0 || trial.rank >= trial.world) {
    fail(where + ".ranks", "rank " + std::to_string(trial.rank) + " is not in [0, " +
                               std::to_string(trial.world) + ")");
  }
  if (trial.world > 1 && spec.backend == "cpu" && trial.rendezvous_dir.empty() &&
      trial.node_store_dir.empty()) {
    fail(where + ".ranks",
         "a CPU run of " + std::to_string(trial.world) + " ranks needs a rendezvous directory");
  }
  if (trial.world > 1 && spec.backend == "cuda" && trial.nccl_id.empty()) {
    fail(where + ".ranks", "a CUDA run of " + std::to_string(trial.world) +
                               " ranks needs the NCCL id of rank 0 (TUNER_NCCL_ID)");
  }
}

std::unique_ptr<training::Optimizer> make_optimizer(const EngineTrialConfig& c,
                                                    training::Backend& backend, int64_t size) {
  if (c.optimizer == "sgd") {
    return std::make_unique<training::Sgd>(
        backend, size,
        training::SgdOptions{.momentum = static_cast<float>(c.momentum),
                             .weight_decay = static_cast<float>(c.weight_decay)});
  }
  training::AdamOptions adam;
  adam.weight_decay = static_cast<float>(c.weight_decay);
  adam.decoupled = c.optimizer == "adamw";
  return std::make_unique<training::Adam>(backend, size, adam);
}

std::unique_ptr<training::LrSchedule> make_schedule(const EngineTrialConfig& c) {
  const int64_t steps_per_epoch = (c.train + c.batch_size - 1) / c.batch_size;
  if (c.schedule == "cosine") {
    const int64_t total = c.epochs * steps_per_epoch;
    // warmup_epochs < epochs, but rounding to steps could reach the end.
    const int64_t warmup =
        std::min(total - 1, static_cast<int64_t>(std::llround(c.warmup_epochs * steps_per_epoch)));
    return std::make_unique<training::CosineLr>(c.lr, warmup, total, c.min_lr);
  }
  if (c.schedule == "step") {
    return std::make_unique<training::StepLr>(c.lr, c.step_epochs * steps_per_epoch, c.gamma);
  }
  return std::make_unique<training::ConstantLr>(c.lr);
}

// The process's peak resident set so far, in MiB (getrusage's ru_maxrss, KiB on Linux).
double peak_rss_mb() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return kNaN;
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// The epoch's metrics; `train` is the training split's size (all ranks'), for the throughput.
Metrics epoch_metrics(const training::EpochMetrics& m, int64_t train) {
  return {{"train_loss", m.train_loss},
          {"val_loss", m.val_loss},
          {"val_accuracy", m.val_accuracy},
          {"lr", m.lr},
          {"epoch_seconds", m.seconds},
          {"samples_per_second", m.seconds > 0 ? static_cast<double>(train) / m.seconds : kNaN},
          {"peak_rss_mb", peak_rss_mb()}};
}

// Whether objective value a beats b (NaN never beats anything; anything finite beats NaN).
bool better(double a, double b, bool maximize) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return maximize ? a > b : a < b;
}

// The position of the best epoch in a non-empty history.
double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct InferenceLatency {
  double batch1_ms = 0;      // one forward pass of one sample
  double per_sample_ms = 0;  // one forward pass of a batch, divided by its size
};

// The median wall time of eval-mode forward passes of `batch` samples (zeros: the products do not
// depend on the values), output on the host, in ms: two calls to warm up, then calls until
// kLatencyBudget has passed (at least kMinCalls, at most kMaxCalls).
double median_forward_ms(training::Sequential& model, int64_t batch, std::stop_token stop) {
  constexpr auto kLatencyBudget = std::chrono::milliseconds(60);
  constexpr size_t kMinCalls = 5, kMaxCalls = 1000;
  training::Tensor x(model.input_shape().with_batch(batch));
  std::vector<float> host(static_cast<size_t>(batch * model.output_shape().numel()));
  training::Backend& backend = model.backend();
  auto call = [&] {
    const training::Tensor& y = model.forward(x, training::Mode::kEval);
    backend.download(y.span(), host);
    backend.synchronize();
  };
  call();
  call();
  std::vector<double> times;
  const auto start = std::chrono::steady_clock::now();
  while (times.size() < kMaxCalls && !stop.stop_requested() &&
         (times.size() < kMinCalls || std::chrono::steady_clock::now() - start < kLatencyBudget)) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                        .count());
  }
  if (times.empty()) return std::nan("");
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

// The trained model's inference latency, on a copy of it built for `batch` samples (the
// training model's buffers are sized for its own batch).
InferenceLatency measure_inference_latency(const training::ModelSpec& spec,
                                           training::Sequential& trained, int64_t batch,
                                           training::Backend& backend, std::stop_token stop) {
  std::unique_ptr<training::Sequential> model = training::build_model(spec, batch, backend, /*seed=*/0);
  model->parameters().set_values(trained.parameters().values_to_host());
  model->parameters().set_buffer_values(trained.parameters().buffer_values_to_host());
  InferenceLatency latency;
  latency.batch1_ms = median_forward_ms(*model, 1, stop);
  latency.per_sample_ms = median_forward_ms(*model, batch, stop) / static_cast<double>(batch);
  return latency;
}

size_t best_index(const std::vector<EpochRecord>& history, const EngineJobSpec& spec) {
  size_t best = 0;
  for (size_t i = 1; i < history.size(); ++i) {
    if (better(history[i].metrics.at(spec.objective_metric),
               history[best].metrics.at(spec.objective_metric), spec.maximize)) {
      best = i;
    }
  }
  return best;
}

}  // namespace

// --- Public -------------------------------------------------------------------------------------

std::string substitute_engine_params(std::string_view json, const Params& params,
                                     const std::string& where) {
  nlohmann::json root = job_json::parse_object(json, where);
  if (auto it = root.find("model"); it != root.end()) {
    *it = substitute(*it, where + ".model", params);
  }
  if (auto it = root.find("training"); it != root.end()) {
    *it = substitute(*it, where + ".training", params);
  }
  if (auto it = root.find("data"); it != root.end() && it->is_object()) {
    for (const char* key : {"train", "validation", "test"}) {
      if (auto v = it->find(key); v != it->end()) {
        *v = substitute(*v, where + ".data." + key, params);
      }
    }
  }
  return root.dump();
}

EngineJobSpec parse_engine_job(std::string_view json, const std::string& where) {
  nlohmann::json root = job_json::parse_object(json, where);
  Reader top(root, where, true);
  top.only(kRootMembers, "an engine job");
  EngineJobSpec spec;
  if (auto kind = top.string("kind"); !kind || *kind != "engine") {
    fail(where + ".kind", kind ? "expected \"engine\", got \"" + *kind + "\"" : "missing");
  }
  if (auto v = top.integer("threads", 1, false)) {
    if (*v > 1024) {
      fail(where + ".threads", "expected an integer in [1, 1024], got " + std::to_string(*v));
    }
    spec.threads = static_cast<int>(*v);
  }
  if (auto v = top.integer("latency_batch", 1, false)) {
    if (*v > 65536) {
      fail(where + ".latency_batch", "expected an integer in [1, 65536], got " + std::to_string(*v));
    }
    spec.latency_batch = static_cast<int>(*v);
  }
  if (auto v = top.choice("backend", {"cpu", "cuda"}, false)) spec.backend = *v;
  if (auto v = top.choice("precision", {"fp32", "bf16"}, false)) spec.precision = *v;
  if (auto v = top.choice("convolution", {"gemm", "cudnn"}, false)) spec.convolution = *v;
  if (spec.convolution == "cudnn" && (spec.backend != "cuda" || spec.precision != "fp32")) {
    fail(where + ".convolution",
         "\"cudnn\" needs \"backend\": \"cuda\" and \"precision\": \"fp32\"");
  }
  if (auto v = top.integer("ranks", 1, false)) {
    if (*v > 256) {
      fail(where + ".ranks", "expected an integer in [1, 256], got " + std::to_string(*v));
    }
    spec.ranks = static_cast<int>(*v);
  }
  if (auto v = top.integer("nodes", 1, false)) {
    if (*v > 64 || spec.ranks % *v != 0) {
      fail(where + ".nodes", "expected an integer in [1, 64] that divides ranks (" +
                                 std::to_string(spec.ranks) + "), got " + std::to_string(*v));
    }
    spec.nodes = static_cast<int>(*v);
  }
  if (root.contains("collective_timeout_s") && placeholder_name(root["collective_timeout_s"])) {
    fail(where + ".collective_timeout_s",
         "cannot be a placeholder (" + root["collective_timeout_s"].dump() + ")");
  }
  if (auto v = top.number("collective_timeout_s",
                          NumberRange{.low = 0, .high = 86400, .low_open = true})) {
    spec.collective_timeout_s = *v;
  }
  if (auto v = top.string("artifacts_dir")) spec.artifacts_dir = *v;
  auto objective = top.choice("objective_metric", kObjectives, false);
  if (!objective) {
    fail(where + ".objective_metric", "missing (one of " + choice_list(kObjectives) + ")");
  }
  spec.objective_metric = *objective;
  spec.maximize = spec.objective_metric.ends_with("_accuracy");

  const std::string data_path = where + ".data";
  Reader data(object_member(root, "data", data_path, true), data_path, true);
  data.only(kDataMembers, "data");
  auto dataset = data.string("dataset");
  if (!dataset) fail(data_path + ".dataset", "missing (one of " + join(dataset_names()) + ")");
  spec.dataset = dataset_info(*dataset, data_path + ".dataset").name;
  if (auto v = data.string("dir")) spec.data_dir = *v;

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

EngineInputPipeline engine_input_pipeline(const EngineJobSpec& spec,
                                          const EngineTrialConfig& config) {
  EngineTrialConfig train_only = config;
  train_only.validation = 0;
  train_only.test = 0;
  const Splits s = load_raw_data(spec, train_only, "job");
  const training::Normalizer norm = fit_normalizer(s.train);
  const DatasetInfo& info = dataset_info(spec.dataset, "job.data.dataset");
  EngineInputPipeline p;
  p.dataset = spec.dataset;
  p.uint8 = info.uint8;
  p.divisor = info.divisor;
  p.mean = norm.mean()[0];
  p.stddev = norm.stddev()[0];
  return p;
}

void check_engine_model(const EngineJobSpec& spec, const Params& params, const std::string& where) {
  const nlohmann::json root = job_json::parse_object(spec.json, where);
  const std::string model_path = where + ".model";
  const nlohmann::json model =
      substitute(object_member(root, "model", model_path, true), model_path, params);
  check_model_fits_data(parse_model(model, model_path),
                        dataset_info(spec.dataset, where + ".data.dataset"), model_path);
}

std::optional<std::string> engine_trial_error(std::string_view log_tail) {
  constexpr std::string_view kPrefix = "error: ";
  std::optional<std::string> found;
  size_t at = 0;
  while (at < log_tail.size()) {
    size_t end = log_tail.find('\n', at);
    if (end == std::string_view::npos) end = log_tail.size();
    std::string_view line = log_tail.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.starts_with(kPrefix) && line.size() > kPrefix.size()) {
      found = std::string(line.substr(kPrefix.size()));
    }
    at = end + 1;
  }
  return found;
}

EngineOutcome run_engine_trial(const EngineJobSpec& spec, const EngineTrial& trial,
                               const EngineReportCallback& on_report, std::stop_token stop) {
  const std::string where =
      trial.number >= 0 ? "trial " + std::to_string(trial.number) + ": job" : std::string("job");
  if (!spec.artifacts_dir.empty() && trial.number < 0) {
    fail(where + ".artifacts_dir", "needs the trial's number (TUNER_TRIAL_NUMBER)");
  }
  check_rank(spec, trial, where);
  // Only rank 0 writes files; every rank reads the data and the checkpoint.
  const bool writes = trial.rank == 0;
  const std::string rank_where =
      where + ": rank " + std::to_string(trial.rank) + " of " + std::to_string(trial.world);
  const EngineTrialConfig c = resolve_engine_job(spec, trial.params, where);
  const training::ModelSpec model_spec = training::parse_model_spec(c.model_json);
  const Splits data = load_data(spec, c, where);
  std::unique_ptr<training::Backend> backend = make_backend(spec, trial.gpu, where);
  if (trial.world > 1 && stop.stop_requested()) {
    // The other ranks are being killed: a rendezvous would only wait for its timeout.
    EngineOutcome stopped;
    stopped.end_reason = "interrupted";
    return stopped;
  }
  std::unique_ptr<training::Communicator> comm =
      make_communicator(spec, trial, *backend, rank_where);
  // A collective's failure: an interruption when this rank was told to stop (the others are
  // being killed), else an error naming this rank.
  auto collective_failed = [&](const training::CommunicatorError& e) {
    if (stop.stop_requested()) return;
    throw Error(ErrorCode::kUnavailable, rank_where + ": " + e.what());
  };
  std::unique_ptr<training::Sequential> model;
  std::unique_ptr<training::Optimizer> optimizer;
  std::unique_ptr<training::LrSchedule> schedule;
  std::unique_ptr<training::Trainer> trainer;
  try {
    schedule = make_schedule(c);
    model = training::build_model(model_spec, c.batch_size, *backend, c.seed);
    optimizer =
        make_optimizer(c, *backend, static_cast<int64_t>(model->parameters().values().size()));
    training::TrainerOptions options{.epochs = c.epochs,
                                     .batch_size = c.batch_size,
                                     .seed = c.seed,
                                     .label_smoothing = static_cast<float>(c.label_smoothing),
                                     .clip_grad_norm = c.clip_grad_norm};
    options.stop = stop;
    options.communicator = comm.get();
    trainer = std::make_unique<training::Trainer>(*model, *optimizer, *schedule, data.train,
                                                  data.validation, options);
  } catch (const training::CommunicatorError& e) {
    collective_failed(e);
    EngineOutcome interrupted;
    interrupted.end_reason = "interrupted";
    return interrupted;
  } catch (const std::invalid_argument& e) {
    fail(where, std::string(e.what()) + " (model " + model_spec.input.to_string() + " -> " +
                    model_spec.output.to_string() + ", data " +
                    data.train.sample_shape().to_string() + " with " +
                    std::to_string(data.train.num_classes()) + " classes)");
  }

  EngineOutcome outcome;
  std::vector<EpochRecord> history;
  if (trial.checkpoint_path && fs::exists(*trial.checkpoint_path)) {
    const std::string& path = *trial.checkpoint_path;
    try {
      training::Checkpoint checkpoint = training::load_checkpoint(path);
      if (checkpoint.model_spec != model_spec.json) {
        throw Error(ErrorCode::kFailedPrecondition,
                    path + ": a checkpoint of another model (" + checkpoint.model_spec +
                        "), not this trial's (" + model_spec.json + "); remove it to start over");
      }
      trainer->restore(checkpoint);
    } catch (const training::CheckpointError& e) {
      throw Error(ErrorCode::kDataLoss, e.what());
    }
    outcome.resumed_from = trainer->epoch();
    history = read_history(history_path(path), trainer->epoch());
    // The epochs it continues from are this run's too (a re-run is a new trial): its
    // scheduler sees them, and a stop it answers arrives before more training is done.
    if (on_report) {
      for (const EpochRecord& e : history) on_report(EngineReport{.step = e.epoch, .metrics = e.metrics});
    }
  }

  const fs::path artifacts =
      spec.artifacts_dir.empty() || !writes
          ? fs::path()
          : fs::path(spec.artifacts_dir) / ("trial-" + std::to_string(trial.number));
  // The model's checkpoint as the export reads it (spec, weights, buffers): its size stays.
  const int64_t checkpoint_bytes = training::checkpoint_file_size(
      training::Checkpoint{.model_spec = model_spec.json,
                           .parameters = model->parameters().values_to_host(),
                           .buffers = model->parameters().buffer_values_to_host()});
  auto final_metrics = [&] {
    Metrics out;
    if (history.empty()) return out;
    const size_t best = best_index(history, spec);
    out = history[best].metrics;
    out["best_epoch"] = static_cast<double>(history[best].epoch);
    // The model's figures, for objectives and constraints on them (docs/sweep_file.md).
    out["num_params"] = static_cast<double>(model->parameters().num_parameters());
    out["train_flops_per_sample"] = static_cast<double>(3 * model->forward_flops());
    out["checkpoint_bytes"] = static_cast<double>(checkpoint_bytes);
    out["peak_rss_mb"] = peak_rss_mb();  // the peak of the whole run, not the best epoch's
    return out;
  };
  auto write_metrics_file = [&](const Metrics& final) {
    nlohmann::json params = nlohmann::json::object();
    for (const auto& [name, value] : trial.params) params[name] = param_json(value);
    nlohmann::json doc = {{"version", kHistoryVersion},
                          {"trial", trial.number},
                          {"params", params},
                          {"objective_metric", spec.objective_metric},
                          {"metrics", metrics_json(final)},
                          {"epochs", history_json(history)},
                          {"model", nlohmann::json::parse(model_spec.json)}};
    write_file_atomically((artifacts / "metrics.json").string(), doc.dump(2) + "\n");
  };

  if (!artifacts.empty()) {
    std::error_code ec;
    fs::create_directories(artifacts, ec);
    if (ec) {
      throw Error(ErrorCode::kUnavailable, where + ".artifacts_dir: cannot create " +
                                               artifacts.string() + ": " + ec.message());
    }
  }
  // TensorBoard: the epochs' metrics as scalars in the trial's folder, the study's artifacts_dir
  // being the log dir (`tensorboard --logdir ARTIFACTS_DIR`). A re-run starts its folder with the
  // epochs it resumed from; a run continuing its own folder adds only the new ones.
  std::unique_ptr<TensorBoardWriter> tensorboard;
  if (!artifacts.empty()) {
    bool continues = false;
    for (const auto& entry : fs::directory_iterator(artifacts)) {
      continues |= entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
    }
    tensorboard = std::make_unique<TensorBoardWriter>(artifacts);
    if (!continues) {
      for (const EpochRecord& e : history) {
        tensorboard->add_scalars(e.epoch, e.metrics, wall_seconds());
      }
    }
  }
  // The best epoch's weights (what the artifacts keep), so that the test split measures the model
  // a registry exports. A resumed trial starts from its saved best model when it has one.
  training::Checkpoint best_weights;
  bool have_best = false;
  if (!history.empty() && !artifacts.empty() && fs::exists(artifacts / "model.ckpt")) {
    try {
      best_weights = training::load_checkpoint((artifacts / "model.ckpt").string());
      have_best = best_weights.model_spec == model_spec.json;
    } catch (const training::CheckpointError&) {
      have_best = false;  // the test split then measures the last epoch's model
    }
  }
  outcome.end_reason = "completed";
  // Rank 0's decision, on every rank (a one-float broadcast; backend memory for NCCL).
  training::Tensor decision_scratch;
  if (comm) decision_scratch = backend->allocate(training::Shape{1});
  auto agree = [&](JobDecision decision) {
    if (!comm) return decision;
    float value[1] = {static_cast<float>(static_cast<int>(decision))};
    backend->upload(value, decision_scratch.span());
    comm->broadcast(decision_scratch.span(), 0);
    backend->download(decision_scratch.span(), value);
    return static_cast<JobDecision>(static_cast<int>(value[0]));
  };
  while (trainer->epoch() < c.epochs) {
    training::EpochMetrics m;
    try {
      m = trainer->train_epoch();
    } catch (const training::CommunicatorError& e) {
      collective_failed(e);
      m.interrupted = true;
    }
    if (m.interrupted) {
      outcome.end_reason = "interrupted";
      break;
    }
    history.push_back({m.epoch, epoch_metrics(m, c.train), wall_seconds()});
    if (tensorboard) tensorboard->add_scalars(m.epoch, history.back().metrics, wall_seconds());
    const bool is_best = best_index(history, spec) == history.size() - 1;
    if (is_best && c.test > 0) {
      best_weights.parameters = model->parameters().values_to_host();
      best_weights.buffers = model->parameters().buffer_values_to_host();
      have_best = true;
    }
    try {
      if (!artifacts.empty()) {
        if (is_best) {
          training::save_checkpoint((artifacts / "model.ckpt").string(),
                                    trainer->checkpoint(model_spec.json));
        }
        write_metrics_file(final_metrics());
      }
      if (trial.checkpoint_path && writes) {
        // The history first: a crash between the two leaves a history one epoch ahead, which the
        // resume cuts back to the checkpoint's epoch.
        write_file_atomically(
            history_path(*trial.checkpoint_path),
            nlohmann::json{{"version", kHistoryVersion}, {"epochs", history_json(history)}}.dump());
        training::save_checkpoint(*trial.checkpoint_path, trainer->checkpoint(model_spec.json));
      }
    } catch (const training::CheckpointError& e) {
      throw Error(ErrorCode::kUnavailable, e.what());
    }
    if (!std::isfinite(m.train_loss)) {
      outcome.end_reason = "diverged";
    }
    JobDecision decision = JobDecision::kContinue;
    if (on_report)
      decision = on_report(EngineReport{.step = m.epoch, .metrics = history.back().metrics});
    try {
      decision = agree(decision);
    } catch (const training::CommunicatorError& e) {
      collective_failed(e);
      outcome.end_reason = "interrupted";
      break;
    }
    if (decision != JobDecision::kContinue && outcome.end_reason == "completed") {
      outcome.end_reason = "callback";
    }
    if (outcome.end_reason != "completed") break;
  }
  outcome.epochs_completed = trainer->epoch();
  outcome.final_metrics = final_metrics();
  if (!outcome.final_metrics.empty() && c.test > 0 && outcome.end_reason != "interrupted") {
    if (have_best) {
      model->parameters().set_values(best_weights.parameters);
      model->parameters().set_buffer_values(best_weights.buffers);
    }
    const training::EvalResult test = trainer->evaluate(data.test);
    outcome.final_metrics["test_loss"] = test.loss;
    outcome.final_metrics["test_accuracy"] = test.accuracy;
  }
  if (writes && !outcome.final_metrics.empty() && outcome.end_reason != "interrupted") {
    const InferenceLatency latency =
        measure_inference_latency(model_spec, *model, spec.latency_batch, *backend, stop);
    outcome.final_metrics["latency_ms"] = latency.batch1_ms;
    outcome.final_metrics["latency_ms_per_sample"] = latency.per_sample_ms;
  }
  if (!artifacts.empty() && !outcome.final_metrics.empty())
    write_metrics_file(outcome.final_metrics);
  return outcome;
}

std::vector<int> engine_rank_gpus(const EngineJobSpec& spec, const std::vector<int>& trial_gpus,
                                  const std::string& where) {
  if (spec.backend != "cuda") return {};
  if (spec.ranks == 1) return {trial_gpus.empty() ? 0 : trial_gpus.front()};
  const int node_ranks = spec.ranks / spec.nodes;
  if (static_cast<int>(trial_gpus.size()) != node_ranks) {
    std::string given;
    for (int g : trial_gpus) given += (given.empty() ? "" : ",") + std::to_string(g);
    fail(where + ".ranks", std::to_string(node_ranks) + " CUDA ranks" +
                               (spec.nodes > 1 ? " per node" : std::string()) +
                               " need one GPU each, but the trial was given " +
                               (trial_gpus.empty() ? std::string("none (TUNER_GPUS is not set)")
                                                   : std::to_string(trial_gpus.size()) +
                                                         " (TUNER_GPUS=" + given + ")"));
  }
  return trial_gpus;
}

CommandSpec engine_job_command(const EngineJobSpec& spec, const std::string& tuner_path) {
  CommandSpec command;
  command.argv = {argv_literal(tuner_path), "trial", "--engine-job", argv_literal(spec.json)};
  return command;
}

}  // namespace tuner
