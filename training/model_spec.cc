#include "training/model_spec.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "training/layers/activation.h"
#include "training/layers/avg_pool2d.h"
#include "training/layers/batch_norm.h"
#include "training/layers/conv2d.h"
#include "training/layers/dropout.h"
#include "training/layers/embedding.h"
#include "training/layers/flatten.h"
#include "training/layers/global_avg_pool.h"
#include "training/layers/layer_norm.h"
#include "training/layers/linear.h"
#include "training/layers/max_pool2d.h"
#include "training/layers/residual.h"
#include "training/rng.h"
#include "training/shape_error.h"
#include "util/strings.h"

namespace tuner::training {
namespace {

// The layer types and the fields each accepts (besides "type").
struct TypeInfo {
  std::string_view type;
  std::vector<std::string_view> fields;
};

const std::vector<TypeInfo>& layer_types() {
  static const std::vector<TypeInfo> types = {
      {"linear", {"out", "bias", "activation"}},
      {"conv2d", {"out", "kernel", "stride", "padding", "bias", "activation"}},
      {"max_pool2d", {"kernel", "stride", "padding"}},
      {"avg_pool2d", {"kernel", "stride", "padding"}},
      {"global_avg_pool", {}},
      {"batch_norm", {"eps", "momentum"}},
      {"layer_norm", {"eps"}},
      {"dropout", {"p"}},
      {"relu", {}},
      {"gelu", {}},
      {"tanh", {}},
      {"sigmoid", {}},
      {"flatten", {}},
      {"residual", {"body", "projection", "shortcut"}},
  };
  return types;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// " (did you mean \"x\"?)" for the closest candidate, or "" when none is close.
std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates) {
  std::string_view best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (std::string_view c : candidates) {
    size_t d = edit_distance(word, c);
    if (c.starts_with(word) || word.starts_with(c)) d = std::min<size_t>(d, 1);
    if (d < best_d) best_d = d, best = c;
  }
  if (best.empty() || best_d > std::max<size_t>(2, word.size() / 3)) return "";
  return " (did you mean \"" + std::string(best) + "\"?)";
}

std::string field_path(const std::string& path, std::string_view field) {
  return path + "." + std::string(field);
}

// Reads the integer field `name` of object j; `fallback` when absent (required when nullopt).
int64_t get_int(const nlohmann::json& j, const std::string& path, std::string_view name,
                std::optional<int64_t> fallback, int64_t min_value) {
  const std::string p = field_path(path, name);
  auto it = j.find(std::string(name));
  if (it == j.end()) {
    if (!fallback) throw SpecError(p, "missing (an integer >= " + std::to_string(min_value) + ")");
    return *fallback;
  }
  if (!it->is_number_integer()) {
    throw SpecError(p,
                    "expected an integer >= " + std::to_string(min_value) + ", got " + it->dump());
  }
  const int64_t v = it->get<int64_t>();
  if (v < min_value) {
    throw SpecError(p, std::to_string(v) +
                           " is out of range (an integer >= " + std::to_string(min_value) + ")");
  }
  return v;
}

double get_number(const nlohmann::json& j, const std::string& path, std::string_view name,
                  double fallback, double lo, double hi, bool hi_inclusive) {
  const std::string p = field_path(path, name);
  auto it = j.find(std::string(name));
  if (it == j.end()) return fallback;
  const std::string range = "[" + nlohmann::json(lo).dump() + ", " + nlohmann::json(hi).dump() +
                            (hi_inclusive ? "]" : ")");
  if (!it->is_number()) throw SpecError(p, "expected a number in " + range + ", got " + it->dump());
  const double v = it->get<double>();
  if (!(v >= lo && (hi_inclusive ? v <= hi : v < hi))) {
    throw SpecError(p, it->dump() + " is out of range " + range);
  }
  return v;
}

bool get_bool(const nlohmann::json& j, const std::string& path, std::string_view name,
              bool fallback) {
  auto it = j.find(std::string(name));
  if (it == j.end()) return fallback;
  if (!it->is_boolean()) {
    throw SpecError(field_path(path, name), "expected true or false, got " + it->dump());
  }
  return it->get<bool>();
}

Activation parse_activation(const nlohmann::json& v, const std::string& path) {
  static const std::vector<std::string_view> names = {"none", "relu", "gelu", "tanh", "sigmoid"};
  if (!v.is_string()) throw SpecError(path, "expected one of " + join(names) + ", got " + v.dump());
  const std::string s = v.get<std::string>();
  if (s == "none") return Activation::kNone;
  if (s == "relu") return Activation::kRelu;
  if (s == "gelu") return Activation::kGelu;
  if (s == "tanh") return Activation::kTanh;
  if (s == "sigmoid") return Activation::kSigmoid;
  throw SpecError(path, "unknown activation \"" + s + "\"" + did_you_mean(s, names) + "; one of " +
                            join(names));
}

bool is_activation_type(std::string_view t) {
  return t == "relu" || t == "gelu" || t == "tanh" || t == "sigmoid";
}

Activation activation_of_type(std::string_view t) {
  if (t == "relu") return Activation::kRelu;
  if (t == "gelu") return Activation::kGelu;
  if (t == "tanh") return Activation::kTanh;
  return Activation::kSigmoid;
}

std::unique_ptr<Layer> make_layer(const LayerSpec& s, uint64_t seed);

std::vector<std::unique_ptr<Layer>> make_layers(const std::vector<LayerSpec>& specs,
                                                uint64_t seed) {
  std::vector<std::unique_ptr<Layer>> layers;
  for (const LayerSpec& s : specs) layers.push_back(make_layer(s, seed));
  return layers;
}

std::unique_ptr<Layer> make_layer(const LayerSpec& s, uint64_t seed) {
  const std::string& t = s.type;
  if (t == "linear") {
    return std::make_unique<Linear>(s.input[0], s.out, Linear::Options{s.bias, s.activation});
  }
  if (t == "conv2d") {
    return std::make_unique<Conv2d>(s.input[0], s.out, s.kernel,
                                    Conv2d::Options{s.stride, s.padding, s.bias, s.activation});
  }
  if (t == "max_pool2d") return std::make_unique<MaxPool2d>(s.kernel, s.stride, s.padding);
  if (t == "avg_pool2d") return std::make_unique<AvgPool2d>(s.kernel, s.stride, s.padding);
  if (t == "global_avg_pool") return std::make_unique<GlobalAvgPool>();
  if (t == "batch_norm") return std::make_unique<BatchNorm>(s.input[0], s.eps, s.momentum);
  if (t == "layer_norm") return std::make_unique<LayerNorm>(s.input[s.input.rank() - 1], s.eps);
  if (t == "dropout") {
    // A stream per dropout layer, keyed by its place in the spec.
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a of the path: the same on every platform
    for (unsigned char c : s.path) h = (h ^ c) * 0x100000001b3ull;
    return std::make_unique<Dropout>(s.p, mix64(seed ^ mix64(h)));
  }
  if (is_activation_type(t)) return std::make_unique<ActivationLayer>(activation_of_type(t));
  if (t == "flatten") return std::make_unique<Flatten>();
  if (t == "embedding") return std::make_unique<ColumnEmbedding>(s.input[0], s.embedded);
  if (t == "residual") {
    return std::make_unique<Residual>(make_layers(s.body, seed), make_layers(s.shortcut, seed));
  }
  throw SpecError(s.path, "internal: no builder for \"" + t + "\"");
}

class Parser {
 public:
  // Parses the list at `path`, with sample input shape `in`; returns the fused layer specs and
  // sets `out` to the list's output shape.
  std::vector<LayerSpec> parse_list(const nlohmann::json& list, const std::string& path,
                                    const Shape& in, Shape& out) {
    if (!list.is_array()) throw SpecError(path, "expected a list of layers, got " + list.dump());
    if (list.empty()) throw SpecError(path, "expected at least one layer");
    std::vector<LayerSpec> specs;
    Shape shape = in;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string p = path + "[" + std::to_string(i) + "]";
      LayerSpec s = parse_layer(list[i], p, shape);
      // Fold an activation into the linear or conv2d before it when the GEMM epilogue can apply
      // it (the model computes the same function, with one pass less).
      if (is_activation_type(s.type) && !specs.empty()) {
        LayerSpec& prev = specs.back();
        const Activation act = activation_of_type(s.type);
        if ((prev.type == "linear" || prev.type == "conv2d") &&
            prev.activation == Activation::kNone && activation_fusable(act)) {
          prev.activation = act;
          continue;
        }
      }
      shape = s.output;
      // An unfusable activation given on linear/conv2d becomes a layer of its own after it.
      if ((s.type == "linear" || s.type == "conv2d") && !activation_fusable(s.activation)) {
        LayerSpec act;
        act.type = std::string(activation_name(s.activation));
        act.path = s.path + ".activation";
        act.input = act.output = s.output;
        s.activation = Activation::kNone;
        specs.push_back(std::move(s));
        specs.push_back(std::move(act));
        continue;
      }
      specs.push_back(std::move(s));
    }
    out = shape;
    return specs;
  }

 private:
  LayerSpec parse_layer(const nlohmann::json& j, const std::string& path, const Shape& in) {
    if (!j.is_object()) {
      throw SpecError(path, "expected a layer object like {\"type\": \"relu\"}, got " + j.dump());
    }
    auto type_it = j.find("type");
    if (type_it == j.end()) throw SpecError(path + ".type", "missing");
    if (!type_it->is_string()) {
      throw SpecError(path + ".type", "expected a string, got " + type_it->dump());
    }
    const std::string type = type_it->get<std::string>();
    const TypeInfo* info = nullptr;
    std::vector<std::string_view> type_names;
    for (const TypeInfo& t : layer_types()) {
      type_names.push_back(t.type);
      if (t.type == type) info = &t;
    }
    if (info == nullptr) {
      throw SpecError(path + ".type", "unknown layer \"" + type + "\"" +
                                          did_you_mean(type, type_names) +
                                          "; known: " + join(type_names));
    }
    for (const auto& [key, value] : j.items()) {
      if (key == "type") continue;
      if (std::find(info->fields.begin(), info->fields.end(), key) == info->fields.end()) {
        std::string reason = "unknown field for " + type + did_you_mean(key, info->fields);
        reason += info->fields.empty() ? "; it takes none" : "; it takes " + join(info->fields);
        throw SpecError(path + "." + key, reason);
      }
    }

    LayerSpec s;
    s.type = type;
    s.path = path;
    s.input = in;
    if (type == "linear") {
      if (in.rank() != 1) {
        throw SpecError(path, "linear needs a flat input [I], got " + in.to_string() +
                                  "; add {\"type\": \"flatten\"} before it");
      }
      s.out = get_int(j, path, "out", std::nullopt, 1);
      s.bias = get_bool(j, path, "bias", true);
      if (j.contains("activation"))
        s.activation = parse_activation(j["activation"], path + ".activation");
      s.output = Shape{s.out};
    } else if (type == "conv2d" || type == "max_pool2d" || type == "avg_pool2d") {
      if (in.rank() != 3) {
        throw SpecError(path, type + " needs an image input [C, H, W], got " + in.to_string());
      }
      const bool conv = type == "conv2d";
      if (conv) s.out = get_int(j, path, "out", std::nullopt, 1);
      s.kernel = get_int(j, path, "kernel", std::nullopt, 1);
      s.stride = get_int(j, path, "stride", conv ? 1 : s.kernel, 1);
      s.padding = get_int(j, path, "padding", 0, 0);
      if (!conv && s.padding > s.kernel / 2) {
        throw SpecError(path + ".padding", std::to_string(s.padding) +
                                               " is more than half the kernel (" +
                                               std::to_string(s.kernel) + ")");
      }
      if (in[1] + 2 * s.padding < s.kernel || in[2] + 2 * s.padding < s.kernel) {
        std::string reason = std::to_string(s.kernel) + " does not fit the input " + in.to_string();
        if (s.padding > 0) reason += " with padding " + std::to_string(s.padding);
        throw SpecError(path + ".kernel", reason);
      }
      if (conv) {
        s.bias = get_bool(j, path, "bias", true);
        if (j.contains("activation")) {
          s.activation = parse_activation(j["activation"], path + ".activation");
        }
      }
      const Window2d win{s.kernel, s.kernel, s.stride, s.padding};
      s.output = Shape{conv ? s.out : in[0], win.out_h(in[1]), win.out_w(in[2])};
    } else if (type == "global_avg_pool") {
      if (in.rank() != 3) {
        throw SpecError(path,
                        "global_avg_pool needs an image input [C, H, W], got " + in.to_string());
      }
      s.output = Shape{in[0]};
    } else if (type == "batch_norm") {
      if (in.rank() != 1 && in.rank() != 3) {
        throw SpecError(path, "batch_norm needs an input [C] or [C, H, W], got " + in.to_string());
      }
      s.eps = static_cast<float>(get_number(j, path, "eps", 1e-5, 1e-12, 1.0, true));
      s.momentum = static_cast<float>(get_number(j, path, "momentum", 0.1, 0.0, 1.0, true));
      s.output = in;
    } else if (type == "layer_norm") {
      if (in.rank() < 1) throw SpecError(path, "layer_norm needs an input with a last dim");
      s.eps = static_cast<float>(get_number(j, path, "eps", 1e-5, 1e-12, 1.0, true));
      s.output = in;
    } else if (type == "dropout") {
      s.p = static_cast<float>(get_number(j, path, "p", 0.5, 0.0, 1.0, false));
      s.output = in;
    } else if (type == "flatten") {
      s.output = Shape{in.numel()};
    } else if (type == "residual") {
      parse_residual(j, path, in, s);
    } else {  // activations
      s.output = in;
    }
    return s;
  }

  void parse_residual(const nlohmann::json& j, const std::string& path, const Shape& in,
                      LayerSpec& s) {
    if (!j.contains("body")) throw SpecError(path + ".body", "missing (a list of layers)");
    Shape body_out;
    s.body = parse_list(j["body"], path + ".body", in, body_out);
    s.output = body_out;
    if (j.contains("projection") && j.contains("shortcut")) {
      throw SpecError(path + ".projection", "give either \"projection\" or \"shortcut\", not both");
    }
    if (j.contains("shortcut")) {
      Shape short_out;
      s.shortcut = parse_list(j["shortcut"], path + ".shortcut", in, short_out);
      if (!(short_out == body_out)) {
        throw SpecError(path + ".shortcut", "gives " + short_out.to_string() +
                                                " but the body gives " + body_out.to_string());
      }
      return;
    }
    const bool projection = get_bool(j, path, "projection", false);
    if (!projection) {
      if (!(body_out == in)) {
        throw SpecError(path + ".body", "turns the input " + in.to_string() + " into " +
                                            body_out.to_string() +
                                            ", which an identity shortcut cannot add; set "
                                            "\"projection\": true");
      }
      return;
    }
    // A projection shortcut: a linear layer for flat input, a 1x1 strided conv for images.
    LayerSpec p;
    p.path = path + ".projection";
    p.input = in;
    p.output = body_out;
    if (in.rank() == 1 && body_out.rank() == 1) {
      p.type = "linear";
      p.out = body_out[0];
    } else if (in.rank() == 3 && body_out.rank() == 3) {
      const int64_t stride = in[1] / body_out[1];
      if (stride < 1 || (in[1] + stride - 1) / stride != body_out[1] ||
          (in[2] + stride - 1) / stride != body_out[2]) {
        throw SpecError(p.path, "no 1x1 strided conv maps the input " + in.to_string() +
                                    " onto the body's output " + body_out.to_string() +
                                    "; give an explicit \"shortcut\"");
      }
      p.type = "conv2d";
      p.out = body_out[0];
      p.kernel = 1;
      p.stride = stride;
    } else {
      throw SpecError(p.path, "cannot project " + in.to_string() + " onto " + body_out.to_string() +
                                  "; give an explicit \"shortcut\"");
    }
    s.shortcut.push_back(std::move(p));
  }
};

Shape parse_input(const nlohmann::json& root) {
  auto it = root.find("input");
  if (it == root.end()) {
    throw SpecError("input", "missing (the sample shape, e.g. [1, 28, 28] or [784])");
  }
  if (!it->is_array() || it->empty() || it->size() > kMaxRank - 1) {
    throw SpecError("input", "expected a list of 1 to " + std::to_string(kMaxRank - 1) +
                                 " positive integers, got " + it->dump());
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& d = (*it)[i];
    if (!d.is_number_integer() || d.get<int64_t>() < 1) {
      throw SpecError("input[" + std::to_string(i) + "]",
                      "expected a positive integer, got " + d.dump());
    }
    dims.push_back(d.get<int64_t>());
  }
  return Shape::from(dims);
}

// The layer of the top-level "embeddings": [{"at": feature, "categories": K, "dim": D}, ...] over
// the flat input `in`, positions strictly increasing.
LayerSpec parse_embeddings(const nlohmann::json& list, const Shape& in) {
  const std::string path = "embeddings";
  if (!list.is_array() || list.empty()) {
    throw SpecError(path,
                    "expected a list of {\"at\", \"categories\", \"dim\"}, got " + list.dump());
  }
  if (in.rank() != 1) {
    throw SpecError(path, "embeddings need a flat input [I], got " + in.to_string());
  }
  LayerSpec s;
  s.type = "embedding";
  s.path = path;
  s.input = in;
  int64_t width = in[0];
  static const std::vector<std::string_view> kFields = {"at", "categories", "dim"};
  for (size_t k = 0; k < list.size(); ++k) {
    const std::string p = path + "[" + std::to_string(k) + "]";
    const nlohmann::json& j = list[k];
    if (!j.is_object()) {
      throw SpecError(p, "expected {\"at\", \"categories\", \"dim\"}, got " + j.dump());
    }
    for (const auto& [key, value] : j.items()) {
      if (std::find(kFields.begin(), kFields.end(), key) == kFields.end()) {
        throw SpecError(p + "." + key, "unknown field" + did_you_mean(key, kFields) +
                                           "; it takes " + join(kFields));
      }
    }
    EmbeddedColumn c;
    c.at = get_int(j, p, "at", std::nullopt, 0);
    c.categories = get_int(j, p, "categories", std::nullopt, 1);
    c.dim = get_int(j, p, "dim", std::nullopt, 1);
    if (c.at >= in[0]) {
      throw SpecError(p + ".at",
                      std::to_string(c.at) + " is not a feature of the input " + in.to_string());
    }
    if (!s.embedded.empty() && c.at <= s.embedded.back().at) {
      throw SpecError(p + ".at", std::to_string(c.at) + " does not come after " +
                                     std::to_string(s.embedded.back().at) +
                                     " (the features in increasing order)");
    }
    width += c.dim - 1;
    s.embedded.push_back(c);
  }
  s.output = Shape{width};
  return s;
}

}  // namespace

SpecError::SpecError(std::string path, std::string reason)
    : std::invalid_argument(path + ": " + reason),
      path_(std::move(path)),
      reason_(std::move(reason)) {}

ModelSpec parse_model_spec(std::string_view json_text) {
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {  // a syntax error, a number past a double's
    throw SpecError("(json)", std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object()) {
    throw SpecError("(root)",
                    "expected an object with \"input\" and \"layers\", got " + root.dump());
  }
  static const std::vector<std::string_view> kTopFields = {"input", "embeddings", "layers", "name"};
  for (const auto& [key, value] : root.items()) {
    if (std::find(kTopFields.begin(), kTopFields.end(), key) == kTopFields.end()) {
      throw SpecError(key, "unknown field" + did_you_mean(key, kTopFields) + "; a spec has " +
                               join(kTopFields));
    }
  }
  if (root.contains("name") && !root["name"].is_string()) {
    throw SpecError("name", "expected a string, got " + root["name"].dump());
  }
  ModelSpec spec;
  spec.input = parse_input(root);
  if (!root.contains("layers")) throw SpecError("layers", "missing (a list of layers)");
  Parser parser;
  Shape layers_in = spec.input;
  std::vector<LayerSpec> embeddings;
  if (root.contains("embeddings")) {
    embeddings.push_back(parse_embeddings(root["embeddings"], spec.input));
    layers_in = embeddings.back().output;
  }
  spec.layers = parser.parse_list(root["layers"], "layers", layers_in, spec.output);
  spec.layers.insert(spec.layers.begin(), std::make_move_iterator(embeddings.begin()),
                     std::make_move_iterator(embeddings.end()));
  spec.json = root.dump();

  // Build once: the layers' own checks back up the parser's, and count the parameters.
  auto layers = build_layers(spec, 0);
  Shape shape = spec.input;
  for (size_t i = 0; i < layers.size(); ++i) {
    try {
      shape = layers[i]->output_shape(shape);
    } catch (const ShapeError& e) {
      throw SpecError(spec.layers[i].path, e.what());
    }
    for (const ParamSpec& p : layers[i]->parameter_specs()) spec.num_parameters += p.shape.numel();
  }
  if (!(shape == spec.output)) {
    throw SpecError("layers", "internal: inferred output " + spec.output.to_string() +
                                  " but the layers give " + shape.to_string());
  }
  return spec;
}

ModelSpec load_model_spec(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SpecError(path, "cannot open the model spec file");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return parse_model_spec(text.str());
  } catch (const SpecError& e) {
    throw SpecError(path + ": " + e.path(), e.reason());
  }
}

std::vector<std::unique_ptr<Layer>> build_layers(const ModelSpec& spec, uint64_t seed) {
  try {
    return make_layers(spec.layers, seed);
  } catch (const SpecError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw SpecError("layers", e.what());
  }
}

std::unique_ptr<Sequential> build_model(const ModelSpec& spec, int64_t max_batch, Backend& backend,
                                        uint64_t seed) {
  return std::make_unique<Sequential>(spec.input, build_layers(spec, seed), max_batch, backend,
                                      seed);
}

}  // namespace tuner::training
