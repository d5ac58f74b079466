#include "executor/engine/job_spec.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "executor/engine/csv_loader.h"
#include "executor/engine/datasets.h"
#include "executor/engine/image_folder_loader.h"
#include "executor/engine/member_reader.h"
#include "executor/engine/model_fit.h"
#include "executor/engine/npy_loader.h"
#include "executor/engine/placeholders.h"
#include "executor/job_json.h"
#include "training/model_spec.h"
#include "trials/json_reader.h"

namespace tuner {

namespace {

using engine::DatasetInfo;
using engine::DataShape;
using engine::MemberReader;
using engine::object_member;
using job_json::fail;

const std::vector<std::string_view> kRootMembers = {
    "kind", "model", "data", "training", "threads", "backend", "precision", "convolution", "ranks",
    "nodes", "collective_timeout_s", "latency_batch", "artifacts_dir", "objective_metric",
    // Read by parse_trial_job (executor/trial_job.h): the executor's time limit and stop grace.
    "timeout_s", "stop_grace_s"};
const std::vector<std::string_view> kDataMembers = {
    "dataset", "format", "dir", "train", "validation", "test", "augment", "normalize", "prefetch"};
const std::vector<std::string_view> kCsvMembers = {
    "format",        "dir",        "path",        "train",     "test",    "delimiter",
    "label",         "columns",    "categorical", "embedding", "missing", "validation_fraction",
    "test_fraction", "split_seed", "task",        "normalize", "prefetch"};
const std::vector<std::string_view> kNpyMembers = {"format",
                                                   "dir",
                                                   "path",
                                                   "x",
                                                   "y",
                                                   "test_x",
                                                   "test_y",
                                                   "validation_fraction",
                                                   "test_fraction",
                                                   "split_seed",
                                                   "task",
                                                   "augment",
                                                   "normalize",
                                                   "prefetch"};
const std::vector<std::string_view> kTrainingMembers = {
    "epochs",       "batch_size",      "optimizer",      "lr",     "weight_decay",
    "momentum",     "schedule",        "warmup_epochs",  "min_lr", "step_epochs",
    "gamma",        "label_smoothing", "clip_grad_norm", "seed",   "init_from",
    "replace_head", "freeze",          "lr_factors"};
const std::vector<std::string> kObjectives = {"train_loss", "val_loss", "val_accuracy",
                                              "val_auc",    "val_rmse", "val_mae"};
const std::vector<std::string> kTasks = {"classification", "binary", "regression"};

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

// Whether the job's model is {"from": "init_from"} (the model of training.init_from's weights),
// checked: "from" says "init_from", nothing else is beside it, and training.init_from is given.
bool read_model_from(const nlohmann::json& root, const std::string& where) {
  const auto model = root.find("model");
  if (model == root.end() || !model->is_object() || !model->contains("from")) return false;
  const std::string path = where + ".model";
  const nlohmann::json& from = (*model)["from"];
  if (!from.is_string() || from.get<std::string>() != "init_from") {
    fail(path + ".from",
         "expected \"init_from\" (the model of training.init_from's weights), got " + from.dump());
  }
  for (const auto& [key, value] : model->items()) {
    if (key != "from") {
      fail(path + "." + key,
           "\"from\": \"init_from\" takes the whole model from "
           "training.init_from's weights: leave out \"" +
               key + "\", or \"from\" to give the model here");
    }
  }
  const auto training = root.find("training");
  if (training == root.end() || !training->is_object() || !training->contains("init_from")) {
    fail(path + ".from",
         "needs training.init_from (the registered model, checkpoint or ONNX file whose model it "
         "takes)");
  }
  return true;
}

// The job's model bound to the data set's shape (model_fit.h) and checked against it; its
// canonical JSON. Empty for a template whose model holds placeholders (a concrete input is still
// checked). A model that still leaves something to data not yet loaded (csv, npy) is checked as
// far as it can be and kept as JSON (a template: empty), for engine::load_data to bind.
std::string read_model(const nlohmann::json& root, const DataShape& data, const std::string& where,
                       bool templated) {
  const std::string model_path = where + ".model";
  const nlohmann::json& model = object_member(root, "model", model_path, true);
  engine::check_model_outs_fit_task(model, data.task, model_path);
  if (!templated || !engine::has_placeholder(model)) {
    const nlohmann::json bound = engine::bind_model(model, data);
    if (engine::model_takes_data(bound)) {
      // The layers are checked on a concrete input, with a stand-in for the classes, and the
      // input against the data's samples when they are known.
      if (bound.contains("input")) {
        const training::ModelSpec parsed = engine::parse_model(
            engine::bind_model(bound, DataShape{.classes = 1, .targets = 1}), model_path);
        engine::check_model_fits_data(parsed, DataShape{.name = data.name, .sample = data.sample},
                                      model_path);
      }
      return templated ? std::string() : bound.dump();
    }
    const training::ModelSpec parsed = engine::parse_model(bound, model_path);
    engine::check_model_fits_data(parsed, data, model_path);
    return parsed.json;
  }
  if (auto input = model.find("input");
      input != model.end() && !engine::has_placeholder(*input) && data.sample.rank() > 0) {
    // The placeholders are elsewhere: a concrete input is checked against the data now.
    nlohmann::json probe = model;
    probe["layers"] = nlohmann::json::array({nlohmann::json{{"type", "flatten"}}});
    const training::ModelSpec parsed = engine::parse_model(probe, model_path);
    if (!(parsed.input == data.sample)) {
      engine::check_model_fits_data(parsed, DataShape{.name = data.name, .sample = data.sample},
                                    model_path);
    }
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
  if (spec.format != "idx") {
    // The splits' sizes are the files': known when they are loaded.
    c.train = c.validation = c.test = 0;
    return;
  }
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

// data.augment into `c`: {"random_crop": {"padding": P}, "flip": F}, P and F possibly
// placeholders. Image data only: csv refuses it (read_data_files), a sample of another shape fails
// at loading.
void read_augment(const nlohmann::json& root, const std::string& where, bool templated,
                  EngineTrialConfig& c) {
  const std::string data_path = where + ".data";
  const nlohmann::json& data = object_member(root, "data", data_path, true);
  if (!data.contains("augment")) return;
  const std::string path = data_path + ".augment";
  const nlohmann::json& augment = object_member(data, "augment", path, true);
  MemberReader a(augment, path, templated);
  a.only({"random_crop", "flip"}, "data.augment");
  if (auto v = a.number("flip", NumberRange{.low = 0, .high = 1})) c.flip = *v;
  if (augment.contains("random_crop")) {
    const std::string crop_path = path + ".random_crop";
    const nlohmann::json& crop = object_member(augment, "random_crop", crop_path, true);
    MemberReader r(crop, crop_path, templated);
    r.only({"padding"}, "data.augment.random_crop");
    if (!crop.contains("padding")) fail(crop_path + ".padding", "missing (pixels, >= 0)");
    if (auto v = r.integer("padding", 0)) {
      if (*v > 16384) {
        fail(crop_path + ".padding",
             "expected an integer in [0, 16384], got " + std::to_string(*v));
      }
      c.crop_padding = *v;
    } else {
      c.crop_padding = 0;  // a placeholder of a template: a crop, its padding not yet known
    }
  }
}

// The list of learning-rate factors at `path`: numbers >= 0, each may be a placeholder (read as
// 1 while the job is a template).
std::vector<double> read_lr_factors(const nlohmann::json& list, const std::string& path,
                                    bool templated) {
  if (!list.is_array()) {
    fail(path,
         "expected a list of numbers >= 0, one per entry of model.layers, got " + list.dump());
  }
  std::vector<double> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string item = path + "[" + std::to_string(i) + "]";
    if (templated && engine::placeholder_name(list[i])) {
      out.push_back(1.0);
      continue;
    }
    out.push_back(read_number(Json(list[i]), item, kNonNegative));
  }
  return out;
}

// training.init_from, replace_head, freeze and lr_factors into `c`.
void read_init_members(const nlohmann::json& training, const MemberReader& t,
                       const std::string& training_path, bool templated, EngineTrialConfig& c) {
  if (auto it = training.find("init_from"); it != training.end()) {
    if (!(templated && engine::placeholder_name(*it))) {
      c.init_from = read_nonempty_string(Json(*it), training_path + ".init_from");
    }
  }
  if (auto it = training.find("replace_head"); it != training.end()) {
    if (!(templated && engine::placeholder_name(*it))) {
      c.replace_head = read_bool(Json(*it), training_path + ".replace_head");
    }
  }
  if (auto v = t.integer("freeze", 0)) c.freeze = *v;
  if (auto it = training.find("lr_factors"); it != training.end()) {
    c.lr_factors = read_lr_factors(*it, training_path + ".lr_factors", templated);
  }
  if (c.replace_head && !training.contains("init_from")) {
    fail(training_path + ".replace_head", "needs init_from (the weights whose head it replaces)");
  }
}

// The members under "training" into `c`, each checked on its own.
void read_training(const nlohmann::json& root, const std::string& training_path, bool templated,
                   EngineTrialConfig& c) {
  const nlohmann::json& training = object_member(root, "training", training_path, false);
  MemberReader t(training, training_path, templated);
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
  read_init_members(training, t, training_path, templated, c);
}

// The checks across training members (and data.train), once every value is known.
void check_training(const EngineTrialConfig& c, const std::string& training_path) {
  if (c.train > 0 && c.batch_size > c.train) {
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

// freeze and lr_factors against the number of entries of the model's layers list (when the
// model is concrete).
void check_layer_factors(const nlohmann::json& root, const EngineTrialConfig& c,
                         const std::string& training_path) {
  const auto model = root.find("model");
  if (model == root.end() || !model->is_object()) return;
  const auto layers = model->find("layers");
  if (layers == model->end() || !layers->is_array()) return;
  const auto n = static_cast<int64_t>(layers->size());
  if (c.freeze > n) {
    fail(training_path + ".freeze", std::to_string(c.freeze) + " is more than the " +
                                        std::to_string(n) + " entries of model.layers");
  }
  if (static_cast<int64_t>(c.lr_factors.size()) > n) {
    fail(training_path + ".lr_factors",
         std::to_string(c.lr_factors.size()) + " factors for the " + std::to_string(n) +
             " entries of model.layers (one per entry, from layers[0])");
  }
}

// What the model must fit, as far as it is known before loading: the catalogue's data set; an
// image folder's samples, [C, H, W] of data.color and data.size, whatever its files; what csv or
// npy files told read_engine_data_shape.
DataShape data_shape_before_loading(const EngineJobSpec& spec, const DatasetInfo& info) {
  if (spec.files_shape) {
    DataShape shape = *spec.files_shape;
    shape.task = spec.task;
    return shape;
  }
  DataShape shape = engine::catalogue_shape(info);
  shape.task = spec.task;
  const EngineDataFiles& f = spec.files;
  if (spec.format == "image_folder" && f.image_height > 0 && f.image_width > 0) {
    std::filesystem::path folder(f.train.empty() ? f.path : f.train);
    if (folder.filename().empty()) folder = folder.parent_path();
    shape.name = folder.filename().string();
    shape.sample = training::Shape{f.grayscale ? 1 : 3, f.image_height, f.image_width};
  }
  return shape;
}

// The members under data and training, and the model; `templated`: placeholders stay unchecked.
EngineTrialConfig read_config(const nlohmann::json& root, const EngineJobSpec& spec,
                              const std::string& where, bool templated) {
  EngineTrialConfig c;
  const DatasetInfo& info = engine::find_dataset(spec.dataset, where + ".data.dataset");
  if (!spec.model_from_init) {
    c.model_json = read_model(root, data_shape_before_loading(spec, info), where, templated);
  }
  read_split_sizes(root, spec, info, where, templated, c);
  read_augment(root, where, templated, c);
  const std::string training_path = where + ".training";
  read_training(root, training_path, templated, c);
  check_layer_factors(root, c, training_path);
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
  spec.maximize = spec.objective_metric == "val_accuracy" || spec.objective_metric == "val_auc";
}

// The objective metric must be one the task reports.
void check_objective_fits_task(const EngineJobSpec& spec, const std::string& where) {
  const std::string& m = spec.objective_metric;
  const training::Task task = spec.task;
  std::string fits;
  if (task == training::Task::kRegression && (m == "val_accuracy" || m == "val_auc")) {
    fits = "train_loss, val_loss, val_rmse and val_mae";
  } else if (task != training::Task::kRegression && (m == "val_rmse" || m == "val_mae")) {
    fits = task == training::Task::kBinary ? "train_loss, val_loss, val_accuracy and val_auc"
                                           : "train_loss, val_loss and val_accuracy";
  } else if (task == training::Task::kClassification && m == "val_auc") {
    fits = "train_loss, val_loss and val_accuracy; val_auc is data.task \"binary\"'s";
  }
  if (!fits.empty()) {
    fail(where + ".objective_metric", m + " is not a metric of data.task \"" +
                                          std::string(training::task_name(task)) +
                                          "\" (it reports " + fits + ")");
  }
}

// A list of strings (column names) at `path`; never placeholders.
std::vector<std::string> string_list(const nlohmann::json& data, const char* key,
                                     const std::string& path) {
  std::vector<std::string> out;
  auto it = data.find(key);
  if (it == data.end()) return out;
  if (!it->is_array()) fail(path, "expected a list of column names, got " + it->dump());
  for (size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& e = (*it)[i];
    if (!e.is_string() || engine::placeholder_name(e)) {
      fail(path + "[" + std::to_string(i) + "]", "expected a column name, got " + e.dump());
    }
    out.push_back(e.get<std::string>());
  }
  return out;
}

// The members of a csv or npy data object into spec.files.
void read_data_files(const nlohmann::json& object, const MemberReader& data,
                     const std::string& data_path, EngineJobSpec& spec) {
  EngineDataFiles& f = spec.files;
  if (auto v = data.string("path")) f.path = *v;
  constexpr NumberRange kSplitFraction{.low = 0, .high = 1, .high_open = true};
  if (auto v = data.number("validation_fraction", kSplitFraction)) f.validation_fraction = *v;
  if (auto v = data.number("test_fraction", kSplitFraction)) f.test_fraction = *v;
  if (auto v = data.integer("split_seed", 0, false)) f.split_seed = static_cast<uint64_t>(*v);
  if (object.contains("validation_fraction") &&
      engine::placeholder_name(object["validation_fraction"])) {
    fail(data_path + ".validation_fraction", "cannot be a placeholder");
  }
  if (object.contains("test_fraction") && engine::placeholder_name(object["test_fraction"])) {
    fail(data_path + ".test_fraction", "cannot be a placeholder");
  }
  if (auto v = data.choice("task", kTasks, false)) spec.task = *training::parse_task(*v);
  if (spec.format == "image_folder") {
    engine::read_image_folder_members(object, data, data_path, spec);
  } else if (spec.format == "csv") {
    if (object.contains("augment")) {
      fail(data_path + ".augment",
           "not for data of format csv: augmentation transforms images [C, H, W]");
    }
    data.only(kCsvMembers, "data of format csv");
    if (auto v = data.string("train")) f.train = *v;
    if (auto v = data.string("test")) f.test = *v;
    if (f.path.empty() == f.train.empty()) {
      fail(data_path + ".path", f.path.empty() ? "missing (the CSV file; or \"train\" and \"test\")"
                                               : "give \"path\" or \"train\", not both");
    }
    if (!f.train.empty() && f.test.empty()) {
      fail(data_path + ".test", "missing (the test file beside \"train\"; or one \"path\")");
    }
    if (!f.path.empty() && !f.test.empty()) {
      // A test file beside one path is allowed: path is then the training file.
    }
    if (auto v = data.string("delimiter")) {
      if (v->size() != 1 || *v == "\"" || *v == "\n") {
        fail(data_path + ".delimiter", "expected one character, got \"" + *v + "\"");
      }
      f.delimiter = (*v)[0];
    }
    auto label = data.string("label");
    if (!label) fail(data_path + ".label", "missing (the header name of the label column)");
    f.label = *label;
    f.columns = string_list(object, "columns", data_path + ".columns");
    f.categorical = string_list(object, "categorical", data_path + ".categorical");
    if (object.contains("embedding")) {
      engine::read_csv_embedding(object["embedding"], data_path + ".embedding", f);
    }
    if (auto v = data.choice("missing", {"refuse", "mean"}, false)) f.missing_mean = *v == "mean";
  } else {
    data.only(kNpyMembers, "data of format npy");
    f.x = data.string("x").value_or(f.path.empty() ? "" : "x");
    f.y = data.string("y").value_or(f.path.empty() ? "" : "y");
    if (f.x.empty())
      fail(data_path + ".x", "missing (the features' .npy file; or an .npz \"path\")");
    if (f.y.empty()) fail(data_path + ".y", "missing (the labels' .npy file; or an .npz \"path\")");
    if (auto v = data.string("test_x")) f.test_x = *v;
    if (auto v = data.string("test_y")) f.test_y = *v;
    if (f.test_x.empty() != f.test_y.empty()) {
      fail(data_path + (f.test_x.empty() ? ".test_x" : ".test_y"),
           "missing (test_x and test_y come together)");
    }
  }
  const bool test_file = !f.test.empty() || !f.test_x.empty();
  if (test_file && object.contains("test_fraction")) {
    fail(data_path + ".test_fraction", "not with a test file (the test split is the file)");
  }
  if (spec.objective_metric.starts_with("val_") && f.validation_fraction == 0) {
    fail(
        data_path + ".validation_fraction",
        "must be > 0: the objective metric " + spec.objective_metric + " needs a validation split");
  }
}

// data.format, data.dataset and data.dir, and the files of a csv or npy data set; the other
// data members (fashion-mnist's sizes) are the trial's.
void read_data_source(const nlohmann::json& root, const std::string& where, EngineJobSpec& spec) {
  const std::string data_path = where + ".data";
  const nlohmann::json& object = object_member(root, "data", data_path, true);
  MemberReader data(object, data_path, true);
  if (auto v = data.choice("normalize", {"all", "channel"}, false)) spec.normalize = *v;
  if (auto v = data.integer("prefetch", 0, false)) {
    if (*v > 16)
      fail(data_path + ".prefetch", "expected an integer in [0, 16], got " + std::to_string(*v));
    spec.prefetch = static_cast<int>(*v);
  }
  auto format = data.choice("format", {"idx", "csv", "npy", "image_folder"}, false);
  if (format && *format != "idx") {
    spec.format = *format;
    if (object.contains("dataset")) {
      fail(data_path + ".dataset", "names a catalogued data set (" + engine::known_datasets() +
                                       "), not one of format " + *format + ": leave it out");
    }
    spec.dataset = engine::find_file_format(*format)->name;
    if (auto v = data.string("dir")) spec.data_dir = *v;
    read_data_files(object, data, data_path, spec);
    return;
  }
  data.only(kDataMembers, "data");
  auto dataset = data.string("dataset");
  if (!dataset) {
    fail(data_path + ".dataset", "missing (one of " + engine::known_datasets() +
                                     "; or a \"format\": \"csv\", \"npy\" or \"image_folder\")");
  }
  spec.dataset = engine::find_dataset(*dataset, data_path + ".dataset").name;
  if (engine::find_file_format(spec.dataset)) {
    fail(data_path + ".dataset", "unknown dataset \"" + *dataset +
                                     "\" (known: " + engine::known_datasets() + "; a " + *dataset +
                                     " file is \"format\": \"" + *dataset + "\")");
  }
  if (auto v = data.string("dir")) spec.data_dir = *v;
}

}  // namespace

std::vector<float> EngineTrialConfig::layer_lr_factors() const {
  std::vector<float> factors(std::max<size_t>(lr_factors.size(), static_cast<size_t>(freeze)), 1);
  for (size_t i = 0; i < lr_factors.size(); ++i) factors[i] = static_cast<float>(lr_factors[i]);
  for (int64_t i = 0; i < freeze; ++i) factors[static_cast<size_t>(i)] = 0.0f;
  return factors;
}

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
  check_objective_fits_task(spec, where);
  spec.model_from_init = read_model_from(root, where);
  spec.model_json = read_config(root, spec, where, /*templated=*/true).model_json;
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
  if (spec.model_from_init) return;  // the source's model: check_engine_init_from
  const nlohmann::json root = job_json::parse_object(spec.json, where);
  const std::string model_path = where + ".model";
  check_engine_model_json(
      spec, engine::substitute(object_member(root, "model", model_path, true), model_path, params),
      model_path);
}

void check_engine_model_json(const EngineJobSpec& spec, const nlohmann::json& model,
                             const std::string& model_path) {
  const DataShape data =
      data_shape_before_loading(spec, engine::find_dataset(spec.dataset, model_path));
  engine::check_model_outs_fit_task(model, data.task, model_path);
  const nlohmann::json bound = engine::bind_model(model, data);
  if (engine::model_takes_data(bound)) {
    // Data not yet loaded (csv, npy, image_folder): the layers are checked on a concrete input,
    // and the input against the data's samples when they are known.
    if (bound.contains("input")) {
      const training::ModelSpec parsed = engine::parse_model(
          engine::bind_model(bound, DataShape{.classes = 1, .targets = 1}), model_path);
      engine::check_model_fits_data(parsed, DataShape{.name = data.name, .sample = data.sample},
                                    model_path);
    }
    return;
  }
  engine::check_model_fits_data(engine::parse_model(bound, model_path), data, model_path);
}

bool read_engine_data_shape(EngineJobSpec& spec, const std::string& where) {
  const std::string data_path = where + ".data";
  if (spec.format == "csv") {
    spec.files_shape = engine::read_csv_shape(spec, data_path);
  } else if (spec.format == "npy") {
    spec.files_shape = engine::read_npy_shape(spec, data_path);
  }
  if (!spec.files_shape) return false;
  if (!spec.model_from_init) {
    // As parse_engine_job, now with the files' shape: a model without placeholders in full, a
    // concrete input of one with placeholders (the probes check the rest).
    const nlohmann::json root = job_json::parse_object(spec.json, where);
    spec.model_json = read_config(root, spec, where, /*templated=*/true).model_json;
  }
  return true;
}

}  // namespace tuner
