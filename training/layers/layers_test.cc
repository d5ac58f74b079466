// Layers and losses on small shapes against hand-computed values, and their shape errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "training/backends/cpu/cpu_backend.h"
#include "training/layer_chain.h"
#include "training/layers/activation.h"
#include "training/layers/avg_pool2d.h"
#include "training/layers/batch_norm.h"
#include "training/layers/conv2d.h"
#include "training/layers/dropout.h"
#include "training/layers/layer_norm.h"
#include "training/layers/linear.h"
#include "training/layers/max_pool2d.h"
#include "training/losses/cross_entropy.h"
#include "training/losses/mean_squared_error.h"
#include "training/parameter_arena.h"
#include "training/rng.h"
#include "training/shape_error.h"

namespace tuner::training {
namespace {

// A layer bound to its own arena and set up for max_batch samples.
struct Bound {
  Bound(std::unique_ptr<Layer> l, const Shape& sample, int64_t max_batch)
      : layer(std::move(l)), arena(layer->parameter_specs(), layer->buffer_specs(), backend) {
    layer->bind(arena.params(), arena.buffers());
    layer->setup(sample, max_batch, backend);
  }
  CpuBackend backend{2};
  std::unique_ptr<Layer> layer;
  ParameterArena arena;
};

TEST(Linear, ForwardBackwardByHand) {
  Bound b(std::make_unique<Linear>(2, 2, Linear::Options{true, Activation::kRelu}), Shape{2}, 4);
  b.arena.params()[0].value.copy_from(std::vector<float>{1, 2, -3, 1});  // W[O=2, I=2]
  b.arena.params()[1].value.copy_from(std::vector<float>{0.5f, 0});      // b[2]
  Tensor x(Shape{1, 2});
  x.copy_from(std::vector<float>{1, 1});
  Tensor y(Shape{1, 2});
  Pass pass{b.backend};
  b.layer->forward(pass, x, y);
  EXPECT_FLOAT_EQ(y.at({0, 0}), 3.5f);  // 1 + 2 + 0.5
  EXPECT_FLOAT_EQ(y.at({0, 1}), 0.0f);  // relu(-3 + 1)
  Tensor dy(Shape{1, 2}), dx(Shape{1, 2});
  dy.copy_from(std::vector<float>{1, 1});
  b.layer->backward(pass, x, y, dy, &dx);
  EXPECT_FLOAT_EQ(dx.at({0, 0}), 1.0f);  // only the live unit: W[0] = (1, 2)
  EXPECT_FLOAT_EQ(dx.at({0, 1}), 2.0f);
  const auto& dw = b.arena.params()[0].grad;
  EXPECT_FLOAT_EQ(dw.at({0, 0}), 1.0f);
  EXPECT_FLOAT_EQ(dw.at({1, 0}), 0.0f);
  EXPECT_FLOAT_EQ(b.arena.params()[1].grad.at({1}), 0.0f);
}

TEST(Conv2d, ForwardByHand) {
  // One 3x3 input channel, one 2x2 kernel of ones, stride 1, no padding: sums of 2x2 windows.
  Bound b(std::make_unique<Conv2d>(1, 1, 2), Shape{1, 3, 3}, 1);
  b.arena.params()[0].value.fill(1.0f);
  b.arena.params()[1].value.fill(-1.0f);
  Tensor x(Shape{1, 1, 3, 3});
  x.copy_from(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor y(Shape{1, 1, 2, 2});
  Pass pass{b.backend};
  b.layer->forward(pass, x, y);
  EXPECT_FLOAT_EQ(y.at({0, 0, 0, 0}), 11.0f);  // 1+2+4+5-1
  EXPECT_FLOAT_EQ(y.at({0, 0, 1, 1}), 27.0f);  // 5+6+8+9-1
}

TEST(Conv2d, PaddingAndStrideShapes) {
  const Conv2d conv(3, 8, 3, Conv2d::Options{2, 1});
  EXPECT_EQ(conv.output_shape(Shape{3, 28, 28}), (Shape{8, 14, 14}));
}

// A LayerChain runs a conv2d and the 2x2 max pooling after it as one op (Conv2d::fuse_max_pool):
// the same output, input gradient and parameter gradients as the two layers run one by one, the
// layers reported done in the same order, and the gradient buffers still alternate around it.
TEST(Conv2d, ChainFusesAFollowingMaxPoolAndMatchesTheTwoLayers) {
  const Shape sample{2, 8, 6};
  const int64_t batch = 3;
  std::vector<std::unique_ptr<Layer>> layers;
  layers.push_back(
      std::make_unique<Conv2d>(2, 3, 3, Conv2d::Options{1, 1, true, Activation::kRelu}));
  layers.push_back(std::make_unique<MaxPool2d>(2));
  layers.push_back(
      std::make_unique<Conv2d>(3, 2, 3, Conv2d::Options{1, 1, true, Activation::kTanh}));
  LayerChain chain(std::move(layers));
  CpuBackend backend(2);
  ParameterArena arena(chain.parameter_specs(), chain.buffer_specs(), backend);
  chain.bind(arena.params(), arena.buffers());
  chain.setup(sample, batch, backend);
  ASSERT_TRUE(static_cast<Conv2d&>(chain.layer(0)).max_pool_fused());
  ASSERT_FALSE(static_cast<Conv2d&>(chain.layer(2)).max_pool_fused());
  Rng rng(5);
  for (float& v : arena.values()) v = rng.uniform(-0.5f, 0.5f);

  // The same three layers, one by one, with the chain's parameter values.
  Bound conv(std::make_unique<Conv2d>(2, 3, 3, Conv2d::Options{1, 1, true, Activation::kRelu}),
             sample, batch);
  Bound pool(std::make_unique<MaxPool2d>(2), Shape{3, 8, 6}, batch);
  Bound last(std::make_unique<Conv2d>(3, 2, 3, Conv2d::Options{1, 1, true, Activation::kTanh}),
             Shape{3, 4, 3}, batch);
  // The chain's parameters in order: conv weight, conv bias, last weight, last bias.
  ParamView* layer_params[] = {&conv.arena.params()[0], &conv.arena.params()[1],
                               &last.arena.params()[0], &last.arena.params()[1]};
  ASSERT_EQ(arena.params().size(), 4u);
  for (size_t p = 0; p < 4; ++p) {
    const auto from = arena.params()[p].value.span();
    std::copy(from.begin(), from.end(), layer_params[p]->value.span().begin());
  }

  Tensor x(Shape{batch, 2, 8, 6});
  for (float& v : x.span()) v = rng.uniform(-1.0f, 1.0f);
  Tensor dy(Shape{batch, 2, 4, 3});
  for (float& v : dy.span()) v = rng.uniform(-1.0f, 1.0f);
  Pass pass{backend};
  Tensor y(Shape{batch, 2, 4, 3}), dx(x.shape());
  chain.forward(pass, x, y);
  std::vector<size_t> done;
  chain.backward(pass, x, y, dy, &dx, [&](size_t i) { done.push_back(i); });
  EXPECT_EQ(done, (std::vector<size_t>{2, 1, 0}));

  Tensor conv_y(Shape{batch, 3, 8, 6}), pool_y(Shape{batch, 3, 4, 3}), want_y(y.shape());
  conv.layer->forward(pass, x, conv_y);
  pool.layer->forward(pass, conv_y, pool_y);
  last.layer->forward(pass, pool_y, want_y);
  Tensor d_pool_y(pool_y.shape()), d_conv_y(conv_y.shape()), want_dx(x.shape());
  last.layer->backward(pass, pool_y, want_y, dy, &d_pool_y);
  pool.layer->backward(pass, conv_y, pool_y, d_pool_y, &d_conv_y);
  conv.layer->backward(pass, x, conv_y, d_conv_y, &want_dx);

  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.data()[i], want_y.data()[i]) << "y " << i;
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_NEAR(dx.data()[i], want_dx.data()[i], 1e-5) << "dx " << i;
  }
  for (size_t p = 0; p < 4; ++p) {
    const Tensor& got = arena.params()[p].grad;
    const Tensor& want = layer_params[p]->grad;
    for (int64_t i = 0; i < got.numel(); ++i) {
      ASSERT_NEAR(got.data()[i], want.data()[i], 1e-5) << "parameter " << p << " grad " << i;
    }
  }
}

TEST(Pooling, MaxAndAverageByHand) {
  Tensor x(Shape{1, 1, 2, 4});
  x.copy_from(std::vector<float>{1, 5, 2, 0, 3, 4, 8, 6});
  Tensor y(Shape{1, 1, 1, 2});
  Bound max(std::make_unique<MaxPool2d>(2), Shape{1, 2, 4}, 1);
  Pass pass{max.backend};
  max.layer->forward(pass, x, y);
  EXPECT_FLOAT_EQ(y.at({0, 0, 0, 0}), 5.0f);
  EXPECT_FLOAT_EQ(y.at({0, 0, 0, 1}), 8.0f);
  Tensor dy(y.shape()), dx(x.shape());
  dy.copy_from(std::vector<float>{1, 2});
  max.layer->backward(pass, x, y, dy, &dx);
  EXPECT_FLOAT_EQ(dx.at({0, 0, 0, 1}), 1.0f);
  EXPECT_FLOAT_EQ(dx.at({0, 0, 1, 2}), 2.0f);
  EXPECT_FLOAT_EQ(dx.at({0, 0, 0, 0}), 0.0f);

  Bound avg(std::make_unique<AvgPool2d>(2), Shape{1, 2, 4}, 1);
  avg.layer->forward(pass, x, y);
  EXPECT_FLOAT_EQ(y.at({0, 0, 0, 0}), 13.0f / 4);
  EXPECT_FLOAT_EQ(y.at({0, 0, 0, 1}), 16.0f / 4);
}

// A LayerChain runs a batch norm and the ReLU after it as one op (BatchNorm::fuse_relu), and
// leaves a batch norm before any other activation alone: the same outputs (train and eval), input
// gradient, parameter gradients and running stats as the layers one by one, and the layers
// reported done in the same order.
TEST(BatchNorm, ChainFusesAFollowingReluAndMatchesTheTwoLayers) {
  const Shape sample{3, 5, 7};
  const int64_t batch = 4;
  const auto layers = [] {
    std::vector<std::unique_ptr<Layer>> l;
    l.push_back(std::make_unique<BatchNorm>(3));
    l.push_back(std::make_unique<ActivationLayer>(Activation::kRelu));
    l.push_back(std::make_unique<BatchNorm>(3));
    l.push_back(std::make_unique<ActivationLayer>(Activation::kTanh));
    return l;
  };
  LayerChain chain(layers());
  CpuBackend backend(2);
  ParameterArena arena(chain.parameter_specs(), chain.buffer_specs(), backend);
  chain.bind(arena.params(), arena.buffers());
  chain.setup(sample, batch, backend);
  ASSERT_TRUE(static_cast<BatchNorm&>(chain.layer(0)).relu_fused());
  ASSERT_FALSE(static_cast<BatchNorm&>(chain.layer(2)).relu_fused());
  Rng rng(9);
  for (float& v : arena.values()) v = rng.uniform(0.5f, 1.5f);

  // The same layers one by one, each bound alone, with the chain's parameter values.
  std::vector<std::unique_ptr<Bound>> one;
  for (auto& l : layers()) one.push_back(std::make_unique<Bound>(std::move(l), sample, batch));
  ParamView* layer_params[] = {&one[0]->arena.params()[0], &one[0]->arena.params()[1],
                               &one[2]->arena.params()[0], &one[2]->arena.params()[1]};
  ASSERT_EQ(arena.params().size(), 4u);
  for (size_t p = 0; p < 4; ++p) {
    const auto from = arena.params()[p].value.span();
    std::copy(from.begin(), from.end(), layer_params[p]->value.span().begin());
  }

  Tensor x(sample.with_batch(batch)), dy(sample.with_batch(batch));
  for (float& v : x.span()) v = rng.uniform(-1.0f, 2.0f);
  for (float& v : dy.span()) v = rng.uniform(-1.0f, 1.0f);
  Pass pass{backend, Mode::kTrain};
  Tensor y(x.shape()), dx(x.shape());
  chain.forward(pass, x, y);
  std::vector<size_t> done;
  chain.backward(pass, x, y, dy, &dx, [&](size_t i) { done.push_back(i); });
  EXPECT_EQ(done, (std::vector<size_t>{3, 2, 1, 0}));

  std::vector<Tensor> a;  // the layers' outputs
  for (int i = 0; i < 4; ++i) a.emplace_back(x.shape());
  std::vector<Tensor> g;  // the gradients of their inputs
  for (int i = 0; i < 4; ++i) g.emplace_back(x.shape());
  for (int i = 0; i < 4; ++i) one[i]->layer->forward(pass, i == 0 ? x : a[i - 1], a[i]);
  for (int i = 3; i >= 0; --i) {
    one[i]->layer->backward(pass, i == 0 ? x : a[i - 1], a[i], i == 3 ? dy : g[i + 1], &g[i]);
  }
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.data()[i], a[3].data()[i]) << "y " << i;
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_NEAR(dx.data()[i], g[0].data()[i], 1e-6) << "dx " << i;
  }
  for (size_t p = 0; p < 4; ++p) {
    const Tensor& got = arena.params()[p].grad;
    const Tensor& want = layer_params[p]->grad;
    for (int64_t i = 0; i < got.numel(); ++i) {
      ASSERT_NEAR(got.data()[i], want.data()[i], 1e-6) << "parameter " << p << " grad " << i;
    }
  }
  const auto rm = arena.buffers()[0].span(), want_rm = one[0]->arena.buffers()[0].span();
  ASSERT_TRUE(std::equal(rm.begin(), rm.end(), want_rm.begin()));

  Pass eval{backend, Mode::kEval};
  chain.forward(eval, x, y);
  for (int i = 0; i < 4; ++i) one[i]->layer->forward(eval, i == 0 ? x : a[i - 1], a[i]);
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.data()[i], a[3].data()[i]) << "eval y " << i;
}

// A LayerChain runs a batch norm, the ReLU after it and a 2x2 max pooling after that as one op
// (BatchNorm::fuse_max_pool; here over an odd width), and a batch norm and ReLU before another
// pooling as the pair: the same outputs (train and eval), input gradient, parameter gradients and
// running stats as the layers one by one, and the layers reported done in the same order.
TEST(BatchNorm, ChainFusesAFollowingReluAndMaxPoolAndMatchesTheThreeLayers) {
  const Shape sample{3, 6, 9};
  const int64_t batch = 4;
  const auto layers = [] {
    std::vector<std::unique_ptr<Layer>> l;
    l.push_back(std::make_unique<BatchNorm>(3));
    l.push_back(std::make_unique<ActivationLayer>(Activation::kRelu));
    l.push_back(std::make_unique<MaxPool2d>(2));
    l.push_back(std::make_unique<BatchNorm>(3));
    l.push_back(std::make_unique<ActivationLayer>(Activation::kRelu));
    l.push_back(std::make_unique<MaxPool2d>(3));
    return l;
  };
  LayerChain chain(layers());
  CpuBackend backend(2);
  ParameterArena arena(chain.parameter_specs(), chain.buffer_specs(), backend);
  chain.bind(arena.params(), arena.buffers());
  chain.setup(sample, batch, backend);
  ASSERT_TRUE(static_cast<BatchNorm&>(chain.layer(0)).max_pool_fused());
  ASSERT_TRUE(static_cast<BatchNorm&>(chain.layer(3)).relu_fused());
  ASSERT_FALSE(static_cast<BatchNorm&>(chain.layer(3)).max_pool_fused());
  Rng rng(9);
  for (float& v : arena.values()) v = rng.uniform(0.5f, 1.5f);

  // The same layers one by one, each bound alone, with the chain's parameter values.
  std::vector<Shape> shapes{sample};
  for (auto& l : layers()) shapes.push_back(l->output_shape(shapes.back()));
  std::vector<std::unique_ptr<Bound>> one;
  {
    auto ls = layers();
    for (size_t i = 0; i < ls.size(); ++i) {
      one.push_back(std::make_unique<Bound>(std::move(ls[i]), shapes[i], batch));
    }
  }
  ParamView* layer_params[] = {&one[0]->arena.params()[0], &one[0]->arena.params()[1],
                               &one[3]->arena.params()[0], &one[3]->arena.params()[1]};
  ASSERT_EQ(arena.params().size(), 4u);
  for (size_t p = 0; p < 4; ++p) {
    const auto from = arena.params()[p].value.span();
    std::copy(from.begin(), from.end(), layer_params[p]->value.span().begin());
  }

  Tensor x(sample.with_batch(batch)), dy(shapes.back().with_batch(batch));
  for (float& v : x.span()) v = rng.uniform(-1.0f, 2.0f);
  for (float& v : dy.span()) v = rng.uniform(-1.0f, 1.0f);
  Pass pass{backend, Mode::kTrain};
  Tensor y(dy.shape()), dx(x.shape());
  chain.forward(pass, x, y);
  std::vector<size_t> done;
  chain.backward(pass, x, y, dy, &dx, [&](size_t i) { done.push_back(i); });
  EXPECT_EQ(done, (std::vector<size_t>{5, 4, 3, 2, 1, 0}));

  std::vector<Tensor> a;  // the layers' outputs
  for (size_t i = 0; i < 6; ++i) a.emplace_back(shapes[i + 1].with_batch(batch));
  std::vector<Tensor> g;  // the gradients of their inputs
  for (size_t i = 0; i < 6; ++i) g.emplace_back(shapes[i].with_batch(batch));
  for (int i = 0; i < 6; ++i) one[i]->layer->forward(pass, i == 0 ? x : a[i - 1], a[i]);
  for (int i = 5; i >= 0; --i) {
    one[i]->layer->backward(pass, i == 0 ? x : a[i - 1], a[i], i == 5 ? dy : g[i + 1], &g[i]);
  }
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.data()[i], a[5].data()[i]) << "y " << i;
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_NEAR(dx.data()[i], g[0].data()[i], 1e-6) << "dx " << i;
  }
  for (size_t p = 0; p < 4; ++p) {
    const Tensor& got = arena.params()[p].grad;
    const Tensor& want = layer_params[p]->grad;
    for (int64_t i = 0; i < got.numel(); ++i) {
      ASSERT_NEAR(got.data()[i], want.data()[i], 1e-6) << "parameter " << p << " grad " << i;
    }
  }
  for (size_t b = 0; b < 2; ++b) {
    const auto got = arena.buffers()[b].span(), want = one[0]->arena.buffers()[b].span();
    ASSERT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << "buffer " << b;
  }

  Pass eval{backend, Mode::kEval};
  chain.forward(eval, x, y);
  for (int i = 0; i < 6; ++i) one[i]->layer->forward(eval, i == 0 ? x : a[i - 1], a[i]);
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.data()[i], a[5].data()[i]) << "eval y " << i;
}

TEST(BatchNorm, TrainNormalizesAndUpdatesRunningStatsEvalUsesThem) {
  Bound b(std::make_unique<BatchNorm>(1, 1e-5f, 0.5f), Shape{1}, 4);
  b.arena.initialize(0);
  Tensor x(Shape{4, 1}), y(Shape{4, 1});
  x.copy_from(std::vector<float>{1, 2, 3, 4});  // mean 2.5, biased var 1.25, unbiased 5/3
  Pass pass{b.backend, Mode::kTrain};
  b.layer->forward(pass, x, y);
  EXPECT_NEAR(y.at({0, 0}), -1.5f / std::sqrt(1.25f + 1e-5f), 1e-5);
  EXPECT_NEAR(b.arena.buffers()[0].at({0}), 1.25f, 1e-6);  // 0.5 * 0 + 0.5 * 2.5
  EXPECT_NEAR(b.arena.buffers()[1].at({0}), 0.5f + 0.5f * 5.0f / 3, 1e-5);
  Pass eval{b.backend, Mode::kEval};
  b.layer->forward(eval, x, y);
  const float rv = b.arena.buffers()[1].at({0});
  EXPECT_NEAR(y.at({0, 0}), (1.0f - 1.25f) / std::sqrt(rv + 1e-5f), 1e-5);
  Tensor dx(x.shape());
  EXPECT_THROW(b.layer->backward(eval, x, y, y, &dx), std::logic_error);
}

TEST(LayerNorm, NormalizesEachRow) {
  Bound b(std::make_unique<LayerNorm>(4), Shape{4}, 2);
  b.arena.initialize(0);
  Tensor x(Shape{2, 4}), y(Shape{2, 4});
  x.copy_from(std::vector<float>{1, 2, 3, 4, -2, 0, 2, 4});
  Pass pass{b.backend};
  b.layer->forward(pass, x, y);
  for (int r = 0; r < 2; ++r) {
    double sum = 0, sq = 0;
    for (int i = 0; i < 4; ++i) {
      sum += y.at({r, i});
      sq += y.at({r, i}) * y.at({r, i});
    }
    EXPECT_NEAR(sum, 0.0, 1e-5);
    EXPECT_NEAR(sq / 4, 1.0, 1e-3);
  }
}

TEST(Dropout, EvalIsIdentityTrainKeepsExpectation) {
  Bound b(std::make_unique<Dropout>(0.5f, 9), Shape{1000}, 2);
  Tensor x(Shape{2, 1000}), y(Shape{2, 1000});
  x.fill(1.0f);
  Pass eval{b.backend, Mode::kEval};
  b.layer->forward(eval, x, y);
  for (float v : y.span()) ASSERT_EQ(v, 1.0f);
  Pass train{b.backend, Mode::kTrain};
  b.layer->forward(train, x, y);
  double sum = 0;
  for (float v : y.span()) {
    ASSERT_TRUE(v == 0.0f || v == 2.0f);
    sum += v;
  }
  EXPECT_NEAR(sum / 2000, 1.0, 0.1);
  std::vector<float> first(y.span().begin(), y.span().end());
  b.layer->forward(train, x, y);
  EXPECT_NE(first, std::vector<float>(y.span().begin(), y.span().end()));  // a fresh mask
}

TEST(Losses, CrossEntropyAndMseByHand) {
  CpuBackend backend(1);
  Tensor logits(Shape{1, 3});
  logits.copy_from(std::vector<float>{0, 0, 0});
  const std::vector<int32_t> label{1};
  EXPECT_NEAR(SoftmaxCrossEntropy().compute(backend, logits, label, nullptr), std::log(3.0), 1e-6);
  logits.copy_from(std::vector<float>{1, 2, 3});
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  // Smoothing 0.3 over 3 classes: q = (0.1, 0.8, 0.1).
  EXPECT_NEAR(SoftmaxCrossEntropy(0.3f).compute(backend, logits, label, nullptr),
              lse - (0.1 * 1 + 0.8 * 2 + 0.1 * 3), 1e-5);
  const std::vector<int32_t> bad{3};
  EXPECT_THROW(SoftmaxCrossEntropy().compute(backend, logits, bad, nullptr), std::out_of_range);

  Tensor p(Shape{2, 1}), t(Shape{2, 1});
  p.copy_from(std::vector<float>{1, 3});
  t.copy_from(std::vector<float>{0, 0});
  EXPECT_FLOAT_EQ(MeanSquaredError().compute(backend, p, t, nullptr), 5.0f);
}

TEST(ShapeErrors, NameTheOpAndTheShapes) {
  Bound b(std::make_unique<Linear>(5, 3), Shape{5}, 8);
  Tensor x(Shape{4, 3}), y(Shape{4, 3});
  Pass pass{b.backend};
  try {
    b.layer->forward(pass, x, y);
    FAIL() << "no ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "linear.forward: x has shape [4, 3], expected [B, 5] with 1 <= B <= 8");
  }
  Tensor big(Shape{9, 5}), ybig(Shape{9, 3});
  EXPECT_THROW(b.layer->forward(pass, big, ybig), ShapeError);
  try {
    Conv2d(3, 4, 5).output_shape(Shape{3, 4, 4});
    FAIL() << "no ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("conv2d"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("[3, 4, 4]"), std::string::npos);
  }
  CpuBackend backend(1);
  Tensor logits(Shape{2, 3});
  const std::vector<int32_t> labels{0};
  EXPECT_THROW(SoftmaxCrossEntropy().compute(backend, logits, labels, nullptr), ShapeError);
  EXPECT_THROW(Linear(3, 3, Linear::Options{true, Activation::kGelu}), std::invalid_argument);
}

}  // namespace
}  // namespace tuner::training
