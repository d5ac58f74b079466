// The model container: a tiny MLP learns, runs are bit-for-bit reproducible, shapes are checked.
#include "training/sequential.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "training/backends/cpu/cpu_backend.h"
#include "training/layers/activation.h"
#include "training/layers/batch_norm.h"
#include "training/layers/conv2d.h"
#include "training/layers/dropout.h"
#include "training/layers/flatten.h"
#include "training/layers/linear.h"
#include "training/layers/max_pool2d.h"
#include "training/layers/residual.h"
#include "training/losses/cross_entropy.h"
#include "training/optim/adam.h"
#include "training/optim/clip.h"
#include "training/optim/sgd.h"
#include "training/shape_error.h"

namespace tuner::training {
namespace {

std::vector<std::unique_ptr<Layer>> mlp(int64_t in, int64_t hidden, int64_t out) {
  std::vector<std::unique_ptr<Layer>> layers;
  layers.push_back(std::make_unique<Linear>(in, hidden, Linear::Options{true, Activation::kRelu}));
  layers.push_back(std::make_unique<Dropout>(0.1f, 3));
  layers.push_back(std::make_unique<Linear>(hidden, out));
  return layers;
}

// conv(1 -> 4, 3x3, relu), batch norm, 2x2 max pooling, flatten, linear(64 -> 3): for [1, 8, 8].
std::vector<std::unique_ptr<Layer>> small_cnn() {
  std::vector<std::unique_ptr<Layer>> layers;
  layers.push_back(
      std::make_unique<Conv2d>(1, 4, 3, Conv2d::Options{1, 1, true, Activation::kRelu}));
  layers.push_back(std::make_unique<BatchNorm>(4));
  layers.push_back(std::make_unique<MaxPool2d>(2));
  layers.push_back(std::make_unique<Flatten>());
  layers.push_back(std::make_unique<Linear>(4 * 4 * 4, 3));
  return layers;
}

// Two Gaussian blobs in 2-D separated by the line x0 + x1 = 0.
void separable_batch(Rng& rng, Tensor& x, std::vector<int32_t>& labels) {
  for (int64_t i = 0; i < x.dim(0); ++i) {
    const int32_t label = rng.uniform() < 0.5f ? 1 : 0;
    const float center = label ? 1.0f : -1.0f;
    x.at({i, 0}) = center + 0.4f * rng.normal();
    x.at({i, 1}) = center + 0.4f * rng.normal();
    labels[i] = label;
  }
}

// Trains for `steps` and returns the final loss.
float train(Sequential& model, Optimizer& opt, int steps, uint64_t data_seed) {
  SoftmaxCrossEntropy ce(0.05f);
  Rng rng(data_seed);
  Tensor x(Shape{32, 2});
  std::vector<int32_t> labels(32);
  float loss = 0.0f;
  for (int s = 0; s < steps; ++s) {
    separable_batch(rng, x, labels);
    const Tensor& logits = model.forward(x, Mode::kTrain);
    loss = ce.compute(model.backend(), logits, labels, &model.output_grad());
    model.backward();
    clip_grad_norm(model.backend(), model.parameters().grads(), 5.0);
    opt.step(model.parameters().values(), model.parameters().grads(), 0.05f);
  }
  return loss;
}

TEST(Sequential, TinyMlpLearnsASeparableProblem) {
  CpuBackend backend(2);
  Sequential model(Shape{2}, mlp(2, 16, 2), 32, backend, 1);
  Sgd sgd(backend, static_cast<int64_t>(model.parameters().values().size()),
          SgdOptions{0.9f, 0.0f, 1e-4f, true});
  const float loss = train(model, sgd, 60, 2);
  EXPECT_LT(loss, 0.25f);
  // Held-out accuracy in eval mode.
  Rng rng(99);
  Tensor x(Shape{32, 2});
  std::vector<int32_t> labels(32);
  separable_batch(rng, x, labels);
  const Tensor& logits = model.forward(x, Mode::kEval);
  int correct = 0;
  for (int64_t i = 0; i < 32; ++i) correct += (logits.at({i, 1}) > logits.at({i, 0})) == labels[i];
  EXPECT_GE(correct, 29);
}

TEST(Sequential, SameSeedSameThreadsGivesBitIdenticalWeights) {
  auto run = [](int threads) {
    CpuBackend backend(threads);
    Sequential model(Shape{2}, mlp(2, 64, 2), 32, backend, 7);
    Adam adam(backend, static_cast<int64_t>(model.parameters().values().size()), AdamOptions{});
    train(model, adam, 20, 8);
    auto v = model.parameters().values();
    return std::vector<float>(v.begin(), v.end());
  };
  EXPECT_EQ(run(2), run(2));
  EXPECT_EQ(run(1), run(1));
}

TEST(Sequential, SmallCnnRunsAndKeepsParametersInOneArena) {
  CpuBackend backend(2);
  std::vector<std::unique_ptr<Layer>> layers = small_cnn();
  Sequential model(Shape{1, 8, 8}, std::move(layers), 5, backend, 3);
  EXPECT_EQ(model.output_shape(), (Shape{3}));
  ParameterArena& arena = model.parameters();
  EXPECT_EQ(arena.num_parameters(), 4 * 9 + 4 + 4 + 4 + 64 * 3 + 3);
  for (size_t i = 0; i < arena.param_specs().size(); ++i) {
    EXPECT_EQ(arena.params()[i].value.data(), arena.values().data() + arena.offset(i));
    EXPECT_EQ(arena.params()[i].grad.data(), arena.grads().data() + arena.offset(i));
  }
  EXPECT_EQ(arena.param_specs()[0].name, "0.conv2d.weight");
  Tensor x(Shape{5, 1, 8, 8});
  Rng rng(1);
  for (float& v : x.span()) v = rng.uniform();
  const Tensor& y = model.forward(x, Mode::kTrain);
  EXPECT_EQ(y.shape(), (Shape{5, 3}));
  model.output_grad().fill(0.1f);
  model.backward();
  double norm = 0;
  for (float g : arena.grads()) norm += g * g;
  EXPECT_GT(norm, 0.0);
  // A smaller batch reuses the same buffers.
  Tensor x2 = x.slice(0, 2);
  EXPECT_EQ(model.forward(x2, Mode::kEval).shape(), (Shape{2, 3}));
  EXPECT_NE(model.describe().find("conv2d(1 -> 4"), std::string::npos);
}

// The figure a sweep trades accuracy against (an engine job's train_flops_per_sample), counted
// by hand: 2 per multiply-add, plus the bias and a fused activation per output, one per element
// for batch norm, one per window element for pooling, nothing for flatten.
TEST(Sequential, ForwardFlopsCountEachLayer) {
  CpuBackend backend(1);
  std::vector<std::unique_ptr<Layer>> layers = small_cnn();
  Sequential model(Shape{1, 8, 8}, std::move(layers), 2, backend, 3);
  const int64_t conv = 4 * 8 * 8 * (2 * 1 * 3 * 3 + 1 + 1);
  const int64_t norm = 4 * 8 * 8;
  const int64_t pool = 4 * 4 * 4 * (2 * 2);
  const int64_t linear = 3 * (2 * 64 + 1);
  EXPECT_EQ(model.forward_flops(), conv + norm + pool + linear);

  // A residual block with a projection: its body's, its shortcut's and the sum's.
  std::vector<std::unique_ptr<Layer>> body, shortcut;
  body.push_back(
      std::make_unique<Conv2d>(2, 4, 3, Conv2d::Options{1, 1, false, Activation::kNone}));
  body.push_back(std::make_unique<BatchNorm>(4));
  shortcut.push_back(
      std::make_unique<Conv2d>(2, 4, 1, Conv2d::Options{1, 0, false, Activation::kNone}));
  const Residual block(std::move(body), std::move(shortcut));
  EXPECT_EQ(block.forward_flops(Shape{2, 5, 5}),
            4 * 25 * (2 * 2 * 9) + 4 * 25 + 4 * 25 * (2 * 2) + 4 * 25);

  Sequential net(Shape{2}, mlp(2, 16, 2), 4, backend, 1);
  // linear(2 -> 16, relu), dropout (16 elements), linear(16 -> 2).
  EXPECT_EQ(net.forward_flops(), 16 * (2 * 2 + 2) + 16 + 2 * (2 * 16 + 1));
}

TEST(Sequential, RejectsAChainWhoseShapesDoNotFit) {
  CpuBackend backend(1);
  std::vector<std::unique_ptr<Layer>> layers;
  layers.push_back(std::make_unique<Linear>(4, 8));
  layers.push_back(std::make_unique<Linear>(6, 2));
  try {
    Sequential model(Shape{4}, std::move(layers), 4, backend);
    FAIL() << "no ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "layer 1 (linear): linear: input sample shape [8], expected [6]");
  }
  Sequential ok(Shape{2}, mlp(2, 4, 2), 4, backend);
  Tensor x(Shape{5, 2});
  EXPECT_THROW(ok.forward(x, Mode::kEval), ShapeError);
}

}  // namespace
}  // namespace tuner::training
