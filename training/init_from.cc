#include "training/init_from.h"

#include <algorithm>
#include <cstdlib>

namespace tuner::training {

namespace {

int64_t aligned(int64_t n) {
  constexpr int64_t a = ParameterArena::kArenaAlignment;
  return (n + a - 1) / a * a;
}

// The slots' shapes, "weight [10, 64], bias [10]".
std::string slot_list(const WeightedLayer& layer) {
  std::string text;
  for (const WeightSlot& s : layer.slots) {
    text += (text.empty() ? "" : ", ") + s.name + " " + s.shape.to_string();
  }
  return text;
}

// The first difference between two layers of the same position; empty when they match.
std::string difference(const WeightedLayer& model, const WeightedLayer& source) {
  if (model.kind != source.kind) {
    return "the model's " + model.path + " is " + model.kind + ", the source's " + source.path +
           " is " + source.kind;
  }
  if (model.slots.size() != source.slots.size()) {
    return "the model's " + model.path + " (" + model.kind + ") has " + slot_list(model) +
           ", the source's " + source.path + " has " + slot_list(source);
  }
  for (size_t i = 0; i < model.slots.size(); ++i) {
    const WeightSlot& m = model.slots[i];
    const WeightSlot& s = source.slots[i];
    if (m.name != s.name || m.buffer != s.buffer) {
      return "the model's " + model.path + " (" + model.kind + ") has " + slot_list(model) +
             ", the source's " + source.path + " has " + slot_list(source);
    }
    if (!(m.shape == s.shape)) {
      return "the model's " + model.path + " (" + model.kind + ") has " + m.name + " " +
             m.shape.to_string() + ", the source's " + source.path + " has " + s.name + " " +
             s.shape.to_string();
    }
  }
  return {};
}

struct Plan {
  std::vector<WeightedLayer> model, source;
  size_t loaded = 0;  // the first `loaded` layers of each are copied
  bool head_replaced = false;
};

// Matches the layers of the two models; throws InitFromError naming the first that differs.
Plan plan(const Checkpoint& source, const ModelSpec& spec, const InitFromOptions& options) {
  ModelSpec source_spec;
  try {
    source_spec = parse_model_spec(source.model_spec);
  } catch (const SpecError& e) {
    throw InitFromError(std::string("its model spec does not parse: ") + e.what(), false);
  }
  Plan p{weighted_layers(spec), weighted_layers(source_spec)};
  int64_t values = 0, buffers = 0;
  for (const WeightedLayer& l : p.source) {
    values = std::max(values, l.end);
    for (const WeightSlot& s : l.slots) {
      if (s.buffer) buffers = std::max(buffers, s.offset + s.shape.numel());
    }
  }
  if (static_cast<int64_t>(source.parameters.size()) != values ||
      static_cast<int64_t>(source.buffers.size()) != buffers) {
    throw InitFromError(
        "its weights do not fit its own model spec: " + std::to_string(source.parameters.size()) +
            " parameter and " + std::to_string(source.buffers.size()) +
            " buffer values, the spec needs " + std::to_string(values) + " and " +
            std::to_string(buffers),
        false);
  }
  const size_t n = p.model.size();
  const size_t matched = options.replace_head && n > 0 ? n - 1 : n;
  if (options.replace_head && n == 0) {
    throw InitFromError("the model has no layer with weights to replace", false);
  }
  for (size_t k = 0; k < matched; ++k) {
    if (k >= p.source.size()) {
      throw InitFromError("layer with weights " + std::to_string(k) +
                              " does not match: the model's " + p.model[k].describe() +
                              " has none in the source, which has " +
                              std::to_string(p.source.size()) + " layers with weights",
                          false);
    }
    const std::string diff = difference(p.model[k], p.source[k]);
    if (!diff.empty()) {
      const bool head = k + 1 == n && p.source.size() == n;
      throw InitFromError("layer with weights " + std::to_string(k) + " does not match: " + diff,
                          head);
    }
  }
  if (p.source.size() != n) {
    const size_t k = std::min(p.source.size(), n);
    const std::string extra =
        p.source.size() > n ? "the source's " + p.source[k].describe() + " has none in the model"
                            : "the model's " + p.model[k].describe() + " has none in the source";
    throw InitFromError("the model has " + std::to_string(n) + " layers with weights, the source " +
                            std::to_string(p.source.size()) + ": layer with weights " +
                            std::to_string(k) + " does not match: " + extra,
                        false);
  }
  p.loaded = matched;
  p.head_replaced = matched < n;
  return p;
}

}  // namespace

std::string WeightedLayer::describe() const {
  return kind + " at " + path + " (" + slot_list(*this) + ")";
}

int64_t top_level_layer_index(const std::string& path) {
  constexpr std::string_view kPrefix = "layers[";
  if (!path.starts_with(kPrefix)) return -1;
  const size_t close = path.find(']');
  if (close == std::string::npos || close == kPrefix.size()) return -1;
  const std::string digits = path.substr(kPrefix.size(), close - kPrefix.size());
  if (digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  if (close + 1 != path.size() && path[close + 1] != '.') return -1;
  return std::strtoll(digits.c_str(), nullptr, 10);
}

std::vector<WeightedLayer> weighted_layers(const ModelSpec& spec) {
  const std::vector<std::unique_ptr<Layer>> layers = build_layers(spec, 0);
  std::vector<WeightedLayer> out;
  int64_t value_at = 0, buffer_at = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::vector<ParamSpec> params = layers[i]->parameter_specs();
    const std::vector<BufferSpec> buffers = layers[i]->buffer_specs();
    if (params.empty() && buffers.empty()) continue;
    WeightedLayer l{.spec_index = i,
                    .path = spec.layers[i].path,
                    .kind = std::string(layers[i]->kind()),
                    .begin = value_at};
    for (const ParamSpec& p : params) {
      l.slots.push_back({.name = p.name, .shape = p.shape, .offset = value_at});
      value_at += aligned(p.shape.numel());
    }
    for (const BufferSpec& b : buffers) {
      l.slots.push_back({.name = b.name, .shape = b.shape, .offset = buffer_at, .buffer = true});
      buffer_at += b.shape.numel();
    }
    l.end = value_at;
    out.push_back(std::move(l));
  }
  return out;
}

InitFromResult check_weights_fit(const Checkpoint& source, const ModelSpec& spec,
                                 const InitFromOptions& options) {
  const Plan p = plan(source, spec, options);
  return {.layers_loaded = p.loaded, .head_replaced = p.head_replaced};
}

InitFromResult load_weights(const Checkpoint& source, const ModelSpec& spec, ParameterArena& arena,
                            const InitFromOptions& options) {
  const Plan p = plan(source, spec, options);
  std::vector<float> values = arena.values_to_host();
  std::vector<float> buffers = arena.buffer_values_to_host();
  for (size_t k = 0; k < p.loaded; ++k) {
    const WeightedLayer& to = p.model[k];
    const WeightedLayer& from = p.source[k];
    for (size_t i = 0; i < to.slots.size(); ++i) {
      const WeightSlot& t = to.slots[i];
      const WeightSlot& f = from.slots[i];
      const std::vector<float>& src = f.buffer ? source.buffers : source.parameters;
      std::vector<float>& dst = t.buffer ? buffers : values;
      if (t.offset + t.shape.numel() > static_cast<int64_t>(dst.size())) {
        throw InitFromError("internal: " + to.path + "'s " + t.name +
                                " lies outside the model's arena (" + std::to_string(dst.size()) +
                                " values)",
                            false);
      }
      std::copy_n(src.begin() + f.offset, f.shape.numel(), dst.begin() + t.offset);
    }
  }
  arena.set_values(values);
  arena.set_buffer_values(buffers);
  return {.layers_loaded = p.loaded, .head_replaced = p.head_replaced};
}

std::vector<ParamGroup> layer_param_groups(const ModelSpec& spec,
                                           std::span<const float> layer_factors) {
  std::vector<ParamGroup> groups;
  for (const WeightedLayer& l : weighted_layers(spec)) {
    // The embeddings of the input take the factor of the first layer after them.
    const int64_t i = l.kind == "embedding" ? 0 : top_level_layer_index(l.path);
    const float factor =
        i >= 0 && i < static_cast<int64_t>(layer_factors.size()) ? layer_factors[i] : 1.0f;
    if (factor == 1.0f || l.end == l.begin) continue;
    groups.push_back({.begin = l.begin, .size = l.end - l.begin, .lr_factor = factor});
  }
  return groups;
}

}  // namespace tuner::training
