#include "executor/engine/init_source.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "executor/engine/model_fit.h"
#include "executor/engine/placeholders.h"
#include "executor/job_json.h"
#include "registry/model_reference.h"
#include "registry/registry.h"
#include "training/export/onnx_import.h"
#include "training/init_from.h"
#include "trials/error.h"

namespace tuner::engine {

namespace fs = std::filesystem;
using job_json::fail;

namespace {

// The first bytes of a file (fewer when it is shorter).
std::string file_head(const fs::path& file, size_t n) {
  std::ifstream in(file, std::ios::binary);
  std::string head(n, '\0');
  in.read(head.data(), static_cast<std::streamsize>(n));
  head.resize(static_cast<size_t>(in.gcount()));
  return head;
}

// The engine checkpoint of an MLflow model directory; `name` names it in messages.
fs::path engine_checkpoint_of(const fs::path& dir, const std::string& name,
                              const std::string& path) {
  const fs::path file = dir / "engine" / "model.ckpt";
  if (!fs::is_regular_file(file)) {
    throw Error(ErrorCode::kInvalidArgument,
                path + ": " + name + " holds no engine weights (" + file.string() +
                    " is missing): init_from takes a model the engine trained, an ONNX model, or "
                    "a checkpoint file");
  }
  return file;
}

// "PATH: NAME: WHAT", without WHAT's own "FILE: " when NAME is that file.
std::string source_message(const std::string& path, const std::string& name, const fs::path& file,
                           const std::string& what) {
  const std::string prefix = file.string() + ": ";
  const bool repeated = name == file.string() && what.starts_with(prefix);
  return path + ": " + name + ": " + (repeated ? what.substr(prefix.size()) : what);
}

// The weights of an ONNX file (training/export/onnx_import.h).
training::Checkpoint read_onnx(const fs::path& file, const std::string& name,
                               const std::string& path) {
  try {
    return training::import_onnx_file(file.string());
  } catch (const training::OnnxImportError& e) {
    throw Error(ErrorCode::kInvalidArgument, source_message(path, name, file, e.what()));
  }
}

training::Checkpoint read_checkpoint(const fs::path& file, const std::string& name,
                                     const std::string& path) {
  try {
    return training::load_checkpoint(file.string());
  } catch (const training::CheckpointError& e) {
    throw Error(ErrorCode::kDataLoss, source_message(path, name, file, e.what()));
  }
}

}  // namespace

InitSource read_init_source(const std::string& init_from, const std::string& path) {
  InitSource source{.name = init_from};
  const fs::path given(init_from);
  std::error_code ec;
  if (fs::is_regular_file(given, ec)) {
    if (given.extension() == ".onnx") {
      source.weights = read_onnx(given, init_from, path);
      return source;
    }
    if (file_head(given, 8) != "TUNERCKP") {
      throw Error(ErrorCode::kDataLoss,
                  path + ": " + init_from +
                      ": not a checkpoint of the engine (it does not start with TUNERCKP); "
                      "init_from takes a checkpoint file (a trial's model.ckpt), an .onnx file "
                      "or a registered model REGISTRY/NAME@ALIAS");
    }
    source.weights = read_checkpoint(given, init_from, path);
    return source;
  }
  const registry::ModelReference reference = registry::parse_model_reference(init_from);
  if (!reference.directory.empty()) {
    if (const fs::path onnx = reference.directory / "model.onnx";
        !fs::exists(reference.directory / "engine") && fs::is_regular_file(onnx)) {
      source.name = init_from + " (" + onnx.string() + ")";
      source.weights = read_onnx(onnx, init_from, path);
      return source;
    }
    const fs::path file = engine_checkpoint_of(reference.directory, init_from, path);
    source.name = init_from + " (" + file.string() + ")";
    source.weights = read_checkpoint(file, init_from, path);
    return source;
  }
  if (!registry::Registry::is_registry(reference.registry)) {
    throw Error(ErrorCode::kNotFound,
                path + ": " + init_from + ": no such checkpoint file, and " +
                    reference.registry.string() +
                    " is not a model registry (no tuner-registry.json): init_from takes a "
                    "checkpoint file or a registered model REGISTRY/NAME@ALIAS, "
                    "REGISTRY/NAME/VERSION or REGISTRY/NAME");
  }
  registry::ResolvedVersion version;
  try {
    version = registry::Registry::open(reference.registry, /*create=*/false).resolve(reference.ref);
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + init_from + ": " + e.what());
  }
  if (version.version.user_model == registry::UserModelFormat::kOnnx) {
    // A trial's own ONNX file (a command job's PyTorch model, say): its graph's weights.
    const fs::path file = version.dir / "model.onnx";
    source.name = init_from + " (version " + std::to_string(version.version.version) + ", " +
                  file.string() + ")";
    source.weights = read_onnx(file, init_from, path);
    return source;
  }
  if (version.version.user_model) {
    throw Error(ErrorCode::kInvalidArgument,
                path + ": " + init_from + " is version " + std::to_string(version.version.version) +
                    " of '" + version.model.name +
                    "', an MLflow model a trial's own program saved, not one the engine trained "
                    "or an ONNX file: init_from takes those");
  }
  const fs::path file = engine_checkpoint_of(version.dir, init_from, path);
  source.name = init_from + " (version " + std::to_string(version.version.version) + ", " +
                file.string() + ")";
  source.weights = read_checkpoint(file, init_from, path);
  return source;
}

namespace {

Error init_error(const training::InitFromError& e, const InitSource& source,
                 const std::string& path) {
  std::string message = path + ": " + source.name + ": " + e.what();
  if (e.only_head_differs()) {
    message +=
        "; to train a new last layer for this model's outputs, set training.replace_head "
        "to true";
  }
  return Error(ErrorCode::kInvalidArgument, message);
}

}  // namespace

void check_init_source(const InitSource& source, const training::ModelSpec& spec, bool replace_head,
                       const std::string& path) {
  try {
    training::check_weights_fit(source.weights, spec, {.replace_head = replace_head});
  } catch (const training::InitFromError& e) {
    throw init_error(e, source, path);
  }
}

training::InitFromResult load_init_source(const InitSource& source, const training::ModelSpec& spec,
                                          training::ParameterArena& arena, bool replace_head,
                                          const std::string& path) {
  try {
    return training::load_weights(source.weights, spec, arena, {.replace_head = replace_head});
  } catch (const training::InitFromError& e) {
    throw init_error(e, source, path);
  }
}

nlohmann::json source_model(const InitSource& source, const EngineTrialConfig& config,
                            training::Task task, const std::string& where) {
  const std::string training_path = where + ".training";
  nlohmann::json model = nlohmann::json::parse(source.weights.model_spec, nullptr, false);
  if (!model.is_object() || !model.contains("layers") || !model["layers"].is_array()) {
    throw Error(ErrorCode::kDataLoss, training_path + ".init_from: " + source.name +
                                          ": its model spec is not a model spec's JSON");
  }
  nlohmann::json& layers = model["layers"];
  const auto n = static_cast<int64_t>(layers.size());
  const std::string whose = " entries of the model.layers of " + source.name;
  if (config.freeze > n) {
    fail(training_path + ".freeze",
         std::to_string(config.freeze) + " is more than the " + std::to_string(n) + whose);
  }
  if (static_cast<int64_t>(config.lr_factors.size()) > n) {
    fail(training_path + ".lr_factors", std::to_string(config.lr_factors.size()) +
                                            " factors for the " + std::to_string(n) + whose +
                                            " (one per entry, from layers[0])");
  }
  if (!config.replace_head) return model;
  const training::ModelSpec spec = parse_model(model, training_path + ".init_from: " + source.name);
  const std::vector<training::WeightedLayer> weighted = training::weighted_layers(spec);
  const int64_t head =
      weighted.empty() ? -1 : training::top_level_layer_index(weighted.back().path);
  if (head < 0 || !layers[static_cast<size_t>(head)].contains("out")) {
    fail(
        training_path + ".replace_head",
        source.name + ": " +
            (weighted.empty() ? std::string("the model has no layer with weights")
                              : "its last layer with weights, the " + weighted.back().describe() +
                                    ", has no \"out\" to give the data's " +
                                    (task == training::Task::kRegression ? "targets" : "classes")) +
            ": replace_head with \"model\": {\"from\": \"init_from\"} needs a model that "
            "ends with a linear or conv2d layer; give the model in full instead");
  }
  layers[static_cast<size_t>(head)]["out"] =
      task == training::Task::kRegression ? "targets" : "classes";
  return model;
}

void check_engine_init_from(const EngineJobSpec& spec, const std::string& where) {
  const nlohmann::json root = nlohmann::json::parse(spec.json);
  const auto training = root.find("training");
  if (training == root.end() || !training->is_object()) return;
  const auto init_from = training->find("init_from");
  if (init_from == training->end() || !init_from->is_string() || placeholder_name(*init_from)) {
    return;  // absent, or a placeholder: read when a trial starts
  }
  const std::string path = where + ".training.init_from";
  const InitSource source = read_init_source(init_from->get<std::string>(), path);
  bool replace_head = false;
  if (const auto r = training->find("replace_head"); r != training->end()) {
    if (!r->is_boolean()) return;  // a placeholder: checked when a trial starts
    replace_head = r->get<bool>();
  }
  if (spec.model_from_init) {
    // The source's own model: its weights fit it; it must fit the data.
    EngineTrialConfig c;
    c.replace_head = replace_head;
    if (const auto f = training->find("freeze"); f != training->end() && f->is_number_integer()) {
      c.freeze = f->get<int64_t>();
    }
    if (const auto l = training->find("lr_factors"); l != training->end() && l->is_array()) {
      c.lr_factors.assign(l->size(), 1.0);
    }
    const nlohmann::json model = source_model(source, c, spec.task, where);
    try {
      check_engine_model_json(spec, model, where + ".model");
    } catch (const Error& e) {
      // A new head is the remedy for outputs of another number, not for another input.
      const std::string what = e.what();
      const bool head = !replace_head && what.find(".model.input:") == std::string::npos;
      throw Error(e.code(), what + " (the model is training.init_from's, " + source.name +
                                (head ? "; to train a new last layer for the data's classes, set "
                                        "training.replace_head to true)"
                                      : ")"));
    }
    return;
  }
  training::ModelSpec model;
  if (!spec.model_json.empty()) {
    model = training::parse_model_spec(spec.model_json);
  } else {
    const auto json = root.find("model");
    if (json == root.end() || has_placeholder(*json)) return;  // known when a trial starts
    // The model leaves shapes to the data's files, read when a trial starts: the source's input
    // and outputs stand in for them, so that every layer but those is checked now.
    DataShape stand_in;
    try {
      const training::ModelSpec source_spec = training::parse_model_spec(source.weights.model_spec);
      const int64_t outputs = source_spec.output.rank() == 1 ? source_spec.output[0] : 1;
      stand_in = {.sample = source_spec.input,
                  .classes = static_cast<int32_t>(outputs),
                  .targets = outputs};
      model = parse_model(bind_model(*json, stand_in), where + ".model");
    } catch (const std::exception&) {
      return;  // the trial's own checks name what does not fit
    }
  }
  check_init_source(source, model, replace_head, path);
}

}  // namespace tuner::engine
