// ColumnEmbedding: the lookup and its layout, the gradient of the tables by finite differences,
// the "embeddings" of a model spec and its refusals.
#include "training/layers/embedding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "training/backends/cpu/cpu_backend.h"
#include "training/model_spec.h"
#include "training/parameter_arena.h"
#include "training/rng.h"

namespace tuner::training {
namespace {

// A sample [a, site, b, color]: site (3 categories) embedded in 2 dims, color (2) in 3.
ColumnEmbedding make_layer() { return ColumnEmbedding(4, {{1, 3, 2}, {3, 2, 3}}); }

TEST(ColumnEmbedding, PutsEachIndexedRowInPlaceOfItsFeature) {
  CpuBackend backend(1);
  ColumnEmbedding layer = make_layer();
  EXPECT_EQ(layer.output_shape(Shape{4}), (Shape{7}));
  ParameterArena arena(layer.parameter_specs(), layer.buffer_specs(), backend);
  layer.bind(arena.params(), arena.buffers());
  layer.setup(Shape{4}, 3, backend);
  // table0 [3, 2] = 10 * row + col; table1 [2, 3] = -(10 * row + col) - 1.
  std::span<float> t0 = arena.params()[0].value.span(), t1 = arena.params()[1].value.span();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 2; ++c) t0[r * 2 + c] = static_cast<float>(10 * r + c);
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) t1[r * 3 + c] = -static_cast<float>(10 * r + c) - 1;
  // Row 2: an unknown site (-1) and an index past the table (2 of 2 colors): zeros.
  std::vector<float> x = {0.5f, 2, 1.5f, 1, -3, 0, 7, 0, 9, -1, 8, 2};
  Tensor y(Shape{3, 7});
  Pass pass{backend, Mode::kEval};
  layer.forward(pass, Tensor::borrow_const(x.data(), Shape{3, 4}), y);
  const std::vector<float> want = {0.5f, 20, 21, 1.5f, -11, -12, -13,  //
                                   -3,   0,  1,  7,    -1,  -2,  -3,   //
                                   9,    0,  0,  8,    0,   0,   0};
  EXPECT_EQ(std::vector<float>(y.data(), y.data() + y.numel()), want);
}

// L = sum(y * r): d/dtable and d/dx of the other features against central differences; a row
// looked up twice in the batch gets both samples' gradients; index features get none.
TEST(ColumnEmbedding, GradientsOfTheTablesMatchFiniteDifferences) {
  CpuBackend backend(1);
  ColumnEmbedding layer = make_layer();
  ParameterArena arena(layer.parameter_specs(), layer.buffer_specs(), backend);
  layer.bind(arena.params(), arena.buffers());
  layer.setup(Shape{4}, 4, backend);
  arena.initialize(3);
  std::vector<float> x = {0.3f,  1, -0.7f, 0,   //
                          0.9f,  1, 0.2f,  1,   // site 1 again
                          -0.4f, 2, 0.6f,  -1,  // an unknown color
                          0.1f,  0, -0.5f, 1};
  const Tensor xt = Tensor::borrow_const(x.data(), Shape{4, 4});
  Rng rng(5);
  std::vector<float> r(4 * 7);
  for (float& v : r) v = rng.uniform(-1.0f, 1.0f);
  Tensor y(Shape{4, 7}), dx(Shape{4, 4});
  Pass pass{backend, Mode::kTrain};
  auto loss = [&] {
    layer.forward(pass, xt, y);
    double l = 0;
    for (size_t i = 0; i < r.size(); ++i) l += static_cast<double>(y.data()[i]) * r[i];
    return l;
  };
  loss();
  layer.backward(pass, xt, y, Tensor::borrow_const(r.data(), Shape{4, 7}), &dx);
  const std::vector<float> grads(arena.grads().begin(), arena.grads().end());
  constexpr float kEps = 1e-2f;
  for (size_t p = 0; p < 2; ++p) {
    std::span<float> values = arena.params()[p].value.span();
    for (size_t i = 0; i < values.size(); ++i) {
      const float saved = values[i];
      values[i] = saved + kEps;
      const double plus = loss();
      values[i] = saved - kEps;
      const double minus = loss();
      values[i] = saved;
      EXPECT_NEAR((plus - minus) / (2 * kEps), grads[arena.offset(p) + i], 1e-4)
          << "table" << p << "[" << i << "]";
    }
  }
  // Row 1 of table0 (site 1) holds the sum of samples 0 and 1's dy; color row of sample 2: none.
  EXPECT_FLOAT_EQ(grads[arena.offset(0) + 2], r[0 * 7 + 1] + r[1 * 7 + 1]);
  for (int64_t s = 0; s < 4; ++s) {
    EXPECT_EQ(dx.data()[s * 4 + 0], r[s * 7 + 0]);
    EXPECT_EQ(dx.data()[s * 4 + 1], 0.0f);
    EXPECT_EQ(dx.data()[s * 4 + 2], r[s * 7 + 3]);
    EXPECT_EQ(dx.data()[s * 4 + 3], 0.0f);
  }
}

TEST(ColumnEmbedding, ModelSpecEmbeddingsComeBeforeTheLayers) {
  const ModelSpec spec = parse_model_spec(
      R"({"input": [4], "embeddings": [{"at": 1, "categories": 3, "dim": 2},
          {"at": 3, "categories": 2, "dim": 3}], "layers": [{"type": "linear", "out": 2}]})");
  ASSERT_EQ(spec.layers.size(), 2u);
  EXPECT_EQ(spec.layers[0].type, "embedding");
  EXPECT_EQ(spec.layers[0].path, "embeddings");
  EXPECT_EQ(spec.layers[1].input, (Shape{7}));
  EXPECT_EQ(spec.num_parameters, 3 * 2 + 2 * 3 + 7 * 2 + 2);
  CpuBackend backend(1);
  auto model = build_model(spec, 2, backend, 1);
  std::vector<float> x = {0.5f, 2, 1, 1, 0, 0, 0, -1};
  EXPECT_EQ(model->forward(Tensor::borrow_const(x.data(), Shape{2, 4}), Mode::kEval).shape(),
            (Shape{2, 2}));
}

TEST(ColumnEmbedding, ModelSpecRefusesABadEmbeddingNamingIt) {
  auto reason = [](const std::string& embeddings) {
    try {
      parse_model_spec(R"({"input": [4], "embeddings": )" + embeddings +
                       R"(, "layers": [{"type": "linear", "out": 2}]})");
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(reason(R"([{"at": 1, "categories": 3, "dim": 0}])"),
            "embeddings[0].dim: 0 is out of range (an integer >= 1)");
  EXPECT_EQ(reason(R"([{"at": 4, "categories": 3, "dim": 2}])"),
            "embeddings[0].at: 4 is not a feature of the input [4]");
  EXPECT_EQ(
      reason(R"([{"at": 2, "categories": 3, "dim": 2}, {"at": 1, "categories": 2, "dim": 1}])"),
      "embeddings[1].at: 1 does not come after 2 (the features in increasing order)");
  EXPECT_EQ(reason(R"([{"at": 1, "categories": 3, "size": 2}])"),
            "embeddings[0].size: unknown field; it takes at, categories, dim");
  EXPECT_EQ(reason("[]"),
            "embeddings: expected a list of {\"at\", \"categories\", \"dim\"}, got []");
}

}  // namespace
}  // namespace tuner::training
