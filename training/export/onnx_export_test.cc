// ONNX export: every layer kind exports and passes the checker, the graph has the documented
// interface, the file round-trips through the ONNX parser, and a failed export writes nothing.
// The numbers are compared with onnxruntime by the interop test (export/interop/).
#include "training/export/onnx_export.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "onnx/checker.h"
#include "onnx/onnx_pb.h"
#include "training/backends/cpu/cpu_backend.h"
#include "training/data/dataset.h"

namespace tuner::training {
namespace {

struct Built {
  ModelSpec spec;
  std::unique_ptr<Sequential> model;
};

Built build(CpuBackend& backend, const std::string& json, uint64_t seed = 1) {
  Built b;
  b.spec = parse_model_spec(json);
  b.model = build_model(b.spec, 4, backend, seed);
  return b;
}

onnx::ModelProto parse(const std::string& bytes) {
  onnx::ModelProto proto;
  EXPECT_TRUE(proto.ParseFromString(bytes));
  return proto;
}

std::vector<std::string> op_types(const onnx::ModelProto& proto) {
  std::vector<std::string> ops;
  for (const onnx::NodeProto& n : proto.graph().node()) ops.push_back(n.op_type());
  return ops;
}

std::string dims_of(const onnx::ValueInfoProto& v) {
  std::string s;
  for (const auto& d : v.type().tensor_type().shape().dim()) {
    s += (s.empty() ? "" : ",") +
         (d.has_dim_param() ? d.dim_param() : std::to_string(d.dim_value()));
  }
  return s;
}

struct KindCase {
  std::string name;
  std::string json;
  std::vector<std::string> ops;  // the graph's op types, in order
};

class EveryLayerKind : public testing::TestWithParam<KindCase> {};

TEST_P(EveryLayerKind, ExportsAndPassesTheChecker) {
  CpuBackend backend(1);
  const KindCase& c = GetParam();
  Built b = build(backend, c.json);
  const std::string bytes = onnx_model_bytes(b.spec, *b.model);
  onnx::ModelProto proto = parse(bytes);
  EXPECT_NO_THROW(onnx::checker::check_model(proto));
  EXPECT_EQ(op_types(proto), c.ops);
  // Every parameter and buffer of the arena is an initializer (plus GELU's constants).
  int64_t arrays = 0;
  for (const onnx::TensorProto& t : proto.graph().initializer()) {
    if (t.name().rfind("const_", 0) != 0) ++arrays;
  }
  EXPECT_EQ(arrays, static_cast<int64_t>(b.model->parameters().param_specs().size() +
                                         b.model->parameters().buffer_specs().size()));
}

INSTANTIATE_TEST_SUITE_P(
    Onnx, EveryLayerKind,
    testing::Values(
        KindCase{"linear", R"({"input": [4], "layers": [{"type": "linear", "out": 3}]})", {"Gemm"}},
        KindCase{"linear_fused_sigmoid_no_bias",
                 R"({"input": [4], "layers": [{"type": "linear", "out": 3, "bias": false},
                                              {"type": "sigmoid"}]})",
                 {"Gemm", "Sigmoid"}},
        KindCase{"linear_gelu",
                 R"({"input": [4], "layers": [{"type": "linear", "out": 3,
                                               "activation": "gelu"}]})",
                 {"Gemm", "Mul", "Erf", "Add", "Mul", "Mul"}},
        KindCase{"conv2d_relu",
                 R"({"input": [2, 5, 5], "layers": [{"type": "conv2d", "out": 3, "kernel": 3,
                     "stride": 2, "padding": 1, "activation": "relu"}]})",
                 {"Conv", "Relu"}},
        KindCase{"conv2d_tanh_no_bias",
                 R"({"input": [2, 5, 5], "layers": [{"type": "conv2d", "out": 3, "kernel": 2,
                     "bias": false}, {"type": "tanh"}]})",
                 {"Conv", "Tanh"}},
        KindCase{"max_pool2d",
                 R"({"input": [2, 6, 6], "layers": [{"type": "max_pool2d", "kernel": 3,
                     "stride": 2, "padding": 1}]})",
                 {"MaxPool"}},
        KindCase{"avg_pool2d",
                 R"({"input": [2, 6, 6], "layers": [{"type": "avg_pool2d", "kernel": 2,
                     "padding": 1}]})",
                 {"AveragePool"}},
        KindCase{"global_avg_pool",
                 R"({"input": [2, 3, 3], "layers": [{"type": "global_avg_pool"}]})",
                 {"GlobalAveragePool", "Flatten"}},
        KindCase{"batch_norm_2d",
                 R"({"input": [2, 3, 3], "layers": [{"type": "batch_norm", "eps": 0.001}]})",
                 {"BatchNormalization"}},
        KindCase{"batch_norm_1d",
                 R"({"input": [5], "layers": [{"type": "batch_norm"}]})",
                 {"BatchNormalization"}},
        KindCase{"layer_norm",
                 R"({"input": [2, 5], "layers": [{"type": "layer_norm"}]})",
                 {"LayerNormalization"}},
        KindCase{"dropout",
                 R"({"input": [5], "layers": [{"type": "dropout", "p": 0.3}]})",
                 {"Identity"}},
        KindCase{"relu", R"({"input": [5], "layers": [{"type": "relu"}]})", {"Relu"}},
        KindCase{"gelu",
                 R"({"input": [5], "layers": [{"type": "gelu"}]})",
                 {"Mul", "Erf", "Add", "Mul", "Mul"}},
        KindCase{"tanh", R"({"input": [5], "layers": [{"type": "tanh"}]})", {"Tanh"}},
        KindCase{"sigmoid", R"({"input": [5], "layers": [{"type": "sigmoid"}]})", {"Sigmoid"}},
        KindCase{
            "flatten", R"({"input": [2, 3, 4], "layers": [{"type": "flatten"}]})", {"Flatten"}},
        KindCase{"residual_identity",
                 R"({"input": [6], "layers": [{"type": "residual", "body": [
                     {"type": "linear", "out": 6}, {"type": "relu"}]}]})",
                 {"Gemm", "Relu", "Add"}},
        KindCase{"residual_projection_conv",
                 R"({"input": [2, 6, 6], "layers": [{"type": "residual", "projection": true,
                     "body": [{"type": "conv2d", "out": 4, "kernel": 3, "stride": 2,
                               "padding": 1}]}]})",
                 {"Conv", "Conv", "Add"}},
        KindCase{"residual_shortcut_nested",
                 R"({"input": [6], "layers": [{"type": "residual",
                     "body": [{"type": "residual", "body": [{"type": "layer_norm"}]},
                              {"type": "linear", "out": 3}],
                     "shortcut": [{"type": "linear", "out": 3, "bias": false},
                                  {"type": "batch_norm"}]}]})",
                 {"LayerNormalization", "Add", "Gemm", "Gemm", "BatchNormalization", "Add"}}),
    [](const testing::TestParamInfo<KindCase>& p) { return p.param.name; });

constexpr char kSmallCnn[] = R"({"input": [1, 28, 28], "layers": [
    {"type": "conv2d", "out": 8, "kernel": 3, "padding": 1}, {"type": "relu"},
    {"type": "max_pool2d", "kernel": 2},
    {"type": "conv2d", "out": 16, "kernel": 3, "padding": 1}, {"type": "relu"},
    {"type": "max_pool2d", "kernel": 2},
    {"type": "flatten"}, {"type": "dropout", "p": 0.2},
    {"type": "linear", "out": 32}, {"type": "relu"},
    {"type": "linear", "out": 10}]})";

TEST(OnnxExport, HasTheDocumentedInterface) {
  CpuBackend backend(1);
  Built b = build(backend, kSmallCnn);
  OnnxExportOptions options;
  options.graph_name = "small_cnn";
  options.doc_string = "a test model";
  options.model_version = 3;
  options.metadata = {{"study", "fmnist"}, {"trial", "17"}};
  onnx::ModelProto proto = parse(onnx_model_bytes(b.spec, *b.model, options));
  EXPECT_EQ(proto.ir_version(), kOnnxIrVersion);
  ASSERT_EQ(proto.opset_import_size(), 1);
  EXPECT_EQ(proto.opset_import(0).domain(), "");
  EXPECT_EQ(proto.opset_import(0).version(), kOnnxOpset);
  EXPECT_EQ(proto.producer_name(), "tuner");
  EXPECT_EQ(proto.model_version(), 3);
  EXPECT_EQ(proto.doc_string(), "a test model");
  EXPECT_EQ(proto.graph().name(), "small_cnn");

  ASSERT_EQ(proto.graph().input_size(), 1);
  EXPECT_EQ(proto.graph().input(0).name(), "input");
  EXPECT_EQ(proto.graph().input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(dims_of(proto.graph().input(0)), "N,1,28,28");
  ASSERT_EQ(proto.graph().output_size(), 1);
  EXPECT_EQ(proto.graph().output(0).name(), "logits");
  EXPECT_EQ(dims_of(proto.graph().output(0)), "N,10");

  ASSERT_EQ(proto.metadata_props_size(), 3);
  EXPECT_EQ(proto.metadata_props(0).key(), "study");
  EXPECT_EQ(proto.metadata_props(1).value(), "17");
  EXPECT_EQ(proto.metadata_props(2).key(), "tuner.model_spec");
  EXPECT_EQ(proto.metadata_props(2).value(), b.spec.json);

  // Shape inference ran: intermediate tensors carry their shapes, named after the JSON paths.
  bool found = false;
  for (const onnx::ValueInfoProto& v : proto.graph().value_info()) {
    if (v.name() == "layers_2") {
      found = true;
      EXPECT_EQ(dims_of(v), "N,8,14,14");
    }
  }
  EXPECT_TRUE(found);
}

TEST(OnnxExport, InitializersHoldTheArenaValues) {
  CpuBackend backend(1);
  Built b = build(backend, R"({"input": [3], "layers": [{"type": "linear", "out": 2},
                              {"type": "batch_norm"}]})");
  // Running stats that are not the initial ones.
  auto buffers = b.model->parameters().buffers();
  buffers[0].span()[1] = 0.25f;  // running_mean
  buffers[1].span()[0] = 2.5f;   // running_var
  onnx::ModelProto proto = parse(onnx_model_bytes(b.spec, *b.model));
  auto floats = [&](const std::string& name) {
    for (const onnx::TensorProto& t : proto.graph().initializer()) {
      if (t.name() != name) continue;
      std::vector<float> v(t.raw_data().size() / sizeof(float));
      std::memcpy(v.data(), t.raw_data().data(), t.raw_data().size());
      return v;
    }
    ADD_FAILURE() << "no initializer " << name;
    return std::vector<float>{};
  };
  const auto weight = b.model->parameters().params()[0].value.span();
  EXPECT_EQ(floats("layers_0_weight"), std::vector<float>(weight.begin(), weight.end()));
  EXPECT_EQ(floats("layers_1_running_mean"), (std::vector<float>{0.0f, 0.25f}));
  EXPECT_EQ(floats("layers_1_running_var"), (std::vector<float>{2.5f, 1.0f}));
}

class OnnxFile : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tuner_onnx_export_test_" + std::to_string(::getpid()) + "_" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      names.push_back(e.path().filename().string());
    }
    return names;
  }
  static std::string read(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::filesystem::path dir_;
};

TEST_F(OnnxFile, RoundTripsThroughTheOnnxParser) {
  CpuBackend backend(1);
  Built b = build(backend, kSmallCnn);
  const std::filesystem::path out = dir_ / "model.onnx";
  export_onnx(b.spec, *b.model, out);
  EXPECT_EQ(files(), std::vector<std::string>{"model.onnx"});  // no temporary left behind
  const std::string bytes = read(out);
  EXPECT_EQ(bytes, onnx_model_bytes(b.spec, *b.model));
  onnx::ModelProto proto = parse(bytes);
  std::string again;
  ASSERT_TRUE(proto.SerializeToString(&again));
  EXPECT_EQ(again, bytes);
  EXPECT_NO_THROW(onnx::checker::check_model(out.string()));
  // Exporting again replaces the file.
  export_onnx(b.spec, *b.model, out);
  EXPECT_EQ(files(), std::vector<std::string>{"model.onnx"});
}

TEST_F(OnnxFile, AFailedExportNamesTheLayerAndWritesNothing) {
  CpuBackend backend(1);
  Built b = build(backend, R"({"input": [4], "layers": [{"type": "linear", "out": 4},
      {"type": "residual", "body": [{"type": "layer_norm"}, {"type": "gelu"}]}]})");
  const std::filesystem::path out = dir_ / "model.onnx";
  { std::ofstream(out) << "old"; }
  // A layer type the exporter does not know (as a future layer would be).
  ModelSpec spec = b.spec;
  spec.layers[1].body[1].type = "swish";
  try {
    export_onnx(spec, *b.model, out);
    FAIL() << "exported an unknown layer";
  } catch (const OnnxExportError& e) {
    EXPECT_EQ(e.where(), "layers[1].body[1]");
    EXPECT_NE(std::string(e.what()).find("\"swish\" has no ONNX export"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read(out), "old");
  EXPECT_EQ(files(), std::vector<std::string>{"model.onnx"});

  // A directory that does not exist: the error names the file.
  const std::filesystem::path nowhere = dir_ / "missing" / "model.onnx";
  try {
    export_onnx(b.spec, *b.model, nowhere);
    FAIL() << "wrote into a missing directory";
  } catch (const OnnxExportError& e) {
    EXPECT_EQ(e.where(), nowhere.string());
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "missing"));
}

TEST(OnnxExport, RefusesAModelNotBuiltFromTheSpec) {
  CpuBackend backend(1);
  Built a = build(backend, R"({"input": [4], "layers": [{"type": "linear", "out": 3}]})");
  Built wider = build(backend, R"({"input": [4], "layers": [{"type": "linear", "out": 5}]})");
  try {
    (void)onnx_model_bytes(a.spec, *wider.model);
    FAIL() << "exported a model with other shapes";
  } catch (const OnnxExportError& e) {
    EXPECT_EQ(e.where(), "layers[0]");
    EXPECT_NE(std::string(e.what()).find("[5, 4], the spec needs [3, 4]"), std::string::npos)
        << e.what();
  }
  Built other = build(backend, R"({"input": [4], "layers": [{"type": "relu"}]})");
  EXPECT_THROW((void)onnx_model_bytes(a.spec, *other.model), OnnxExportError);
  Built nested = build(backend, R"({"input": [4], "layers": [{"type": "residual",
      "body": [{"type": "linear", "out": 4}]}]})");
  Built nested_norm = build(backend, R"({"input": [4], "layers": [{"type": "residual",
      "body": [{"type": "layer_norm"}]}]})");
  try {
    (void)onnx_model_bytes(nested.spec, *nested_norm.model);
    FAIL() << "exported a model with another nested layer";
  } catch (const OnnxExportError& e) {
    EXPECT_EQ(e.where(), "layers[0].body[0]");
  }
}

// The scalar initializer `name` of a graph.
float scalar_initializer(const onnx::GraphProto& graph, const std::string& name) {
  for (const onnx::TensorProto& t : graph.initializer()) {
    if (t.name() == name && t.dims_size() == 0 && t.float_data_size() == 1) return t.float_data(0);
  }
  ADD_FAILURE() << "no scalar initializer " << name;
  return 0.0f;
}

// Regression: an exported model took normalized inputs and said so only in its metadata;
// given raw pixels it answered wrongly. With an input transform the graph takes uint8 pixels and
// computes the engine's normalized inputs itself.
TEST(OnnxExport, TheInputTransformMakesTheGraphTakeRawPixels) {
  CpuBackend backend(1);
  Built b = build(backend, kSmallCnn);
  // A dataset of raw pixels as the IDX reader makes it (bytes / 255) and the engine's
  // normalization of it (training::Normalizer, one mean and stddev over every pixel).
  std::vector<uint8_t> pixels(3 * 28 * 28);
  for (size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<uint8_t>((i * 37 + i / 5) % 256);
  std::vector<float> scaled(pixels.size());
  for (size_t i = 0; i < pixels.size(); ++i) scaled[i] = static_cast<float>(pixels[i]) / 255.0f;
  Dataset data(Shape{1, 28, 28}, scaled, {0, 1, 2}, 10);
  const Normalizer norm = Normalizer::fit(data, NormalizeBy::kAll);
  norm.apply(data);

  OnnxExportOptions options;
  options.input_transform = OnnxInputTransform{
      .uint8 = true, .divisor = 255.0f, .mean = norm.mean()[0], .stddev = norm.stddev()[0]};
  onnx::ModelProto proto = parse(onnx_model_bytes(b.spec, *b.model, options));
  EXPECT_NO_THROW(onnx::checker::check_model(proto));
  const onnx::GraphProto& g = proto.graph();
  ASSERT_EQ(g.input_size(), 1);
  EXPECT_EQ(g.input(0).name(), "input");
  EXPECT_EQ(g.input(0).type().tensor_type().elem_type(), onnx::TensorProto::UINT8);
  EXPECT_EQ(dims_of(g.input(0)), "N,1,28,28");
  const std::vector<std::string> ops = op_types(proto);
  ASSERT_GE(ops.size(), 5u);
  EXPECT_EQ(std::vector<std::string>(ops.begin(), ops.begin() + 5),
            (std::vector<std::string>{"Cast", "Div", "Sub", "Mul", "Conv"}));
  EXPECT_EQ(g.node(0).input(0), "input");
  ASSERT_EQ(g.node(0).attribute_size(), 1);
  EXPECT_EQ(g.node(0).attribute(0).name(), "to");
  EXPECT_EQ(g.node(0).attribute(0).i(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(g.node(4).input(0), "input_normalized");  // the first layer reads the normalized input

  // The four nodes, evaluated as ONNX defines them with the graph's own constants, turn the raw
  // pixels into exactly the inputs the engine trains and evaluates on.
  std::vector<float> x(pixels.begin(), pixels.end());  // Cast
  for (int i = 1; i <= 3; ++i) {
    const onnx::NodeProto& n = g.node(i);
    ASSERT_EQ(n.input_size(), 2);
    EXPECT_EQ(n.input(0), g.node(i - 1).output(0));
    const float c = scalar_initializer(g, n.input(1));
    for (float& v : x) v = n.op_type() == "Div" ? v / c : n.op_type() == "Sub" ? v - c : v * c;
  }
  const std::span<const float> engine = data.features();
  ASSERT_EQ(x.size(), engine.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], engine[i]) << "pixel " << i;
  // So the model's outputs on them are the engine's forward pass on the normalized samples.
  EXPECT_EQ(scalar_initializer(g, "input_divisor"), 255.0f);
  EXPECT_EQ(scalar_initializer(g, "input_mean"), norm.mean()[0]);
  EXPECT_EQ(scalar_initializer(g, "input_inv_stddev"), 1.0f / norm.stddev()[0]);

  // Float inputs in the loader's units: the normalization alone; an identity transform: no node.
  options.input_transform = OnnxInputTransform{.mean = 0.25f, .stddev = 0.5f};
  proto = parse(onnx_model_bytes(b.spec, *b.model, options));
  EXPECT_EQ(proto.graph().input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  const std::vector<std::string> float_ops = op_types(proto);
  ASSERT_GE(float_ops.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(float_ops.begin(), float_ops.begin() + 3),
            (std::vector<std::string>{"Sub", "Mul", "Conv"}));
  options.input_transform = OnnxInputTransform{};
  EXPECT_EQ(op_types(parse(onnx_model_bytes(b.spec, *b.model, options))).front(), "Conv");
  options.input_transform = OnnxInputTransform{.stddev = 0.0f};
  EXPECT_THROW((void)onnx_model_bytes(b.spec, *b.model, options), OnnxExportError);
}

// The float32 values of an initializer [n] (or [n, 1, ...]).
std::vector<float> vector_initializer(const onnx::GraphProto& graph, const std::string& name) {
  for (const onnx::TensorProto& t : graph.initializer()) {
    if (t.name() == name) {
      EXPECT_GE(t.dims_size(), 1) << name;
      return {t.float_data().begin(), t.float_data().end()};
    }
  }
  ADD_FAILURE() << "no initializer " << name;
  return {};
}

TEST(OnnxExport, APerFeatureTransformNormalizesEachFeatureAsTheEngine) {
  CpuBackend backend(1);
  Built b = build(backend, R"({"input": [3], "layers": [{"type": "linear", "out": 2}]})");
  // A table's encoded features, normalized per feature (NormalizeBy::kChannel).
  const std::vector<float> raw = {1, 200, 0, 3, 100, 1, 8, 400, 0, -2, 300, 1};
  Dataset data(Shape{3}, raw, {0, 1, 0, 1}, 2);
  const Normalizer norm = Normalizer::fit(data, NormalizeBy::kChannel);
  norm.apply(data);

  OnnxExportOptions options;
  OnnxInputTransform t;
  t.feature_mean.assign(norm.mean().begin(), norm.mean().end());
  t.feature_stddev.assign(norm.stddev().begin(), norm.stddev().end());
  options.input_transform = t;
  onnx::ModelProto proto = parse(onnx_model_bytes(b.spec, *b.model, options));
  EXPECT_NO_THROW(onnx::checker::check_model(proto));
  const onnx::GraphProto& g = proto.graph();
  EXPECT_EQ(g.input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  const std::vector<std::string> ops = op_types(proto);
  ASSERT_GE(ops.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(ops.begin(), ops.begin() + 3),
            (std::vector<std::string>{"Sub", "Mul", "Gemm"}));
  EXPECT_EQ(g.node(2).input(0), "input_normalized");
  // Sub and Mul broadcast [3] over [N, 3]: the engine's normalized features, bit for bit.
  const std::vector<float> mean = vector_initializer(g, "input_mean");
  const std::vector<float> inv = vector_initializer(g, "input_inv_stddev");
  ASSERT_EQ(mean.size(), 3u);
  ASSERT_EQ(inv.size(), 3u);
  const std::span<const float> engine = data.features();
  for (size_t i = 0; i < raw.size(); ++i) {
    EXPECT_EQ((raw[i] - mean[i % 3]) * inv[i % 3], engine[i]) << "value " << i;
  }

  // One mean and stddev per feature of a flat input, finite and stddev > 0.
  t.feature_stddev.pop_back();
  options.input_transform = t;
  try {
    (void)onnx_model_bytes(b.spec, *b.model, options);
    ADD_FAILURE() << "no error";
  } catch (const OnnxExportError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "options.input_transform: per-channel normalization needs one mean and stddev "
                  "per element of the input's first dimension: the input is [3], with 3 means and "
                  "2 stddevs"),
              std::string::npos)
        << e.what();
  }
  t.feature_stddev = {1.0f, 0.0f, 1.0f};
  options.input_transform = t;
  EXPECT_THROW((void)onnx_model_bytes(b.spec, *b.model, options), OnnxExportError);
}

std::vector<int64_t> initializer_dims(const onnx::GraphProto& graph, const std::string& name) {
  for (const onnx::TensorProto& t : graph.initializer()) {
    if (t.name() == name) return {t.dims().begin(), t.dims().end()};
  }
  ADD_FAILURE() << "no initializer " << name;
  return {};
}

TEST(OnnxExport, APerChannelTransformNormalizesEachChannelOfAnImage) {
  CpuBackend backend(1);
  Built b = build(backend, R"({"input": [3, 2, 2], "layers": [{"type": "flatten"},
                               {"type": "linear", "out": 2}]})");
  // Two RGB images [3, 2, 2] in [0, 1], normalized per channel (NormalizeBy::kChannel), as the
  // image-folder loader's samples.
  std::vector<float> raw(24);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<float>((i * 7) % 11) / 10.0f;
  Dataset data(Shape{3, 2, 2}, raw, {0, 1}, 2);
  const Normalizer norm = Normalizer::fit(data, NormalizeBy::kChannel);
  ASSERT_EQ(norm.mean().size(), 3u);
  norm.apply(data);

  OnnxExportOptions options;
  OnnxInputTransform t;
  t.feature_mean.assign(norm.mean().begin(), norm.mean().end());
  t.feature_stddev.assign(norm.stddev().begin(), norm.stddev().end());
  options.input_transform = t;
  onnx::ModelProto proto = parse(onnx_model_bytes(b.spec, *b.model, options));
  EXPECT_NO_THROW(onnx::checker::check_model(proto));
  const onnx::GraphProto& g = proto.graph();
  const std::vector<std::string> ops = op_types(proto);
  ASSERT_GE(ops.size(), 2u);
  EXPECT_EQ(std::vector<std::string>(ops.begin(), ops.begin() + 2),
            (std::vector<std::string>{"Sub", "Mul"}));
  // [3, 1, 1] constants broadcast over [N, 3, 2, 2]: the engine's normalized pixels, bit for bit.
  EXPECT_EQ(initializer_dims(g, "input_mean"), (std::vector<int64_t>{3, 1, 1}));
  EXPECT_EQ(initializer_dims(g, "input_inv_stddev"), (std::vector<int64_t>{3, 1, 1}));
  const std::vector<float> mean = vector_initializer(g, "input_mean");
  const std::vector<float> inv = vector_initializer(g, "input_inv_stddev");
  ASSERT_EQ(mean.size(), 3u);
  const std::span<const float> engine = data.features();
  for (size_t i = 0; i < raw.size(); ++i) {
    const size_t c = (i / 4) % 3;
    EXPECT_EQ((raw[i] - mean[c]) * inv[c], engine[i]) << "value " << i;
  }

  // One mean and stddev per channel: 12 (one per value) is refused.
  t.feature_mean.assign(12, 0.5f);
  t.feature_stddev.assign(12, 1.0f);
  options.input_transform = t;
  EXPECT_THROW((void)onnx_model_bytes(b.spec, *b.model, options), OnnxExportError);
}

TEST(OnnxExport, RefusesDuplicateMetadataKeys) {
  CpuBackend backend(1);
  Built b = build(backend, R"({"input": [4], "layers": [{"type": "relu"}]})");
  OnnxExportOptions options;
  options.metadata = {{"tuner.model_spec", "x"}};
  EXPECT_THROW((void)onnx_model_bytes(b.spec, *b.model, options), OnnxExportError);
}

}  // namespace
}  // namespace tuner::training
