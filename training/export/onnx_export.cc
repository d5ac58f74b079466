#include "training/export/onnx_export.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <string_view>

#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"

namespace tuner::training {
namespace {

constexpr char kBatchDim[] = "N";
constexpr char kProducerName[] = "tuner";
// protobuf refuses to serialize messages of 2 GiB or more; ONNX's external data is not used.
constexpr int64_t kMaxModelBytes = (int64_t{1} << 31) - (int64_t{1} << 20);

// An ONNX tensor name for a JSON path: "layers[3].body[1]" -> "layers_3_body_1" (C identifier
// syntax, as the ONNX spec asks of names).
std::string tensor_name(std::string_view path) {
  std::string name;
  for (char c : path) {
    if (c == '[' || c == '.') {
      name += '_';
    } else if (c != ']') {
      name += c;
    }
  }
  return name;
}

std::string join_dims(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

void set_tensor_type(onnx::ValueInfoProto& value, const std::string& name, const Shape& sample,
                     int32_t elem_type = onnx::TensorProto::FLOAT) {
  value.set_name(name);
  onnx::TypeProto_Tensor* tensor = value.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem_type);
  onnx::TensorShapeProto* shape = tensor->mutable_shape();
  shape->add_dim()->set_dim_param(kBatchDim);
  for (int64_t d : sample.dims()) shape->add_dim()->set_dim_value(d);
}

// Builds the graph of a model spec, one layer at a time, taking the weights from the arena.
// Parameters and buffers are found by the names LayerChain and Residual give them
// ("<i>.<kind>.<name>", "<i>.residual.body.<j>.<kind>.<name>"), so a model that was not built
// from the spec is detected: a name or shape that is missing, or a parameter left over.
class GraphBuilder {
 public:
  // The weights are read from host copies of the arena, which may live in device memory.
  GraphBuilder(const ParameterArena& arena, onnx::GraphProto& graph)
      : arena_(arena),
        g_(graph),
        values_(arena.values_to_host()),
        buffer_values_(arena.buffer_values_to_host()) {
    for (size_t i = 0; i < arena.param_specs().size(); ++i) {
      const ParamSpec& spec = arena.param_specs()[i];
      arrays_.emplace(spec.name, Array{values_.data() + arena.offset(i), &spec.shape});
    }
    int64_t at = 0;
    for (const BufferSpec& spec : arena.buffer_specs()) {
      arrays_.emplace(spec.name, Array{buffer_values_.data() + at, &spec.shape});
      at += spec.shape.numel();
    }
  }

  // Emits the layers of a chain applied to tensor `x`; the last layer's output is named `out`.
  // `prefix` is the arena name prefix of the chain ("" at the top, "3.residual.body." inside).
  void chain(const std::vector<LayerSpec>& layers, const std::string& prefix, const std::string& x,
             const std::string& out) {
    std::string at = x;
    for (size_t i = 0; i < layers.size(); ++i) {
      const LayerSpec& s = layers[i];
      const std::string y = i + 1 == layers.size() ? out : tensor_name(s.path);
      layer(s, prefix + std::to_string(i) + "." + s.type + ".", at, y);
      at = y;
    }
  }

  // Emits the nodes of `t` on the graph input `x` [N, sample...], the sample of rank
  // `sample_rank`; returns the tensor that holds the model's input (x itself when no step changes
  // anything).
  std::string input_transform(const OnnxInputTransform& t, const std::string& x, int sample_rank) {
    const std::string path = "input";
    std::string at = x;
    if (t.uint8) {
      onnx::NodeProto& cast = node("Cast", {at}, "input_float", path);
      attr_int(cast, "to", onnx::TensorProto::FLOAT);
      at = "input_float";
    }
    if (t.divisor != 1.0f) {
      node("Div", {at, scalar("input_divisor", t.divisor)}, "input_scaled", path);
      at = "input_scaled";
    }
    if (!t.feature_mean.empty()) {
      // One value per channel, [K, 1, ...] (the sample's rank) broadcast against [N, K, ...]:
      // [F] against a table's [N, F], [C, 1, 1] against an image's [N, C, H, W].
      std::vector<float> inv(t.feature_stddev.size());
      for (size_t f = 0; f < inv.size(); ++f) inv[f] = 1.0f / t.feature_stddev[f];
      node("Sub", {at, channel_constant("input_mean", t.feature_mean, sample_rank)},
           "input_centered", path);
      node("Mul", {"input_centered", channel_constant("input_inv_stddev", inv, sample_rank)},
           "input_normalized", path);
      at = "input_normalized";
    } else if (t.mean != 0.0f || t.stddev != 1.0f) {
      node("Sub", {at, scalar("input_mean", t.mean)}, "input_centered", path);
      // The reciprocal in float32, as training::Normalizer multiplies by it.
      node("Mul", {"input_centered", scalar("input_inv_stddev", 1.0f / t.stddev)},
           "input_normalized", path);
      at = "input_normalized";
    }
    return at;
  }

  // Throws when a parameter or buffer of the arena was not exported.
  void check_all_used() const {
    for (const auto& [name, array] : arrays_) {
      if (!used_.contains(name)) {
        throw OnnxExportError("model", "the model has the parameter \"" + name +
                                           "\" that its spec does not declare; was it built from "
                                           "this spec?");
      }
    }
  }

  // Each layer's output tensor, its expected sample shape and its JSON path, in graph order.
  struct Expected {
    std::string tensor;
    Shape sample;
    std::string path;
  };
  const std::vector<Expected>& expected() const { return expected_; }

 private:
  struct Array {
    const float* data;
    const Shape* shape;
  };

  void layer(const LayerSpec& s, const std::string& prefix, const std::string& x,
             const std::string& y) {
    expected_.push_back({y, s.output, s.path});
    const std::string base = tensor_name(s.path);
    const std::string& t = s.type;
    if (t == "linear") {
      // y[N,O] = x[N,I] W[O,I]^T + b[O]
      const int64_t in = s.input[0];
      std::vector<std::string> inputs = {x, weight(s, prefix, "weight", Shape{s.out, in})};
      if (s.bias) inputs.push_back(weight(s, prefix, "bias", Shape{s.out}));
      const std::string z = s.activation == Activation::kNone ? y : base + "_gemm";
      onnx::NodeProto& gemm = node("Gemm", inputs, z, s.path);
      attr_int(gemm, "transB", 1);
      activation(s, s.activation, z, y);
    } else if (t == "conv2d") {
      const int64_t c = s.input[0], k = s.kernel;
      std::vector<std::string> inputs = {x, weight(s, prefix, "weight", Shape{s.out, c, k, k})};
      if (s.bias) inputs.push_back(weight(s, prefix, "bias", Shape{s.out}));
      const std::string z = s.activation == Activation::kNone ? y : base + "_conv";
      onnx::NodeProto& conv = node("Conv", inputs, z, s.path);
      window(conv, s);
      attr_ints(conv, "dilations", {1, 1});
      attr_int(conv, "group", 1);
      activation(s, s.activation, z, y);
    } else if (t == "max_pool2d") {
      onnx::NodeProto& pool = node("MaxPool", {x}, y, s.path);
      window(pool, s);  // padded cells never win, as the engine's -inf padding
      attr_int(pool, "ceil_mode", 0);
    } else if (t == "avg_pool2d") {
      onnx::NodeProto& pool = node("AveragePool", {x}, y, s.path);
      window(pool, s);
      attr_int(pool, "ceil_mode", 0);
      attr_int(pool, "count_include_pad", 1);  // the engine counts padding as zeros
    } else if (t == "global_avg_pool") {
      // [N,C,H,W] -> [N,C,1,1] -> [N,C]
      node("GlobalAveragePool", {x}, base + "_pool", s.path);
      attr_int(node("Flatten", {base + "_pool"}, y, s.path), "axis", 1);
    } else if (t == "batch_norm") {
      const Shape c{s.input[0]};
      onnx::NodeProto& bn =
          node("BatchNormalization",
               {x, weight(s, prefix, "gamma", c), weight(s, prefix, "beta", c),
                weight(s, prefix, "running_mean", c), weight(s, prefix, "running_var", c)},
               y, s.path);
      attr_float(bn, "epsilon", s.eps);
      // ONNX weighs the running stats by momentum, PyTorch and the engine the batch stats.
      attr_float(bn, "momentum", 1.0f - s.momentum);
    } else if (t == "layer_norm") {
      const Shape d{s.input[s.input.rank() - 1]};
      onnx::NodeProto& ln =
          node("LayerNormalization",
               {x, weight(s, prefix, "gamma", d), weight(s, prefix, "beta", d)}, y, s.path);
      attr_int(ln, "axis", -1);
      attr_float(ln, "epsilon", s.eps);
      attr_int(ln, "stash_type", onnx::TensorProto::FLOAT);
    } else if (t == "dropout") {
      node("Identity", {x}, y, s.path);  // inference: no mask, no scaling
    } else if (t == "relu" || t == "gelu" || t == "tanh" || t == "sigmoid") {
      static const std::map<std::string_view, Activation> kActivations = {
          {"relu", Activation::kRelu},
          {"gelu", Activation::kGelu},
          {"tanh", Activation::kTanh},
          {"sigmoid", Activation::kSigmoid}};
      activation(s, kActivations.at(t), x, y);
    } else if (t == "flatten") {
      attr_int(node("Flatten", {x}, y, s.path), "axis", 1);
    } else if (t == "embedding") {
      embedding(s, prefix, x, y);
    } else if (t == "residual") {
      // y = body(x) + shortcut(x); the shortcut is x itself when it has no layers.
      chain(s.body, prefix + "body.", x, base + "_body");
      std::string shortcut = x;
      if (!s.shortcut.empty()) {
        shortcut = base + "_shortcut";
        chain(s.shortcut, prefix + "shortcut.", x, shortcut);
      }
      node("Add", {base + "_body", shortcut}, y, s.path);
    } else {
      throw OnnxExportError(s.path, "the layer type \"" + t + "\" has no ONNX export");
    }
  }

  // y[N,O] = Concat(segments of x[N,I], axis 1): the features between embedded ones as Slices,
  // each embedded feature c as Gather(table, Cast<int64>(Gather(x, c, axis 1))). The table is
  // exported [K + 1, D], its last row zeros, so that the index -1 of a category the training data
  // lacked (Gather counts negative indices from the end) gives zeros, as in the engine.
  void embedding(const LayerSpec& s, const std::string& prefix, const std::string& x,
                 const std::string& y) {
    const std::string base = tensor_name(s.path);
    std::vector<std::string> parts;
    int64_t j = 0;
    auto slice = [&](int64_t from, int64_t to) {
      if (from == to) return;
      const std::string name = base + "_features_" + std::to_string(from);
      node("Slice",
           {x, int64_constant(name + "_starts", {from}), int64_constant(name + "_ends", {to}),
            int64_constant(name + "_axes", {1})},
           name, s.path);
      parts.push_back(name);
    };
    for (size_t k = 0; k < s.embedded.size(); ++k) {
      const EmbeddedColumn& c = s.embedded[k];
      slice(j, c.at);
      const std::string name = base + "_" + std::to_string(k);
      attr_int(node("Gather", {x, int64_constant(name + "_at", {}, c.at)}, name + "_value", s.path),
               "axis", 1);
      attr_int(node("Cast", {name + "_value"}, name + "_index", s.path), "to",
               onnx::TensorProto::INT64);
      attr_int(
          node("Gather", {padded_table(s, prefix, k), name + "_index"}, name + "_vector", s.path),
          "axis", 0);
      parts.push_back(name + "_vector");
      j = c.at + 1;
    }
    slice(j, s.input[0]);
    attr_int(node("Concat", parts, y, s.path), "axis", 1);
  }

  // The arena's table<k> [K, D] of an embedding layer as an initializer [K + 1, D], its last row
  // zeros; returns its name.
  std::string padded_table(const LayerSpec& s, const std::string& prefix, size_t k) {
    const EmbeddedColumn& c = s.embedded[k];
    const std::string name = "table" + std::to_string(k);
    const std::string key = prefix + name;
    auto it = arrays_.find(key);
    const Shape shape{c.categories, c.dim};
    if (it == arrays_.end() || !(*it->second.shape == shape)) {
      throw OnnxExportError(s.path, "the model has no parameter \"" + key + "\" " +
                                        shape.to_string() +
                                        " for this layer; was it built from "
                                        "this spec?");
    }
    used_.insert(key);
    const std::string init_name = tensor_name(s.path) + "_" + name;
    onnx::TensorProto* tensor = g_.add_initializer();
    tensor->set_name(init_name);
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    tensor->add_dims(c.categories + 1);
    tensor->add_dims(c.dim);
    std::vector<float> values(it->second.data, it->second.data + shape.numel());
    values.resize(static_cast<size_t>((c.categories + 1) * c.dim), 0.0f);
    tensor->set_raw_data(reinterpret_cast<const char*>(values.data()),
                         values.size() * sizeof(float));
    weight_bytes_ += static_cast<int64_t>(values.size() * sizeof(float));
    if (weight_bytes_ > kMaxModelBytes) {
      throw OnnxExportError(s.path,
                            "the weights exceed 2 GiB, the limit of a single ONNX file "
                            "(external data is not supported)");
    }
    return init_name;
  }

  // An int64 initializer: a vector of `values`, or with `values` empty the scalar `scalar`.
  std::string int64_constant(const std::string& name, std::vector<int64_t> values,
                             int64_t scalar = 0) {
    onnx::TensorProto* tensor = g_.add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::INT64);
    if (values.empty()) {
      tensor->add_int64_data(scalar);
    } else {
      tensor->add_dims(static_cast<int64_t>(values.size()));
      for (int64_t v : values) tensor->add_int64_data(v);
    }
    return name;
  }

  // y = act(x); the identity is a plain rename (x == y) for a layer without activation.
  void activation(const LayerSpec& s, Activation act, const std::string& x, const std::string& y) {
    switch (act) {
      case Activation::kNone:
        return;
      case Activation::kRelu:
        node("Relu", {x}, y, s.path);
        return;
      case Activation::kTanh:
        node("Tanh", {x}, y, s.path);
        return;
      case Activation::kSigmoid:
        node("Sigmoid", {x}, y, s.path);
        return;
      case Activation::kGelu: {
        // Exact GELU as the engine computes it: 0.5 * x * (1 + erf(x / sqrt(2))). Gelu itself
        // is an operator from opset 20 on.
        const std::string base = tensor_name(s.path) + "_gelu";
        node("Mul", {x, scalar("const_rsqrt2", 0.70710678118654752f)}, base + "_scaled", s.path);
        node("Erf", {base + "_scaled"}, base + "_erf", s.path);
        node("Add", {base + "_erf", scalar("const_one", 1.0f)}, base + "_cdf2", s.path);
        node("Mul", {x, base + "_cdf2"}, base + "_x_cdf2", s.path);
        node("Mul", {base + "_x_cdf2", scalar("const_half", 0.5f)}, y, s.path);
        return;
      }
    }
    throw OnnxExportError(
        s.path, "activation " + std::to_string(static_cast<int>(act)) + " has no ONNX export");
  }

  void window(onnx::NodeProto& n, const LayerSpec& s) {
    attr_ints(n, "kernel_shape", {s.kernel, s.kernel});
    attr_ints(n, "strides", {s.stride, s.stride});
    attr_ints(n, "pads", {s.padding, s.padding, s.padding, s.padding});
  }

  // Adds the arena array `prefix + name` as an initializer named after the layer; returns its
  // name. Throws naming the layer when the model has no such array or another shape.
  std::string weight(const LayerSpec& s, const std::string& prefix, const std::string& name,
                     const Shape& shape) {
    const std::string key = prefix + name;
    auto it = arrays_.find(key);
    if (it == arrays_.end()) {
      throw OnnxExportError(s.path, "the model has no parameter \"" + key +
                                        "\" for this layer; was it built from this spec?");
    }
    if (!(*it->second.shape == shape)) {
      throw OnnxExportError(s.path, "the model's parameter \"" + key + "\" is " +
                                        it->second.shape->to_string() + ", the spec needs " +
                                        shape.to_string());
    }
    used_.insert(key);
    const std::string init_name = tensor_name(s.path) + "_" + name;
    onnx::TensorProto* tensor = g_.add_initializer();
    tensor->set_name(init_name);
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape.dims()) tensor->add_dims(d);
    // raw_data is little-endian float32, the layout of the arena on the hosts we build for.
    tensor->set_raw_data(reinterpret_cast<const char*>(it->second.data),
                         static_cast<size_t>(shape.numel()) * sizeof(float));
    weight_bytes_ += shape.numel() * static_cast<int64_t>(sizeof(float));
    if (weight_bytes_ > kMaxModelBytes) {
      throw OnnxExportError(s.path,
                            "the weights exceed 2 GiB, the limit of a single ONNX file "
                            "(external data is not supported)");
    }
    return init_name;
  }

  // A float scalar initializer, added once.
  std::string scalar(const std::string& name, float value) {
    if (scalars_.insert(name).second) {
      onnx::TensorProto* tensor = g_.add_initializer();
      tensor->set_name(name);
      tensor->set_data_type(onnx::TensorProto::FLOAT);
      tensor->add_float_data(value);
    }
    return name;
  }

  // A float32 initializer [values.size(), 1, ...] of rank `rank` >= 1.
  std::string channel_constant(const std::string& name, const std::vector<float>& values,
                               int rank) {
    onnx::TensorProto* tensor = g_.add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    tensor->add_dims(static_cast<int64_t>(values.size()));
    for (int d = 1; d < rank; ++d) tensor->add_dims(1);
    for (float v : values) tensor->add_float_data(v);
    return name;
  }

  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::string& output, const std::string& path) {
    onnx::NodeProto* n = g_.add_node();
    n->set_op_type(op);
    n->set_name(output + "_" + op);
    n->set_doc_string(path);
    for (const std::string& in : inputs) n->add_input(in);
    n->add_output(output);
    return *n;
  }

  static void attr_int(onnx::NodeProto& n, const std::string& name, int64_t value) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  }
  static void attr_float(onnx::NodeProto& n, const std::string& name, float value) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(value);
  }
  static void attr_ints(onnx::NodeProto& n, const std::string& name,
                        std::initializer_list<int64_t> values) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values) a->add_ints(v);
  }

  const ParameterArena& arena_;
  onnx::GraphProto& g_;
  std::vector<float> values_, buffer_values_;
  std::map<std::string, Array> arrays_;  // arena name -> values
  std::set<std::string> used_, scalars_;
  std::vector<Expected> expected_;
  int64_t weight_bytes_ = 0;
};

// The top-level layers of the model must be those of the spec (nested ones are checked through
// their parameter names).
void check_model_matches(const ModelSpec& spec, const Sequential& model) {
  if (!(model.input_shape() == spec.input)) {
    throw OnnxExportError("model", "the model's input " + model.input_shape().to_string() +
                                       " is not the spec's " + spec.input.to_string());
  }
  if (model.size() != spec.layers.size()) {
    throw OnnxExportError("model", "the model has " + std::to_string(model.size()) +
                                       " layers, the spec " + std::to_string(spec.layers.size()) +
                                       "; was it built from this spec?");
  }
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    if (model.layer(i).kind() != spec.layers[i].type) {
      throw OnnxExportError(spec.layers[i].path, "the model's layer " + std::to_string(i) +
                                                     " is a " + std::string(model.layer(i).kind()) +
                                                     ", the spec's a " + spec.layers[i].type);
    }
  }
}

// Compares the inferred shape of every layer's output with its spec.
void check_inferred_shapes(const onnx::GraphProto& graph,
                           const std::vector<GraphBuilder::Expected>& expected) {
  std::map<std::string, const onnx::ValueInfoProto*> inferred;
  for (const onnx::ValueInfoProto& v : graph.value_info()) inferred[v.name()] = &v;
  for (const onnx::ValueInfoProto& v : graph.output()) inferred[v.name()] = &v;
  for (const GraphBuilder::Expected& e : expected) {
    auto it = inferred.find(e.tensor);
    if (it == inferred.end() || !it->second->type().tensor_type().has_shape()) {
      throw OnnxExportError(
          e.path, "ONNX shape inference gives no shape for its output \"" + e.tensor + "\"");
    }
    const onnx::TensorShapeProto& shape = it->second->type().tensor_type().shape();
    bool same = shape.dim_size() == e.sample.rank() + 1 && shape.dim(0).has_dim_param() &&
                shape.dim(0).dim_param() == kBatchDim;
    std::vector<int64_t> dims;
    for (int i = 1; i < shape.dim_size(); ++i) {
      const onnx::TensorShapeProto_Dimension& d = shape.dim(i);
      dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
      same =
          same && d.has_dim_value() && i - 1 < e.sample.rank() && d.dim_value() == e.sample[i - 1];
    }
    if (!same) {
      throw OnnxExportError(e.path, "ONNX infers the sample shape " + join_dims(dims) +
                                        " for its output, the spec " + e.sample.to_string());
    }
  }
}

std::string errno_text() { return std::strerror(errno); }

// Writes all of `bytes` to fd; false on error (errno set).
bool write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

OnnxExportError::OnnxExportError(std::string where, std::string reason)
    : std::runtime_error(where + ": " + reason),
      where_(std::move(where)),
      reason_(std::move(reason)) {}

std::string onnx_model_bytes(const ModelSpec& spec, const Sequential& model,
                             const OnnxExportOptions& options) {
  const auto& range = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto onnx_range = range.find(onnx::ONNX_DOMAIN);
  if (onnx_range == range.end() || onnx_range->second.second < kOnnxOpset) {
    throw OnnxExportError(
        "model", "the ONNX library supports opsets up to " +
                     std::to_string(onnx_range == range.end() ? 0 : onnx_range->second.second) +
                     ", the exporter needs " + std::to_string(kOnnxOpset));
  }
  check_model_matches(spec, model);

  onnx::ModelProto proto;
  proto.set_ir_version(kOnnxIrVersion);
  proto.set_producer_name(kProducerName);
  proto.set_producer_version(TUNER_VERSION);
  proto.set_domain("tuner");
  if (options.model_version != 0) proto.set_model_version(options.model_version);
  if (!options.doc_string.empty()) proto.set_doc_string(options.doc_string);
  onnx::OperatorSetIdProto* opset = proto.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOnnxOpset);
  std::set<std::string> keys;
  auto add_metadata = [&](const std::string& key, const std::string& value) {
    if (!keys.insert(key).second) {
      throw OnnxExportError("options.metadata", "the key \"" + key + "\" is given twice");
    }
    onnx::StringStringEntryProto* entry = proto.add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
  };
  for (const auto& [key, value] : options.metadata) add_metadata(key, value);
  add_metadata("tuner.model_spec", spec.json);

  onnx::GraphProto* graph = proto.mutable_graph();
  graph->set_name(options.graph_name);
  if (const auto& t = options.input_transform;
      t && (!(t->divisor > 0.0f) || !(t->stddev > 0.0f) || !std::isfinite(t->divisor) ||
            !std::isfinite(t->mean) || !std::isfinite(t->stddev))) {
    throw OnnxExportError("options.input_transform",
                          "divisor and stddev must be finite and > 0, mean finite");
  }
  if (const auto& t = options.input_transform; t && !t->feature_mean.empty()) {
    const auto channels =
        static_cast<size_t>(spec.input.rank() >= 1 ? spec.input.dims()[0] : int64_t{0});
    if (spec.input.rank() < 1 || t->feature_mean.size() != channels ||
        t->feature_stddev.size() != channels) {
      throw OnnxExportError("options.input_transform",
                            "per-channel normalization needs one mean and stddev per element of "
                            "the input's first dimension: the input is " +
                                spec.input.to_string() + ", with " +
                                std::to_string(t->feature_mean.size()) + " means and " +
                                std::to_string(t->feature_stddev.size()) + " stddevs");
    }
    for (size_t f = 0; f < channels; ++f) {
      if (!std::isfinite(t->feature_mean[f]) || !(t->feature_stddev[f] > 0.0f) ||
          !std::isfinite(t->feature_stddev[f])) {
        throw OnnxExportError(
            "options.input_transform",
            "channel " + std::to_string(f) + ": mean must be finite, stddev finite and > 0");
      }
    }
  }
  set_tensor_type(*graph->add_input(), kOnnxInputName, spec.input,
                  options.input_transform && options.input_transform->uint8
                      ? onnx::TensorProto::UINT8
                      : onnx::TensorProto::FLOAT);
  set_tensor_type(*graph->add_output(), kOnnxOutputName, spec.output);
  GraphBuilder builder(model.parameters(), *graph);
  const std::string model_input =
      options.input_transform
          ? builder.input_transform(*options.input_transform, kOnnxInputName, spec.input.rank())
          : std::string(kOnnxInputName);
  builder.chain(spec.layers, "", model_input, kOnnxOutputName);
  builder.check_all_used();

  try {
    onnx::checker::check_model(proto);
  } catch (const std::exception& e) {
    throw OnnxExportError("model", std::string("the ONNX checker rejects the graph: ") + e.what());
  }
  try {
    // Strict: an operator whose shape cannot be inferred, or whose inferred shape contradicts the
    // declared output, is an error.
    onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, false));
  } catch (const std::exception& e) {
    throw OnnxExportError("model", std::string("ONNX shape inference fails: ") + e.what());
  }
  check_inferred_shapes(*graph, builder.expected());

  std::string bytes;
  if (!proto.SerializeToString(&bytes)) {
    throw OnnxExportError("model", "protobuf cannot serialize the ModelProto");
  }
  return bytes;
}

void export_onnx(const ModelSpec& spec, const Sequential& model, const std::filesystem::path& out,
                 const OnnxExportOptions& options) {
  const std::string bytes = onnx_model_bytes(spec, model, options);
  const std::string target = out.string();
  if (out.filename().empty()) throw OnnxExportError(target, "not a file name");
  std::filesystem::path dir = out.parent_path();
  if (dir.empty()) dir = ".";
  // A hidden name beside `out`, unique among concurrent exports: ".model.onnx.tmp.XXXXXX".
  std::string tmp_name = out.filename().string();
  tmp_name.insert(tmp_name.begin(), '.');
  tmp_name.append(".tmp.XXXXXX");
  std::string tmp = (dir / tmp_name).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw OnnxExportError(target, "cannot create a temporary file: " + errno_text());
  auto fail = [&](const std::string& what) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw OnnxExportError(target, what + ": " + why);
  };
  if (::fchmod(fd, 0644) != 0 || !write_all(fd, bytes)) {
    ::close(fd);
    fail("cannot write " + tmp);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail("cannot flush " + tmp);
  }
  if (::close(fd) != 0) fail("cannot close " + tmp);
  if (::rename(tmp.c_str(), target.c_str()) != 0) fail("cannot rename " + tmp + " over it");
  // Make the rename durable; a failure here leaves a complete file, so it is not an error.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace tuner::training
