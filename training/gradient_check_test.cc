// One finite-difference gradient check over every layer and loss (as ggml's test-backend-ops):
// each case builds a layer, runs forward and backward for L = sum(y * r) with a fixed random r,
// and compares the analytic input and parameter gradients with central differences.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "training/backends/cpu/cpu_backend.h"
#include "training/layers/activation.h"
#include "training/layers/avg_pool2d.h"
#include "training/layers/batch_norm.h"
#include "training/layers/conv2d.h"
#include "training/layers/dropout.h"
#include "training/layers/flatten.h"
#include "training/layers/global_avg_pool.h"
#include "training/layers/layer_norm.h"
#include "training/layers/linear.h"
#include "training/layers/max_pool2d.h"
#include "training/layers/residual.h"
#include "training/losses/cross_entropy.h"
#include "training/losses/mean_squared_error.h"
#include "training/parameter_arena.h"
#include "training/rng.h"

namespace tuner::training {
namespace {

constexpr double kEps = 1e-3;
constexpr double kRelTol = 1e-2;
constexpr double kAbsTol = 2e-3;

enum class Inputs {
  kSmooth,        // uniform in [-1, 1]
  kAwayFromZero,  // |x| in [0.1, 1]: no ReLU kink within eps
  kDistinct,      // a shuffled grid with steps of 0.05: no ties within a max-pool window
};

struct GradCase {
  std::string name;
  std::function<std::unique_ptr<Layer>()> make;
  Shape sample;
  int64_t batch = 2;
  Inputs inputs = Inputs::kSmooth;
  std::function<void(Layer&)> before_forward;  // e.g. replay the same dropout mask
};

void PrintTo(const GradCase& c, std::ostream* os) { *os << c.name; }

void fill_inputs(Inputs kind, Rng& rng, std::span<float> x) {
  switch (kind) {
    case Inputs::kSmooth:
      for (float& v : x) v = rng.uniform(-1.0f, 1.0f);
      return;
    case Inputs::kAwayFromZero:
      for (float& v : x) {
        const float m = rng.uniform(0.1f, 1.0f);
        v = rng.uniform() < 0.5f ? -m : m;
      }
      return;
    case Inputs::kDistinct: {
      for (size_t i = 0; i < x.size(); ++i) x[i] = -1.0f + 0.05f * static_cast<float>(i);
      for (size_t i = x.size(); i > 1; --i) {
        std::swap(x[i - 1], x[rng.next_u64() % i]);
      }
      return;
    }
  }
}

bool close(double numeric, double analytic) {
  return std::abs(numeric - analytic) <=
         kAbsTol + kRelTol * std::max(std::abs(numeric), std::abs(analytic));
}

class GradientCheck : public ::testing::TestWithParam<GradCase> {};

TEST_P(GradientCheck, InputAndParameterGradientsMatchFiniteDifferences) {
  const GradCase& c = GetParam();
  CpuBackend backend(2);
  std::unique_ptr<Layer> layer = c.make();
  const Shape out_sample = layer->output_shape(c.sample);
  ParameterArena arena(layer->parameter_specs(), layer->buffer_specs(), backend);
  layer->bind(arena.params(), arena.buffers());
  layer->setup(c.sample, c.batch, backend);
  arena.initialize(7);
  Rng rng(11);
  // Move every parameter off its initial constants (gamma = 1, bias = 0) so all terms matter.
  for (float& v : arena.values()) v += rng.uniform(-0.3f, 0.3f);

  Tensor x(c.sample.with_batch(c.batch));
  fill_inputs(c.inputs, rng, x.span());
  Tensor y(out_sample.with_batch(c.batch));
  Tensor r(out_sample.with_batch(c.batch));
  for (float& v : r.span()) v = rng.uniform(-1.0f, 1.0f);
  Tensor dx(x.shape());
  Pass pass{backend, Mode::kTrain};

  auto loss = [&]() {
    if (c.before_forward) c.before_forward(*layer);
    layer->forward(pass, x, y);
    double l = 0.0;
    for (int64_t i = 0; i < y.numel(); ++i) l += static_cast<double>(y.data()[i]) * r.data()[i];
    return l;
  };
  loss();
  layer->backward(pass, x, y, r, &dx);
  std::vector<float> param_grads(arena.grads().begin(), arena.grads().end());

  auto numeric = [&](float& v) {
    const float saved = v;
    v = static_cast<float>(saved + kEps);
    const double plus = loss();
    v = static_cast<float>(saved - kEps);
    const double minus = loss();
    v = saved;
    return (plus - minus) / (2 * kEps);
  };
  int failures = 0;
  for (int64_t i = 0; i < x.numel() && failures < 5; ++i) {
    const double num = numeric(x.data()[i]);
    if (!close(num, dx.data()[i])) {
      ++failures;
      ADD_FAILURE() << c.name << ": d/dx[" << i << "] numeric " << num << " analytic "
                    << dx.data()[i];
    }
  }
  for (size_t p = 0; p < arena.param_specs().size(); ++p) {
    Tensor& value = arena.params()[p].value;
    for (int64_t i = 0; i < value.numel() && failures < 5; ++i) {
      const double num = numeric(value.data()[i]);
      const double ana = param_grads[arena.offset(p) + i];
      if (!close(num, ana)) {
        ++failures;
        ADD_FAILURE() << c.name << ": d/d" << arena.param_specs()[p].name << "[" << i
                      << "] numeric " << num << " analytic " << ana;
      }
    }
  }
}

template <class... L>
std::vector<std::unique_ptr<Layer>> chain(std::unique_ptr<L>... layers) {
  std::vector<std::unique_ptr<Layer>> v;
  (v.push_back(std::move(layers)), ...);
  return v;
}

std::vector<GradCase> cases() {
  std::vector<GradCase> c;
  c.push_back({"linear", [] { return std::make_unique<Linear>(5, 4); }, Shape{5}, 3});
  c.push_back({"linear_no_bias",
               [] { return std::make_unique<Linear>(4, 3, Linear::Options{false}); }, Shape{4}});
  c.push_back({"linear_tanh_fused",
               [] {
                 return std::make_unique<Linear>(4, 3, Linear::Options{true, Activation::kTanh});
               },
               Shape{4}});
  c.push_back({"linear_sigmoid_fused",
               [] {
                 return std::make_unique<Linear>(4, 3, Linear::Options{true, Activation::kSigmoid});
               },
               Shape{4}});
  c.push_back({"relu", [] { return make_relu(); }, Shape{3, 4}, 2, Inputs::kAwayFromZero});
  c.push_back({"gelu", [] { return make_gelu(); }, Shape{7}});
  c.push_back({"tanh", [] { return make_tanh(); }, Shape{7}});
  c.push_back({"sigmoid", [] { return make_sigmoid(); }, Shape{7}});
  c.push_back({"dropout", [] { return std::make_unique<Dropout>(0.3f, 5); }, Shape{10}, 3,
               Inputs::kSmooth, [](Layer& l) { static_cast<Dropout&>(l).set_calls(0); }});
  c.push_back({"flatten", [] { return std::make_unique<Flatten>(); }, Shape{2, 2, 3}});
  c.push_back({"conv2d_pad1",
               [] {
                 return std::make_unique<Conv2d>(2, 3, 3, Conv2d::Options{1, 1});
               },
               Shape{2, 5, 5}});
  c.push_back(
      {"conv2d_stride2_tanh",
       [] {
         return std::make_unique<Conv2d>(2, 2, 3, Conv2d::Options{2, 0, true, Activation::kTanh});
       },
       Shape{2, 6, 7}, 3});
  c.push_back({"max_pool2d", [] { return std::make_unique<MaxPool2d>(2); }, Shape{2, 4, 4}, 2,
               Inputs::kDistinct});
  c.push_back({"max_pool2d_overlap_pad", [] { return std::make_unique<MaxPool2d>(3, 1, 1); },
               Shape{1, 4, 5}, 2, Inputs::kDistinct});
  c.push_back({"avg_pool2d", [] { return std::make_unique<AvgPool2d>(2); }, Shape{2, 4, 4}});
  c.push_back(
      {"avg_pool2d_pad", [] { return std::make_unique<AvgPool2d>(3, 2, 1); }, Shape{2, 5, 5}});
  c.push_back(
      {"global_avg_pool", [] { return std::make_unique<GlobalAvgPool>(); }, Shape{3, 2, 3}});
  c.push_back({"batch_norm_1d", [] { return std::make_unique<BatchNorm>(4); }, Shape{4}, 5});
  c.push_back({"batch_norm_2d", [] { return std::make_unique<BatchNorm>(3); }, Shape{3, 2, 2}, 3});
  c.push_back({"layer_norm", [] { return std::make_unique<LayerNorm>(6); }, Shape{6}, 3});
  c.push_back({"layer_norm_rows", [] { return std::make_unique<LayerNorm>(4); }, Shape{3, 4}});
  c.push_back({"residual_identity",
               [] {
                 return std::make_unique<Residual>(
                     chain(std::make_unique<Linear>(4, 4, Linear::Options{true, Activation::kTanh}),
                           std::make_unique<Linear>(4, 4)),
                     chain());
               },
               Shape{4}, 3});
  c.push_back({"residual_projection",
               [] {
                 return std::make_unique<Residual>(
                     chain(std::make_unique<Conv2d>(2, 3, 3, Conv2d::Options{2, 1}),
                           std::make_unique<BatchNorm>(3), make_tanh(),
                           std::make_unique<Conv2d>(3, 3, 3, Conv2d::Options{1, 1})),
                     chain(std::make_unique<Conv2d>(2, 3, 1, Conv2d::Options{2, 0})));
               },
               Shape{2, 4, 4}, 3});
  return c;
}

INSTANTIATE_TEST_SUITE_P(AllLayers, GradientCheck, ::testing::ValuesIn(cases()),
                         [](const auto& p) { return p.param.name; });

// ---- Losses ----

struct LossCase {
  std::string name;
  int64_t batch, classes;
  // loss(pred, grad or nullptr)
  std::function<float(Backend&, const Tensor&, Tensor*)> loss;
};

void PrintTo(const LossCase& c, std::ostream* os) { *os << c.name; }

class LossGradientCheck : public ::testing::TestWithParam<LossCase> {};

TEST_P(LossGradientCheck, GradientMatchesFiniteDifferences) {
  const LossCase& c = GetParam();
  CpuBackend backend(2);
  Rng rng(3);
  Tensor pred(Shape{c.batch, c.classes});
  for (float& v : pred.span()) v = rng.uniform(-2.0f, 2.0f);
  Tensor grad(pred.shape());
  c.loss(backend, pred, &grad);
  for (int64_t i = 0; i < pred.numel(); ++i) {
    float& v = pred.data()[i];
    const float saved = v;
    v = static_cast<float>(saved + kEps);
    const double plus = c.loss(backend, pred, nullptr);
    v = static_cast<float>(saved - kEps);
    const double minus = c.loss(backend, pred, nullptr);
    v = saved;
    const double num = (plus - minus) / (2 * kEps);
    // The loss is a mean, so gradients are small: compare on the loss's own scale.
    EXPECT_NEAR(num, grad.data()[i], 2e-4 + kRelTol * std::abs(num)) << c.name << " [" << i << "]";
  }
}

std::vector<LossCase> loss_cases() {
  static const std::vector<int32_t> labels{2, 0, 4, 1};
  auto ce = [](float smoothing) {
    return [smoothing](Backend& b, const Tensor& p, Tensor* g) {
      return SoftmaxCrossEntropy(smoothing).compute(b, p, labels, g);
    };
  };
  return {
      {"cross_entropy", 4, 5, ce(0.0f)},
      {"cross_entropy_smoothed", 4, 5, ce(0.1f)},
      {"mse", 3, 4,
       [](Backend& b, const Tensor& p, Tensor* g) {
         Tensor target(p.shape());
         for (int64_t i = 0; i < target.numel(); ++i)
           target.data()[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
         return MeanSquaredError().compute(b, p, target, g);
       }},
  };
}

INSTANTIATE_TEST_SUITE_P(AllLosses, LossGradientCheck, ::testing::ValuesIn(loss_cases()),
                         [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace tuner::training
