#include "registry/mlflow_model.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "registry/file_util.h"
#include "registry/onnx_flavor.h"
#include "registry/user_model.h"
#include "training/backends/cpu/cpu_backend.h"
#include "training/export/onnx_export.h"
#include "trials/error.h"
#include "trials/json.h"
#include "trials/json_depth.h"
#include "util/files.h"

#ifndef TUNER_ONNX_VERSION
#define TUNER_ONNX_VERSION "1.12.0"
#endif

namespace tuner::registry {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kServeBatch = 256;

std::string random_uuid_hex() {
  std::ifstream in("/dev/urandom", std::ios::binary);
  unsigned char bytes[16] = {};
  in.read(reinterpret_cast<char*>(bytes), sizeof(bytes));
  if (!in) throw Error(ErrorCode::kUnavailable, "cannot read /dev/urandom for a model UUID");
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);  // version 4
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  std::tm utc{};
  gmtime_r(&t, &utc);
  char buffer[64];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%d %H:%M:%S", &utc);
  char out[96];
  std::snprintf(out, sizeof(out), "%s.%06lld", buffer, static_cast<long long>(micros));
  return out;
}

// The numpy dtype of a raw input.
const char* dtype_name(RawInput input) { return input == RawInput::kUint8 ? "uint8" : "float32"; }

// MLflow's tensor spec of a tensor [-1, sample...] of `dtype`, as the JSON text the MLmodel holds.
std::string tensor_spec(const training::Shape& sample, const char* dtype = "float32") {
  Json shape = Json::array({-1});
  for (int64_t d : sample.dims()) shape.push_back(d);
  Json spec =
      Json::array({{{"type", "tensor"}, {"tensor-spec", {{"dtype", dtype}, {"shape", shape}}}}});
  return spec.dump();
}

bool normalizes(const Preprocessing& p) { return p.mean && p.stddev; }

}  // namespace

int format_version(const Preprocessing& p) {
  if (!p.feature_mean.empty() && !p.table) return 4;
  return p.table || !p.feature_mean.empty() || !p.class_labels.empty() || p.regression ? 3 : 2;
}

namespace {

// The graph's input nodes that compute `p` (none when it changes nothing).
training::OnnxInputTransform onnx_input_transform(const Preprocessing& p) {
  training::OnnxInputTransform t;
  t.uint8 = p.input == RawInput::kUint8;
  t.divisor = p.divisor;
  if (normalizes(p)) {
    t.mean = *p.mean;
    t.stddev = *p.stddev;
  }
  t.feature_mean = p.feature_mean;
  t.feature_stddev = p.feature_stddev;
  return t;
}

// What the signature's input is, for people (the MLmodel's metadata "input_description").
std::string input_description(const Preprocessing& p, const training::ModelSpec& spec) {
  std::string shape = "[N";
  for (int64_t d : spec.input.dims()) shape += ", " + std::to_string(d);
  shape += "]";
  const std::string of = p.dataset.empty() ? std::string() : p.dataset + "'s ";
  if (p.table) {
    std::string text = std::string(dtype_name(p.input)) + " " + shape +
                       ": the encoded features of a row of the table (metadata "
                       "preprocessing.table: each column in order, a numeric one as its value, a "
                       "categorical one as its one-hot slots)";
    if (!p.feature_mean.empty()) {
      text +=
          "; model.onnx normalizes each feature itself (preprocessing.normalize): pass the "
          "encoded values, not normalized ones";
    }
    if (!p.class_labels.empty()) text += "; output i is class preprocessing.labels[i]";
    if (p.regression) text += "; output i is the predicted value of target i (the label's units)";
    return text;
  }
  std::string text = std::string(dtype_name(p.input)) + " " + shape + ": ";
  if (p.image) {
    text += std::string("images ") + (p.image->grayscale ? "in grayscale" : "in RGB") +
            ", their pixel values in [0, 1], resized to " + std::to_string(p.image->height) +
            " x " + std::to_string(p.image->width) + " (metadata preprocessing.image)";
  } else {
    text += p.input == RawInput::kUint8 ? of + "own pixel values 0..255, as its files hold them"
                                        : of + "raw values";
  }
  std::vector<std::string> steps;
  if (p.divisor != 1.0f) steps.push_back("divides them by " + Json(p.divisor).dump());
  if (!p.feature_mean.empty()) {
    steps.push_back("normalizes each channel (mean " + Json(p.feature_mean).dump() + ", stddev " +
                    Json(p.feature_stddev).dump() + ")");
  } else if (normalizes(p)) {
    steps.push_back("normalizes them (mean " + Json(*p.mean).dump() + ", stddev " +
                    Json(*p.stddev).dump() + ")");
  }
  if (steps.empty()) return text + "; the model takes them as they are";
  text += "; model.onnx ";
  for (size_t i = 0; i < steps.size(); ++i) text += (i ? " and " : "") + steps[i];
  return text + " itself: pass raw values, not normalized ones";
}

// YAML ------------------------------------------------------------------------------------------
// A block-style YAML emitter for the JSON values the MLmodel holds. Strings are single-quoted;
// numbers always carry a '.' before an exponent so that YAML 1.1 readers (PyYAML) read floats.

std::string yaml_string(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "''";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out + "'";
}

std::string yaml_key(const std::string& key) {
  bool plain = !key.empty();
  for (char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    plain = plain && ok;
  }
  if (plain && ((key[0] >= '0' && key[0] <= '9') || key[0] == '-' || key[0] == '.')) plain = false;
  return plain ? key : yaml_string(key);
}

std::string yaml_scalar(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return v.dump();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isnan(d)) return ".nan";
    if (std::isinf(d)) return d > 0 ? ".inf" : "-.inf";
    std::string text = v.dump();
    const size_t e = text.find_first_of("eE");
    if (e != std::string::npos && text.find('.') == std::string::npos) text.insert(e, ".0");
    if (e == std::string::npos && text.find('.') == std::string::npos) text += ".0";
    if (e != std::string::npos) {
      const size_t at = text.find_first_of("eE") + 1;
      if (text[at] != '-' && text[at] != '+') text.insert(at, "+");
    }
    return text;
  }
  return yaml_string(v.get<std::string>());
}

void emit_yaml(const Json& v, int indent, std::string& out) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  if (v.is_object()) {
    for (const auto& [key, value] : v.items()) {
      out += pad + yaml_key(key) + ":";
      if (value.is_object() && !value.empty()) {
        out += "\n";
        emit_yaml(value, indent + 2, out);
      } else if (value.is_array() && !value.empty()) {
        out += "\n";
        emit_yaml(value, indent, out);
      } else if (value.is_object()) {
        out += " {}\n";
      } else if (value.is_array()) {
        out += " []\n";
      } else {
        out += " " + yaml_scalar(value) + "\n";
      }
    }
  } else if (v.is_array()) {
    for (const Json& item : v) {
      if (item.is_object() || item.is_array()) {
        out += pad + "- " + item.dump() + "\n";  // JSON flow style is YAML
      } else {
        out += pad + "- " + yaml_scalar(item) + "\n";
      }
    }
  }
}

std::string to_yaml(const Json& doc) {
  std::string out;
  emit_yaml(doc, 0, out);
  return out;
}

Json json_or_string(const std::string& text) {
  if (json_nests_deeper_than(text, kMaxJsonDepth)) return Json(text);
  Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? Json(text) : parsed;
}

Json number_or_null(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

Json lineage_json(const Lineage& lineage) {
  Json params = Json::object();
  for (const auto& [name, text] : lineage.params) params[name] = json_or_string(text);
  Json metrics = Json::object();
  for (const auto& [name, value] : lineage.metrics) metrics[name] = number_or_null(value);
  return {{"study", lineage.study},     {"trial", lineage.trial},
          {"storage", lineage.storage}, {"objective_metric", lineage.objective_metric},
          {"params", params},           {"metrics", metrics}};
}

Json table_json(const TableEncoding& t) {
  Json columns = Json::array();
  for (const TableColumn& c : t.columns) {
    if (c.categorical) {
      Json column = {{"name", c.name},
                     {"type", "categorical"},
                     {"categories", c.categories},
                     {"missing_slot", c.missing_slot}};
      if (c.embedding > 0) column["embedding"] = c.embedding;
      columns.push_back(std::move(column));
    } else {
      columns.push_back({{"name", c.name}, {"type", "numeric"}, {"fill", c.fill}});
    }
  }
  return {{"label", t.label},
          {"missing", t.missing_mean ? "mean" : "refuse"},
          {"columns", columns},
          {"features", t.features}};
}

Json preprocessing_json(const Preprocessing& p) {
  Json j = {{"version", format_version(p)},
            {"input", {{"dtype", dtype_name(p.input)}, {"divisor", p.divisor}}},
            {"in_model_onnx", true}};
  if (!p.feature_mean.empty()) {
    j["normalize"] = {{"mean", p.feature_mean}, {"stddev", p.feature_stddev}};
  } else if (p.mean && p.stddev) {
    j["normalize"] = {{"mean", *p.mean}, {"stddev", *p.stddev}};
  } else {
    j["normalize"] = nullptr;
  }
  j["dataset"] = p.dataset;
  if (p.table) j["table"] = table_json(*p.table);
  if (p.image) {
    j["image"] = {{"size", {p.image->height, p.image->width}},
                  {"color", p.image->grayscale ? "grayscale" : "rgb"}};
  }
  if (!p.class_labels.empty()) j["labels"] = p.class_labels;
  if (p.regression) j["task"] = "regression";
  if (!p.target_mean.empty()) {
    j["target"] = {{"mean", p.target_mean}, {"stddev", p.target_stddev}, {"in_model", true}};
  }
  return j;
}

// `v` as a float when it is a number a float holds (finite, within a float's range).
std::optional<float> finite_float(const Json& v) {
  if (!v.is_number()) return std::nullopt;
  const double d = v.get<double>();
  if (!std::isfinite(d) || std::fabs(d) > std::numeric_limits<float>::max()) return std::nullopt;
  return static_cast<float>(d);
}

// The same, > 0 as a float (a stddev, a divisor: 1e-50 is 0 as a float).
std::optional<float> positive_float(const Json& v) {
  const std::optional<float> f = finite_float(v);
  return f && *f > 0 ? f : std::nullopt;
}

// The table encoding of preprocessing.json at `path` (its "table"); throws Error(kDataLoss).
TableEncoding parse_table(const Json& t, const fs::path& path) {
  auto bad = [&](const std::string& what) -> Error {
    return Error(ErrorCode::kDataLoss, path.string() + ": table: " + what);
  };
  auto strings = [&](const Json& a, const std::string& what) {
    std::vector<std::string> out;
    if (!a.is_array()) throw bad(what + " must be an array of strings");
    for (const Json& v : a) {
      if (!v.is_string()) throw bad(what + " must be an array of strings");
      out.push_back(v.get<std::string>());
    }
    return out;
  };
  if (!t.is_object() || !t.value("columns", Json()).is_array() ||
      !t.value("label", Json()).is_string() || !t.value("missing", Json()).is_string()) {
    throw bad("needs a label, missing \"mean\" or \"refuse\", and columns");
  }
  TableEncoding e;
  e.label = t["label"].get<std::string>();
  e.missing_mean = t["missing"] == "mean";
  e.features = strings(t.value("features", Json()), "features");
  size_t width = 0;
  for (const Json& c : t["columns"]) {
    if (!c.is_object() || !c.value("name", Json()).is_string()) {
      throw bad("a column needs a name");
    }
    TableColumn col;
    col.name = c["name"].get<std::string>();
    const Json type = c.value("type", Json());
    if (type == "categorical") {
      col.categorical = true;
      col.categories =
          strings(c.value("categories", Json()), "column " + col.name + "'s categories");
      col.missing_slot = c.value("missing_slot", false);
      const Json embedding = c.value("embedding", Json(0));
      if (!embedding.is_number_integer() || embedding.get<int64_t>() < 0) {
        throw bad("column " + col.name + "'s embedding is not an integer >= 0");
      }
      col.embedding = embedding.get<int64_t>();
      width += col.embedding > 0 ? 1 : col.categories.size() + (col.missing_slot ? 1 : 0);
    } else if (type == "numeric" && finite_float(c.value("fill", Json()))) {
      col.fill = *finite_float(c["fill"]);
      ++width;
    } else {
      throw bad("column " + col.name + " is neither numeric (with a fill) nor categorical");
    }
    e.columns.push_back(std::move(col));
  }
  if (width != e.features.size()) {
    throw bad("the columns encode " + std::to_string(width) + " features, features names " +
              std::to_string(e.features.size()));
  }
  return e;
}

Json metadata_json(const Lineage& lineage, const Preprocessing& preprocessing,
                   const training::ModelSpec& spec, const MlflowModelOptions& options) {
  Json m = {{"tuner_format_version", format_version(preprocessing)}};
  m.update(lineage_json(lineage));
  m.update(Json{{"input_name", training::kOnnxInputName},
                {"input_description", input_description(preprocessing, spec)},
                {"output_name", training::kOnnxOutputName},
                {"num_parameters", spec.num_parameters},
                {"preprocessing", preprocessing_json(preprocessing)}});
  for (const auto& [key, text] : options.extra_metadata) m[key] = json_or_string(text);
  return m;
}

std::string mlmodel_yaml(const Json& metadata, const Json& signature,
                         const MlflowModelOptions& options) {
  Json flavors = {{"onnx",
                   {{"code", nullptr},
                    {"data", "model.onnx"},
                    {"onnx_version", TUNER_ONNX_VERSION},
                    {"providers", Json::array({"CUDAExecutionProvider", "CPUExecutionProvider"})}}},
                  {"python_function",
                   {{"data", "model.onnx"},
                    {"env", {{"conda", "conda.yaml"}, {"virtualenv", "python_env.yaml"}}},
                    {"loader_module", "mlflow.onnx"},
                    {"python_version", options.python_version}}}};
  Json doc = {
      {"artifact_path", options.artifact_path},
      {"flavors", flavors},
      {"metadata", metadata},
      {"mlflow_version", options.mlflow_version},
      {"model_uuid", options.model_uuid.empty() ? random_uuid_hex() : options.model_uuid},
  };
  if (!signature.is_null()) doc["signature"] = signature;
  doc["utc_time_created"] = options.utc_time_created.empty() ? utc_now() : options.utc_time_created;
  return "# An MLflow model written by tuner (docs/registry.md).\n" + to_yaml(doc);
}

std::string requirements_txt(const MlflowModelOptions& options) {
  return "mlflow>=" + options.mlflow_version + "\nonnx>=" + TUNER_ONNX_VERSION +
         "\nonnxruntime>=1.16\nnumpy\n";
}

std::string python_env_yaml(const MlflowModelOptions& options) {
  return "python: '" + options.python_version +
         "'\nbuild_dependencies:\n- pip\n- setuptools\n- wheel\ndependencies:\n"
         "- -r requirements.txt\n";
}

std::string conda_yaml(const MlflowModelOptions& options) {
  std::string out = "channels:\n- conda-forge\ndependencies:\n- python=" + options.python_version +
                    "\n- pip\n- pip:\n";
  std::istringstream lines(requirements_txt(options));
  for (std::string line; std::getline(lines, line);) out += "  - " + line + "\n";
  return out + "name: mlflow-env\n";
}

training::ModelSpec parse_spec_or_throw(const std::string& json, const std::string& where) {
  try {
    return training::parse_model_spec(json);
  } catch (const training::SpecError& e) {
    throw Error(ErrorCode::kInvalidArgument,
                where + ": the model spec does not build: " + e.what());
  }
}

}  // namespace

void write_onnx_flavor_files(const fs::path& dir, const Json& metadata, const Json& signature,
                             const MlflowModelOptions& options) {
  write_file(dir / "MLmodel", mlmodel_yaml(metadata, signature, options));
  write_file(dir / "requirements.txt", requirements_txt(options));
  write_file(dir / "python_env.yaml", python_env_yaml(options));
  write_file(dir / "conda.yaml", conda_yaml(options));
}

Json lineage_metadata(const Lineage& lineage, const MlflowModelOptions& options) {
  Json m = lineage_json(lineage);
  for (const auto& [key, text] : options.extra_metadata) m[key] = json_or_string(text);
  return m;
}

std::unique_ptr<training::Sequential> model_from_checkpoint(const training::Checkpoint& checkpoint,
                                                            const training::ModelSpec& spec,
                                                            int64_t max_batch,
                                                            training::Backend& backend) {
  std::unique_ptr<training::Sequential> model;
  try {
    model = training::build_model(spec, max_batch, backend, /*seed=*/0);
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("the model spec does not build: ") + e.what());
  }
  training::ParameterArena& arena = model->parameters();
  if (checkpoint.parameters.size() != arena.values().size() ||
      checkpoint.buffers.size() != arena.buffer_values().size()) {
    throw Error(ErrorCode::kInvalidArgument,
                "the checkpoint's weights do not fit its model spec: " +
                    std::to_string(checkpoint.parameters.size()) + " parameter and " +
                    std::to_string(checkpoint.buffers.size()) + " buffer values, the spec needs " +
                    std::to_string(arena.values().size()) + " and " +
                    std::to_string(arena.buffer_values().size()));
  }
  arena.set_values(checkpoint.parameters);
  arena.set_buffer_values(checkpoint.buffers);
  return model;
}

namespace {

// `trained` with p's target scaling folded into its last layer: W[o] * stddev[o] and
// b[o] * stddev[o] + mean[o]. Throws Error(kInvalidArgument) when the scaling does not fit.
training::Checkpoint fold_target_scaling(const training::Checkpoint& trained,
                                         const training::ModelSpec& spec, const Preprocessing& p) {
  training::Checkpoint folded = trained;
  if (p.target_mean.empty() && p.target_stddev.empty()) return folded;
  const int64_t t = spec.output.numel();
  auto refuse = [](const std::string& what) {
    throw Error(ErrorCode::kInvalidArgument, "preprocessing: target scaling: " + what);
  };
  if (!p.regression) refuse("only a regression's model has one");
  if (static_cast<int64_t>(p.target_mean.size()) != t ||
      static_cast<int64_t>(p.target_stddev.size()) != t) {
    refuse(std::to_string(p.target_mean.size()) + " means and " +
           std::to_string(p.target_stddev.size()) + " standard deviations for the model's " +
           std::to_string(t) + " outputs");
  }
  const training::LayerSpec* last = spec.layers.empty() ? nullptr : &spec.layers.back();
  if (last == nullptr || last->type != "linear" || !last->bias ||
      last->activation != training::Activation::kNone) {
    refuse("the model must end with a linear layer with a bias and no activation to take it");
  }
  std::unique_ptr<training::Backend> backend = training::make_cpu_backend(1);
  std::unique_ptr<training::Sequential> model = model_from_checkpoint(trained, spec, 1, *backend);
  const training::ParameterArena& arena = model->parameters();
  const size_t n = arena.param_specs().size();
  if (n < 2 || arena.param_specs()[n - 2].shape.rank() != 2 ||
      arena.param_specs()[n - 2].shape[0] != t ||
      !(arena.param_specs()[n - 1].shape == training::Shape{t})) {
    refuse("the last layer's weight and bias are not [" + std::to_string(t) + ", I] and [" +
           std::to_string(t) + "]");
  }
  const int64_t in = arena.param_specs()[n - 2].shape[1];
  float* w = folded.parameters.data() + arena.offset(n - 2);
  float* b = folded.parameters.data() + arena.offset(n - 1);
  for (int64_t o = 0; o < t; ++o) {
    if (!(p.target_stddev[o] > 0.0f)) refuse("a standard deviation is not > 0");
    for (int64_t i = 0; i < in; ++i) w[o * in + i] *= p.target_stddev[o];
    b[o] = b[o] * p.target_stddev[o] + p.target_mean[o];
  }
  return folded;
}

}  // namespace

void write_mlflow_model(const training::Checkpoint& trained, const Lineage& lineage,
                        const Preprocessing& preprocessing, const fs::path& out,
                        const MlflowModelOptions& options) {
  if (fs::exists(out)) {
    throw Error(ErrorCode::kAlreadyExists,
                out.string() + ": exists; an MLflow model is written to a new directory only");
  }
  if (preprocessing.stddev && !(*preprocessing.stddev > 0.0f)) {
    throw Error(ErrorCode::kInvalidArgument, "preprocessing: stddev must be > 0");
  }
  if (!(preprocessing.divisor > 0.0f)) {
    throw Error(ErrorCode::kInvalidArgument, "preprocessing: divisor must be > 0");
  }
  const training::ModelSpec spec = parse_spec_or_throw(trained.model_spec, "checkpoint");
  const training::Checkpoint checkpoint = fold_target_scaling(trained, spec, preprocessing);
  if (preprocessing.table &&
      static_cast<int64_t>(preprocessing.table->features.size()) != spec.input.numel()) {
    throw Error(ErrorCode::kInvalidArgument,
                "preprocessing: the table's columns encode " +
                    std::to_string(preprocessing.table->features.size()) +
                    " features, the model takes " + spec.input.to_string());
  }
  if (preprocessing.image) {
    const ImageEncoding& image = *preprocessing.image;
    const training::Shape expected{image.channels(), image.height, image.width};
    if (!(image.height >= 1 && image.width >= 1) || spec.input != expected) {
      throw Error(ErrorCode::kInvalidArgument, "preprocessing: images of " + expected.to_string() +
                                                   ", the model takes " + spec.input.to_string());
    }
  }
  if (preprocessing.regression && !preprocessing.class_labels.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                "preprocessing: a regression's model has no class labels (its outputs are values)");
  }
  if (!preprocessing.class_labels.empty() &&
      static_cast<int64_t>(preprocessing.class_labels.size()) != spec.output.numel()) {
    throw Error(ErrorCode::kInvalidArgument,
                "preprocessing: " + std::to_string(preprocessing.class_labels.size()) +
                    " class labels, the model has " + spec.output.to_string() + " outputs");
  }
  std::unique_ptr<training::Backend> backend = training::make_cpu_backend(1);
  std::unique_ptr<training::Sequential> model =
      model_from_checkpoint(checkpoint, spec, 1, *backend);

  training::OnnxExportOptions onnx_options;
  onnx_options.graph_name = lineage.study.empty() ? "tuner_model" : lineage.study;
  onnx_options.doc_string = "exported by tuner from study '" + lineage.study + "', trial " +
                            std::to_string(lineage.trial);
  if (!lineage.study.empty()) onnx_options.metadata.emplace_back("study", lineage.study);
  if (lineage.trial >= 0)
    onnx_options.metadata.emplace_back("trial", std::to_string(lineage.trial));
  // The model takes the raw values: the scaling and normalization are the graph's first nodes.
  onnx_options.input_transform = onnx_input_transform(preprocessing);
  // A table's or an image's model: how a row or a file becomes its input, and its labels, for
  // ONNX runtimes' users.
  if (preprocessing.table || preprocessing.image) {
    onnx_options.metadata.emplace_back("tuner.preprocessing",
                                       preprocessing_json(preprocessing).dump());
  }
  std::string onnx_bytes;
  try {
    onnx_bytes = training::onnx_model_bytes(spec, *model, onnx_options);
  } catch (const training::OnnxExportError& e) {
    throw Error(ErrorCode::kInvalidArgument,
                "cannot export the model to ONNX: " + std::string(e.what()));
  }

  const Json metadata = metadata_json(lineage, preprocessing, spec, options);
  TempDir tmp = TempDir::beside(out);
  const fs::path& dir = tmp.path();
  const Json signature = {{"inputs", tensor_spec(spec.input, dtype_name(preprocessing.input))},
                          {"outputs", tensor_spec(spec.output)},
                          {"params", nullptr}};
  write_onnx_flavor_files(dir, metadata, signature, options);
  write_file(dir / "model.onnx", onnx_bytes);
  make_directory(dir / "engine");
  // The engine's files: the weights without the optimizer's state (serving needs none).
  training::Checkpoint weights;
  weights.model_spec = checkpoint.model_spec;
  weights.parameters = checkpoint.parameters;
  weights.buffers = checkpoint.buffers;
  weights.epoch = checkpoint.epoch;
  weights.best_value = checkpoint.best_value;
  weights.best_epoch = checkpoint.best_epoch;
  try {
    training::save_checkpoint((dir / "engine" / "model.ckpt").string(), weights);
  } catch (const training::CheckpointError& e) {
    throw Error(ErrorCode::kUnavailable, e.what());
  }
  write_file(dir / "engine" / "model_spec.json", Json::parse(spec.json).dump(2) + "\n");
  write_file(dir / "engine" / "preprocessing.json",
             preprocessing_json(preprocessing).dump(2) + "\n");
  write_file(dir / "engine" / "metadata.json", metadata.dump(2) + "\n");
  if (options.before_publish) options.before_publish(dir);
  tmp.publish(out);
}

namespace {

Preprocessing parse_preprocessing(const std::string& text, const std::string& where,
                                  const training::Shape& input, const training::Shape& output) {
  Preprocessing p_out;
  Json p = json_nests_deeper_than(text, kMaxJsonDepth) ? Json() : Json::parse(text, nullptr, false);
  if (p.is_discarded() || !p.is_object()) {
    throw Error(ErrorCode::kDataLoss, where + ": not JSON");
  }
  if (const int version = int_member(p, "version", 0, where); version > kMlflowModelFormatVersion) {
    throw Error(ErrorCode::kFailedPrecondition,
                where + ": format version " + std::to_string(version) +
                    " is newer than this tuner's (" + std::to_string(kMlflowModelFormatVersion) +
                    "); use a newer tuner");
  }
  if (p.contains("normalize") && p["normalize"].is_object() &&
      p["normalize"].value("mean", Json()).is_array()) {
    const Json& n = p["normalize"];
    const Json& mean = n["mean"];
    const Json stddev = n.value("stddev", Json());
    // One per channel: per element of the input's first dimension (a table's features).
    const size_t features = static_cast<size_t>(input.rank() >= 1 ? input.dims()[0] : int64_t{0});
    if (!stddev.is_array() || mean.size() != features || stddev.size() != features) {
      throw Error(ErrorCode::kDataLoss,
                  where + ": normalize needs " + std::to_string(features) +
                      " means and stddevs, one per channel (the first dimension) of " +
                      input.to_string());
    }
    for (size_t f = 0; f < features; ++f) {
      const std::optional<float> m = finite_float(mean[f]), d = positive_float(stddev[f]);
      if (!m || !d) {
        throw Error(ErrorCode::kDataLoss, where + ": normalize, channel " + std::to_string(f) +
                                              ": needs numbers mean and stddev > 0");
      }
      p_out.feature_mean.push_back(*m);
      p_out.feature_stddev.push_back(*d);
    }
  } else if (p.contains("normalize") && p["normalize"].is_object()) {
    const Json& n = p["normalize"];
    p_out.mean = finite_float(n.value("mean", Json()));
    p_out.stddev = positive_float(n.value("stddev", Json()));
    if (!p_out.mean || !p_out.stddev) {
      throw Error(ErrorCode::kDataLoss, where +
                                            ": normalize needs numbers mean and "
                                            "stddev > 0");
    }
  }
  if (p.contains("table")) {
    p_out.table = parse_table(p["table"], where);
    if (static_cast<int64_t>(p_out.table->features.size()) != input.numel()) {
      throw Error(ErrorCode::kDataLoss, where + ": the table encodes " +
                                            std::to_string(p_out.table->features.size()) +
                                            " features, the model takes " + input.to_string());
    }
  }
  if (p.contains("image")) {
    const Json& image = p["image"];
    const Json size = image.is_object() ? image.value("size", Json()) : Json();
    const Json color = image.is_object() ? image.value("color", Json()) : Json();
    if (!size.is_array() || size.size() != 2 || !size[0].is_number_integer() ||
        !size[1].is_number_integer() || size[0].get<int64_t>() < 1 || size[1].get<int64_t>() < 1 ||
        (color != "rgb" && color != "grayscale")) {
      throw Error(ErrorCode::kDataLoss, where +
                                            ": image needs a size [H, W] and a color \"rgb\" "
                                            "or \"grayscale\"");
    }
    ImageEncoding e{.height = size[0].get<int64_t>(),
                    .width = size[1].get<int64_t>(),
                    .grayscale = color == "grayscale"};
    if (input != training::Shape{e.channels(), e.height, e.width}) {
      throw Error(ErrorCode::kDataLoss, where + ": image of " + size.dump() + " in " +
                                            color.get<std::string>() + ", the model takes " +
                                            input.to_string());
    }
    p_out.image = e;
  }
  if (p.contains("labels")) {
    const Json& labels = p["labels"];
    if (!labels.is_array() || static_cast<int64_t>(labels.size()) != output.numel()) {
      throw Error(ErrorCode::kDataLoss, where + ": labels must be " +
                                            std::to_string(output.numel()) +
                                            " strings, one per output");
    }
    for (const Json& l : labels) {
      if (!l.is_string()) {
        throw Error(ErrorCode::kDataLoss, where + ": labels must be strings");
      }
      p_out.class_labels.push_back(l.get<std::string>());
    }
  }
  if (p.contains("task")) {
    if (p["task"] != "regression" || !p_out.class_labels.empty()) {
      throw Error(ErrorCode::kDataLoss, where + ": task must be \"regression\" (" +
                                            p["task"].dump() + "), on a model without labels");
    }
    p_out.regression = true;
  }
  if (p.contains("dataset") && p["dataset"].is_string()) {
    p_out.dataset = p["dataset"].get<std::string>();
  }
  // Version 2 on: the raw input's type and scaling (version 1 took the loader's units).
  if (p.contains("input") && p["input"].is_object()) {
    const Json& in = p["input"];
    const Json dtype = in.value("dtype", Json()), divisor = in.value("divisor", Json());
    const std::optional<float> scale = positive_float(divisor);
    if (!dtype.is_string() || (dtype != "uint8" && dtype != "float32") || !scale) {
      throw Error(ErrorCode::kDataLoss, where +
                                            ": input needs a dtype \"uint8\" or "
                                            "\"float32\" and a divisor > 0");
    }
    p_out.input = dtype == "uint8" ? RawInput::kUint8 : RawInput::kFloat32;
    p_out.divisor = *scale;
  }
  return p_out;
}

}  // namespace

Preprocessing read_preprocessing(const std::string& text, const std::string& where,
                                 const training::Shape& input, const training::Shape& output) {
  try {
    return parse_preprocessing(text, where, input, output);
  } catch (const Json::exception& e) {
    // A member of another type than the format's (a version that is an object, ...).
    throw Error(ErrorCode::kDataLoss, where + ": " + e.what());
  }
}

// ServedModel ----------------------------------------------------------------------------------

ServedModel::ServedModel(ServedModel&&) noexcept = default;
ServedModel& ServedModel::operator=(ServedModel&&) noexcept = default;
ServedModel::~ServedModel() = default;

ServedModel ServedModel::load(const fs::path& dir, int threads) {
  const fs::path engine = dir / "engine";
  if (fs::is_regular_file(dir / "MLmodel") && !fs::exists(engine)) {
    // A model a trial's own program saved (user_model.h): MLflow runs it, the engine cannot.
    std::string flavors;
    try {
      for (const std::string& f : mlmodel_flavors(read_file(dir / "MLmodel"))) {
        flavors += (flavors.empty() ? "" : ", ") + f;
      }
    } catch (const Error&) {
    }
    throw Error(ErrorCode::kFailedPrecondition,
                dir.string() + ": an MLflow model" +
                    (flavors.empty() ? std::string() : " of flavors " + flavors) +
                    " that a trial's own program saved, not an engine model: tuner predict, "
                    "serve-model and drift run the engine's models only; serve it with MLflow "
                    "(mlflow models serve -m " +
                    dir.string() + ", or mlflow.pyfunc.load_model)");
  }
  for (const char* name : {"model.ckpt", "model_spec.json"}) {
    if (!fs::is_regular_file(engine / name)) {
      throw Error(ErrorCode::kNotFound,
                  dir.string() + ": not a model written by tuner export (no engine/" + name + ")");
    }
  }
  ServedModel m;
  m.spec_ = parse_spec_or_throw(read_file(engine / "model_spec.json"),
                                (engine / "model_spec.json").string());
  training::Checkpoint checkpoint;
  try {
    checkpoint = training::load_checkpoint((engine / "model.ckpt").string());
  } catch (const training::CheckpointError& e) {
    throw Error(ErrorCode::kDataLoss, e.what());
  }
  if (checkpoint.model_spec != m.spec_.json) {
    throw Error(ErrorCode::kDataLoss, (engine / "model.ckpt").string() +
                                          ": holds another model than engine/model_spec.json");
  }
  if (fs::is_regular_file(engine / "preprocessing.json")) {
    const fs::path path = engine / "preprocessing.json";
    m.preprocessing_ =
        read_preprocessing(read_file(path), path.string(), m.spec_.input, m.spec_.output);
  }
  if (fs::is_regular_file(engine / "metadata.json")) {
    m.metadata_json_ = read_file(engine / "metadata.json");
  }
  m.backend_ = training::make_cpu_backend(threads);
  try {
    m.model_ = model_from_checkpoint(checkpoint, m.spec_, kServeBatch, *m.backend_);
  } catch (const Error& e) {
    throw Error(ErrorCode::kDataLoss, dir.string() + ": " + e.what());
  }
  return m;
}

void ServedModel::preprocess(std::span<float> raw) const {
  const Preprocessing& p = preprocessing_;
  if (p.input == RawInput::kUint8) {
    const size_t numel = static_cast<size_t>(std::max<int64_t>(1, spec_.input.numel()));
    for (size_t i = 0; i < raw.size(); ++i) {
      if (!(raw[i] >= 0.0f && raw[i] <= 255.0f && raw[i] == std::floor(raw[i]))) {
        throw Error(ErrorCode::kInvalidArgument,
                    "input value " + Json(raw[i]).dump() + " (sample " + std::to_string(i / numel) +
                        ", value " + std::to_string(i % numel) +
                        ") is not a uint8 pixel value 0..255: this model takes " +
                        (p.dataset.empty() ? std::string("the dataset") : p.dataset) +
                        "'s own pixel values, as its files hold them, not scaled or normalized "
                        "ones");
      }
    }
  }
  // The operations of model.onnx's input nodes, in their order (training/export/onnx_export.h).
  if (p.divisor != 1.0f) {
    for (float& v : raw) v = v / p.divisor;
  }
  if (!p.feature_mean.empty()) {
    // As training::Normalizer per channel: (x - mean[c]) * (1 / stddev[c]), channel c the
    // element of the sample's first dimension [K, ...] that value i is in.
    const size_t channels = p.feature_mean.size();
    const size_t numel = static_cast<size_t>(std::max<int64_t>(1, spec_.input.numel()));
    const size_t stride = std::max<size_t>(1, numel / channels);
    for (size_t i = 0; i < raw.size(); ++i) {
      const size_t f = (i % numel) / stride % channels;
      raw[i] = (raw[i] - p.feature_mean[f]) * (1.0f / p.feature_stddev[f]);
    }
    return;
  }
  if (!p.mean || !p.stddev) return;
  const float mean = *p.mean, inv = 1.0f / *p.stddev;
  for (float& v : raw) v = (v - mean) * inv;
}

std::string ServedModel::class_label(int64_t index) const {
  const std::vector<std::string>& labels = preprocessing_.class_labels;
  if (index >= 0 && index < static_cast<int64_t>(labels.size())) {
    return labels[static_cast<size_t>(index)];
  }
  return std::to_string(index);
}

std::vector<float> ServedModel::forward(std::span<const float> inputs) {
  const int64_t in_numel = spec_.input.numel();
  const int64_t out_numel = spec_.output.numel();
  if (in_numel <= 0 || static_cast<int64_t>(inputs.size()) % in_numel != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                std::to_string(inputs.size()) + " input values are not a whole number of samples " +
                    spec_.input.to_string());
  }
  const int64_t n = static_cast<int64_t>(inputs.size()) / in_numel;
  std::vector<float> out(static_cast<size_t>(n * out_numel));
  for (int64_t begin = 0; begin < n; begin += kServeBatch) {
    const int64_t b = std::min(kServeBatch, n - begin);
    training::Tensor x(spec_.input.with_batch(b));
    x.copy_from(
        inputs.subspan(static_cast<size_t>(begin * in_numel), static_cast<size_t>(b * in_numel)));
    const training::Tensor& y = model_->forward(x, training::Mode::kEval);
    backend_->download(y.span(),
                       std::span<float>(out).subspan(static_cast<size_t>(begin * out_numel),
                                                     static_cast<size_t>(b * out_numel)));
  }
  return out;
}

}  // namespace tuner::registry
