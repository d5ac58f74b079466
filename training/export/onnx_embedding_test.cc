// The ONNX export of a model with embeddings (Slice, Gather, Cast, Concat) read back by the
// engine's importer: the same spec, the same tables, the same outputs, unknown categories
// included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"
#include "training/backends/cpu/cpu_backend.h"
#include "training/export/onnx_export.h"
#include "training/export/onnx_import.h"
#include "training/model_spec.h"

namespace tuner::training {
namespace {

// Features [age, site, income, color, plan]: site and plan embedded, the others passed on.
constexpr char kSpec[] = R"({"input": [5], "embeddings": [
    {"at": 1, "categories": 4, "dim": 3}, {"at": 4, "categories": 2, "dim": 2}],
    "layers": [{"type": "linear", "out": 6, "activation": "relu"}, {"type": "linear", "out": 3}]})";

TEST(OnnxEmbedding, ExportReadBackByTheImporterGivesTheSameOutputs) {
  CpuBackend backend(1);
  const ModelSpec spec = parse_model_spec(kSpec);
  auto model = build_model(spec, 8, backend, 4);
  OnnxExportOptions options;
  options.input_transform = OnnxInputTransform{.feature_mean = {40, 0, 3, 0.5f, 0},
                                               .feature_stddev = {12, 1, 2, 0.25f, 1}};
  const std::string bytes = onnx_model_bytes(spec, *model, options);
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(bytes));
  std::vector<std::string> ops;
  for (const onnx::NodeProto& n : proto.graph().node()) ops.push_back(n.op_type());
  EXPECT_NE(std::find(ops.begin(), ops.end(), "Gather"), ops.end());
  EXPECT_NE(std::find(ops.begin(), ops.end(), "Concat"), ops.end());

  const Checkpoint imported = import_onnx_bytes(bytes);
  const ModelSpec read = parse_model_spec(imported.model_spec);
  ASSERT_EQ(read.layers.size(), spec.layers.size());
  ASSERT_EQ(read.layers[0].type, "embedding");
  ASSERT_EQ(read.layers[0].embedded.size(), 2u);
  EXPECT_EQ(read.layers[0].embedded[1].at, 4);
  EXPECT_EQ(read.layers[0].embedded[1].categories, 2);
  EXPECT_EQ(read.layers[0].embedded[1].dim, 2);
  EXPECT_EQ(imported.parameters, model->parameters().values_to_host());

  auto rebuilt = build_model(read, 8, backend, 9);
  rebuilt->parameters().set_values(imported.parameters);
  // The model's own inputs (normalized; the importer skips the graph's normalization), with
  // every site, an unknown one (-1) and both plans.
  std::vector<float> x;
  for (int s = 0; s < 8; ++s) {
    const float site = s < 5 ? static_cast<float>(s) - 1.0f : static_cast<float>(s % 4);
    for (float v : {std::sin(0.7f * s), site, std::cos(1.3f * s), 0.25f * s - 1, float(s % 2)}) {
      x.push_back(v);
    }
  }
  const Tensor input = Tensor::borrow_const(x.data(), Shape{8, 5});
  const std::vector<float> want = [&] {
    const Tensor& y = model->forward(input, Mode::kEval);
    return std::vector<float>(y.data(), y.data() + y.numel());
  }();
  const Tensor& got = rebuilt->forward(input, Mode::kEval);
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.data()[i], want[i], 1e-5) << i;
}

TEST(OnnxEmbedding, UnknownCategoryRowIsZerosInTheExportedTable) {
  CpuBackend backend(1);
  const ModelSpec spec = parse_model_spec(kSpec);
  auto model = build_model(spec, 2, backend, 4);
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(onnx_model_bytes(spec, *model)));
  int tables = 0;
  for (const onnx::TensorProto& t : proto.graph().initializer()) {
    if (t.name().find("table") == std::string::npos) continue;
    ++tables;
    ASSERT_EQ(t.dims_size(), 2);
    const int64_t rows = t.dims(0), dim = t.dims(1);
    EXPECT_EQ(rows, t.name().ends_with("table0") ? 5 : 3) << t.name();
    std::vector<float> v(static_cast<size_t>(rows * dim));
    ASSERT_EQ(t.raw_data().size(), v.size() * sizeof(float));
    std::memcpy(v.data(), t.raw_data().data(), t.raw_data().size());
    for (int64_t c = 0; c < dim; ++c) EXPECT_EQ(v[(rows - 1) * dim + c], 0.0f) << t.name();
  }
  EXPECT_EQ(tables, 2);
}

}  // namespace
}  // namespace tuner::training
