// Reading a model's weights back from ONNX: the engine's own export round trip, a graph in
// torch.onnx.export's style (MatMul + Add, Gemm, GELU's erf formula, Reshape), and the refusals.
#include "training/export/onnx_import.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"
#include "training/backends/cpu/cpu_backend.h"
#include "training/export/onnx_export.h"
#include "training/init_from.h"
#include "training/model_spec.h"

namespace tuner::training {
namespace {

// Every operator the exporter writes: conv2d, batch norm, a fused ReLU, pooling, a residual block
// with a projection and one with the identity, GELU, layer norm, dropout, linear layers.
constexpr char kSpec[] = R"({"input": [1, 8, 8], "layers": [
    {"type": "conv2d", "out": 4, "kernel": 3, "padding": 1}, {"type": "batch_norm"},
    {"type": "relu"}, {"type": "max_pool2d", "kernel": 2},
    {"type": "residual", "projection": true, "body": [
        {"type": "conv2d", "out": 6, "kernel": 3, "padding": 1, "stride": 2},
        {"type": "batch_norm", "momentum": 0.2}, {"type": "relu"},
        {"type": "conv2d", "out": 6, "kernel": 3, "padding": 1}]},
    {"type": "residual", "body": [
        {"type": "conv2d", "out": 6, "kernel": 3, "padding": 1, "bias": false},
        {"type": "batch_norm"}]},
    {"type": "relu"}, {"type": "avg_pool2d", "kernel": 2, "stride": 1},
    {"type": "global_avg_pool"},
    {"type": "linear", "out": 16}, {"type": "gelu"}, {"type": "layer_norm"},
    {"type": "dropout", "p": 0.3}, {"type": "linear", "out": 3}]})";

TEST(OnnxImport, TheEnginesOwnExportGivesBackItsWeights) {
  CpuBackend backend(1);
  const ModelSpec spec = parse_model_spec(kSpec);
  auto model = build_model(spec, 4, backend, 3);
  std::vector<float> buffers = model->parameters().buffer_values_to_host();
  for (size_t i = 0; i < buffers.size(); ++i) buffers[i] += 0.125f * static_cast<float>(i % 5);
  model->parameters().set_buffer_values(buffers);
  OnnxExportOptions options;
  options.input_transform = OnnxInputTransform{.uint8 = true, .divisor = 255, .mean = 0.3f};
  const Checkpoint imported = import_onnx_bytes(onnx_model_bytes(spec, *model, options));

  // Into a fresh model of the original spec: the weights are the exported ones.
  auto fresh = build_model(spec, 4, backend, 99);
  load_weights(imported, spec, fresh->parameters());
  EXPECT_EQ(fresh->parameters().values_to_host(), model->parameters().values_to_host());
  EXPECT_EQ(fresh->parameters().buffer_values_to_host(), buffers);
  // The graph read back is the model, its dropout (an Identity in the graph) left out.
  const ModelSpec read = parse_model_spec(imported.model_spec);
  EXPECT_EQ(read.layers.size(), spec.layers.size() - 1);
  EXPECT_EQ(read.output, spec.output);
  auto rebuilt = build_model(read, 4, backend, 5);
  rebuilt->parameters().set_values(imported.parameters);
  rebuilt->parameters().set_buffer_values(imported.buffers);
  std::vector<float> x(4 * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
  const Tensor input = Tensor::borrow_const(x.data(), Shape{4, 1, 8, 8});
  const std::vector<float> want = [&] {
    const Tensor& y = model->forward(input, Mode::kEval);
    return std::vector<float>(y.data(), y.data() + y.numel());
  }();
  const Tensor& got = rebuilt->forward(input, Mode::kEval);
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.data()[i], want[i], 1e-5) << i;
}

// --- A graph as torch.onnx.export writes one ------------------------------------------------

void add_initializer(onnx::GraphProto& g, const std::string& name, std::vector<int64_t> dims,
                     const std::vector<float>& values) {
  onnx::TensorProto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(
      std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
}

onnx::NodeProto& add_node(onnx::GraphProto& g, const std::string& op,
                          std::vector<std::string> inputs, const std::string& output) {
  onnx::NodeProto* n = g.add_node();
  n->set_op_type(op);
  n->set_name("/" + output + "/" + op);
  for (const std::string& i : inputs) n->add_input(i);
  n->add_output(output);
  return *n;
}

// x [N, 2, 2] -> Reshape [N, 4] -> fc1 (MatMul + Add) -> GELU (erf) -> fc2 (Gemm, transB) ->
// logits [N, 3], with PyTorch's initializer and node names. fc1's weight W1 is [4, 5] ([I, O],
// as MatMul takes it), fc2's W2 [3, 5] ([O, I]).
std::string torch_style_graph(const std::vector<float>& w1, const std::vector<float>& b1,
                              const std::vector<float>& w2, const std::vector<float>& b2,
                              const std::string& extra_op = "") {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto& g = *m.mutable_graph();
  onnx::ValueInfoProto* in = g.add_input();
  in->set_name("x");
  auto* type = in->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  type->mutable_shape()->add_dim()->set_dim_param("batch");
  type->mutable_shape()->add_dim()->set_dim_value(2);
  type->mutable_shape()->add_dim()->set_dim_value(2);
  add_initializer(g, "onnx::MatMul_10", {4, 5}, w1);
  add_initializer(g, "fc1.bias", {5}, b1);
  add_initializer(g, "fc2.weight", {3, 5}, w2);
  add_initializer(g, "fc2.bias", {3}, b2);
  onnx::NodeProto& shape = add_node(g, "Constant", {}, "shape");
  onnx::AttributeProto* value = shape.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  value->mutable_t()->add_dims(2);
  value->mutable_t()->add_int64_data(-1);
  value->mutable_t()->add_int64_data(4);
  add_initializer(g, "sqrt2", {}, {1.4142135f});
  add_initializer(g, "one", {}, {1.0f});
  add_initializer(g, "half", {}, {0.5f});
  add_node(g, "Reshape", {"x", "shape"}, "flat");
  add_node(g, "MatMul", {"flat", "onnx::MatMul_10"}, "mm");
  add_node(g, "Add", {"mm", "fc1.bias"}, "h");
  add_node(g, "Div", {"h", "sqrt2"}, "d");
  add_node(g, "Erf", {"d"}, "e");
  add_node(g, "Add", {"e", "one"}, "p");
  add_node(g, "Mul", {"h", "p"}, "q");
  add_node(g, "Mul", {"q", "half"}, "g");
  std::string last = "g";
  if (!extra_op.empty()) {
    add_node(g, extra_op, {"g"}, "z");
    last = "z";
  }
  onnx::NodeProto& gemm = add_node(g, "Gemm", {last, "fc2.weight", "fc2.bias"}, "logits");
  onnx::AttributeProto* trans = gemm.add_attribute();
  trans->set_name("transB");
  trans->set_type(onnx::AttributeProto::INT);
  trans->set_i(1);
  g.add_output()->set_name("logits");
  return m.SerializeAsString();
}

TEST(OnnxImport, AGraphInPyTorchsStylePredictsTheSame) {
  std::vector<float> w1(20), b1(5), w2(15), b2(3);
  for (size_t i = 0; i < w1.size(); ++i) w1[i] = 0.1f * std::cos(static_cast<float>(i));
  for (size_t i = 0; i < b1.size(); ++i) b1[i] = 0.05f * static_cast<float>(i) - 0.1f;
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = 0.2f * std::sin(static_cast<float>(i) + 1);
  for (size_t i = 0; i < b2.size(); ++i) b2[i] = 0.01f * static_cast<float>(i);
  const Checkpoint c = import_onnx_bytes(torch_style_graph(w1, b1, w2, b2));
  const ModelSpec spec = parse_model_spec(c.model_spec);
  EXPECT_EQ(nlohmann::json::parse(c.model_spec),
            nlohmann::json::parse(R"({"input": [2, 2], "layers": [{"type": "flatten"},
                {"type": "linear", "out": 5}, {"type": "gelu"}, {"type": "linear", "out": 3}]})"));
  CpuBackend backend(1);
  auto model = build_model(spec, 2, backend, 0);
  model->parameters().set_values(c.parameters);
  const std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.25f, -0.3f, 0.7f, 1.5f, -2.0f};
  const Tensor& y = model->forward(Tensor::borrow_const(x.data(), Shape{2, 2, 2}), Mode::kEval);
  for (int n = 0; n < 2; ++n) {
    // The graph's function, by hand in double.
    double h[5];
    for (int o = 0; o < 5; ++o) {
      double s = b1[o];
      for (int i = 0; i < 4; ++i) s += x[n * 4 + i] * w1[i * 5 + o];
      h[o] = s * 0.5 * (1 + std::erf(s / std::sqrt(2.0)));
    }
    for (int k = 0; k < 3; ++k) {
      double s = b2[k];
      for (int o = 0; o < 5; ++o) s += h[o] * w2[k * 5 + o];
      EXPECT_NEAR(y.data()[n * 3 + k], s, 1e-5) << n << " " << k;
    }
  }
}

TEST(OnnxImport, AnOperatorWithoutALayerIsRefusedNamingTheNode) {
  const std::vector<float> w1(20), b1(5), w2(15), b2(3);
  try {
    import_onnx_bytes(torch_style_graph(w1, b1, w2, b2, "Softmax"));
    FAIL() << "a Softmax was imported";
  } catch (const OnnxImportError& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with(
        "node '/z/Softmax' (Softmax): operator Softmax has no engine layer (supported: Gemm,"))
        << e.what();
  }
  EXPECT_THROW(import_onnx_bytes("not a model"), OnnxImportError);
}

// A graph of one input "x" [N, 4] and the nodes and initializers `build` adds.
template <typename Build>
std::string graph_of(Build build) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto& g = *m.mutable_graph();
  onnx::ValueInfoProto* in = g.add_input();
  in->set_name("x");
  auto* shape = in->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->add_dim()->set_dim_param("N");
  shape->add_dim()->set_dim_value(4);
  build(g);
  return m.SerializeAsString();
}

void expect_refused(const std::string& bytes, const std::string& message) {
  try {
    import_onnx_bytes(bytes);
    FAIL() << "imported; expected: " << message;
  } catch (const OnnxImportError& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

// torch.onnx.export (its default, dynamo exporter) saves larger weights as external data: the
// initializer names a file beside the model ("location", "offset", "length"), which
// import_onnx_file reads; the bytes alone cannot name it, and a location outside the model's
// directory or a range past the file's end is refused.
TEST(OnnxImport, WeightsSavedAsExternalDataBesideTheFileAreRead) {
  std::vector<float> w1(20), b1(5), w2(15), b2(3);
  for (size_t i = 0; i < w1.size(); ++i) w1[i] = 0.1f * std::cos(static_cast<float>(i));
  for (size_t i = 0; i < b1.size(); ++i) b1[i] = 0.05f * static_cast<float>(i) - 0.1f;
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = 0.2f * std::sin(static_cast<float>(i) + 1);
  for (size_t i = 0; i < b2.size(); ++i) b2[i] = 0.01f * static_cast<float>(i);
  const std::string inline_bytes = torch_style_graph(w1, b1, w2, b2);
  const Checkpoint want = import_onnx_bytes(inline_bytes);

  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("tuner_onnx_import_external_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // The two weight matrices moved to model.onnx.data, after 8 bytes of padding, as PyTorch does
  // with the tensors above its size threshold; the biases stay in the file.
  // `location` is what the initializers name.
  const auto with_external = [&](const std::string& location) {
    onnx::ModelProto m;
    m.ParseFromString(inline_bytes);
    std::string data(8, '\0');
    for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer()) {
      if (t.dims_size() != 2) continue;
      const size_t offset = data.size();
      data += t.raw_data();
      t.clear_raw_data();
      t.set_data_location(onnx::TensorProto::EXTERNAL);
      for (const auto& [key, value] : {std::pair<std::string, std::string>{"location", location},
                                       {"offset", std::to_string(offset)},
                                       {"length", std::to_string(data.size() - offset)}}) {
        onnx::StringStringEntryProto* e = t.add_external_data();
        e->set_key(key);
        e->set_value(value);
      }
    }
    std::ofstream(dir / "model.onnx.data", std::ios::binary) << data;
    std::ofstream(dir / "model.onnx", std::ios::binary) << m.SerializeAsString();
    return m.SerializeAsString();
  };

  const std::string bytes = with_external("model.onnx.data");
  const Checkpoint got = import_onnx_file((dir / "model.onnx").string());
  EXPECT_EQ(got.model_spec, want.model_spec);
  EXPECT_EQ(got.parameters, want.parameters);

  expect_refused(bytes, "initializer 'onnx::MatMul_10': its data is in another file");
  const auto file_refused = [&](const std::string& message) {
    try {
      import_onnx_file((dir / "model.onnx").string());
      ADD_FAILURE() << "imported; expected: " << message;
    } catch (const OnnxImportError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  with_external("../model.onnx.data");
  file_refused("external data location \"../model.onnx.data\" must be a file name relative to");
  with_external((dir / "model.onnx.data").string());
  file_refused("must be a file name relative to the model's directory");
  with_external("model.onnx.data");
  std::filesystem::resize_file(dir / "model.onnx.data", 40);
  file_refused("initializer 'onnx::MatMul_10': external data bytes [8, 88) are past the end of");
  std::filesystem::remove(dir / "model.onnx.data");
  file_refused("external data " + (dir / "model.onnx.data").string() + " cannot be read");
  std::filesystem::remove_all(dir);
}

// The import reads a node's first output and a binary operator's two inputs: a node without
// them is refused rather than read past its lists.
TEST(OnnxImport, ANodeWithoutItsOutputOrInputsIsRefused) {
  expect_refused(graph_of([](onnx::GraphProto& g) {
                   onnx::NodeProto* n = g.add_node();
                   n->set_name("c");
                   n->set_op_type("Constant");
                 }),
                 "node 'c' (Constant): it has no output");
  expect_refused(graph_of([](onnx::GraphProto& g) {
                   add_initializer(g, "w", {4, 2}, std::vector<float>(8, 0.5f));
                   add_node(g, "MatMul", {"x", "w"}, "mm");
                   add_node(g, "Add", {"mm"}, "y");
                 }),
                 "node '/y/Add' (Add): it has 1 inputs, not 2");
}

// An initializer's dimensions multiply to its element count: a negative one, or a product past
// int64 (which could wrap to the size of the data given), is refused.
TEST(OnnxImport, AnInitializerWithANegativeOrOverflowingShapeIsRefused) {
  expect_refused(graph_of([](onnx::GraphProto& g) {
                   add_initializer(g, "w", {-4, -2}, std::vector<float>(8, 0.5f));
                   add_node(g, "MatMul", {"x", "w"}, "y");
                 }),
                 "initializer 'w': a negative dimension (-4)");
  expect_refused(graph_of([](onnx::GraphProto& g) {
                   add_initializer(g, "w", {int64_t{1} << 62, 4, 1}, std::vector<float>(1, 0.5f));
                   add_node(g, "MatMul", {"x", "w"}, "y");
                 }),
                 "initializer 'w': its shape has more than 2147483648 elements");
}

}  // namespace
}  // namespace tuner::training
