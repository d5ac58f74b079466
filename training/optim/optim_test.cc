// Optimizers against hand-worked steps, gradient clipping, LR schedules and initializers.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "training/backends/cpu/cpu_backend.h"
#include "training/init.h"
#include "training/optim/adam.h"
#include "training/optim/clip.h"
#include "training/optim/lr_schedule.h"
#include "training/optim/sgd.h"

namespace tuner::training {
namespace {

TEST(Sgd, NesterovMomentumWithWeightDecayByHand) {
  CpuBackend backend(1);
  Sgd sgd(backend, 1, SgdOptions{0.9f, 0.0f, 0.1f, true});
  std::vector<float> p{1.0f};
  const std::vector<float> g{0.5f};
  // Step 1: g' = 0.5 + 0.1 * 1 = 0.6; v = 0.6; update = g' + 0.9 v = 1.14; p = 1 - 0.1 * 1.14.
  sgd.step(p, g, 0.1f);
  EXPECT_NEAR(p[0], 0.886f, 1e-6);
  // Step 2: g' = 0.5 + 0.0886 = 0.5886; v = 0.9 * 0.6 + 0.5886 = 1.1286;
  // update = 0.5886 + 0.9 * 1.1286 = 1.60434; p = 0.886 - 0.160434.
  sgd.step(p, g, 0.1f);
  EXPECT_NEAR(p[0], 0.725566f, 1e-6);
  EXPECT_NEAR(sgd.state()[0], 1.1286f, 1e-6);
  EXPECT_THROW(Sgd(backend, 1, SgdOptions{0.0f, 0.0f, 0.0f, true}), std::invalid_argument);
}

TEST(Sgd, PlainMomentumByHand) {
  CpuBackend backend(1);
  Sgd sgd(backend, 1, SgdOptions{0.5f});
  std::vector<float> p{0.0f};
  const std::vector<float> g{1.0f};
  sgd.step(p, g, 1.0f);  // v = 1
  sgd.step(p, g, 1.0f);  // v = 1.5
  EXPECT_FLOAT_EQ(p[0], -2.5f);
}

TEST(Adam, FirstStepMovesByLrTimesSignAndSecondByHand) {
  CpuBackend backend(1);
  Adam adam(backend, 2, AdamOptions{});
  std::vector<float> p{1.0f, -1.0f};
  const std::vector<float> g{0.2f, -3.0f};
  adam.step(p, g, 0.01f);
  // Bias-corrected m / sqrt(v) = g / |g| on the first step.
  EXPECT_NEAR(p[0], 0.99f, 1e-6);
  EXPECT_NEAR(p[1], -0.99f, 1e-6);
  const std::vector<float> g2{0.1f, 0.0f};
  adam.step(p, g2, 0.01f);
  // m = 0.9 * 0.02 + 0.01 = 0.028, v = 0.999 * 4e-5 + 0.001 * 0.01 = 4.996e-5;
  // p -= 0.01 / (1 - 0.81) * 0.028 / (sqrt(5.996e-5) / sqrt(1 - 0.998001) + 1e-8).
  const double m = 0.028, v = 4.996e-5;
  const double want = 0.99 - 0.01 / 0.19 * m / (std::sqrt(v) / std::sqrt(1 - 0.998001) + 1e-8);
  EXPECT_NEAR(p[0], want, 1e-6);
}

TEST(Adam, AdamWDecaysDecoupledFromTheGradient) {
  CpuBackend backend(1);
  Adam adamw(backend, 1, adamw_options(0.1f));
  std::vector<float> p{2.0f};
  const std::vector<float> zero{0.0f};
  adamw.step(p, zero, 0.5f);  // m = v = 0: only the decay p *= 1 - 0.5 * 0.1
  EXPECT_FLOAT_EQ(p[0], 1.9f);
  // Adam's L2 instead puts wd * p in the gradient: a full-size first step of lr.
  Adam adam(backend, 1, AdamOptions{0.9f, 0.999f, 1e-8f, 0.1f, false});
  std::vector<float> q{2.0f};
  adam.step(q, zero, 0.5f);
  EXPECT_NEAR(q[0], 1.5f, 1e-6);
}

TEST(Clip, ScalesToMaxNormAndReportsTheNorm) {
  CpuBackend backend(2);
  std::vector<float> g{3.0f, 4.0f};
  EXPECT_DOUBLE_EQ(clip_grad_norm(backend, g, 1.0), 5.0);
  EXPECT_NEAR(std::hypot(g[0], g[1]), 1.0, 1e-6);
  std::vector<float> small{0.3f, 0.4f};
  clip_grad_norm(backend, small, 1.0);
  EXPECT_FLOAT_EQ(small[0], 0.3f);
}

TEST(LrSchedule, Values) {
  EXPECT_DOUBLE_EQ(ConstantLr(0.1).lr(1000), 0.1);
  const StepLr step(1.0, 10, 0.5);
  EXPECT_DOUBLE_EQ(step.lr(0), 1.0);
  EXPECT_DOUBLE_EQ(step.lr(9), 1.0);
  EXPECT_DOUBLE_EQ(step.lr(10), 0.5);
  EXPECT_DOUBLE_EQ(step.lr(25), 0.25);
  const CosineLr cos(1.0, 4, 14, 0.1);
  EXPECT_DOUBLE_EQ(cos.lr(0), 0.25);
  EXPECT_DOUBLE_EQ(cos.lr(3), 1.0);
  EXPECT_DOUBLE_EQ(cos.lr(4), 1.0);
  EXPECT_NEAR(cos.lr(9), 0.55, 1e-12);  // half way: min + (base - min) / 2
  EXPECT_NEAR(cos.lr(14), 0.1, 1e-12);
  EXPECT_NEAR(cos.lr(100), 0.1, 1e-12);
  EXPECT_THROW(CosineLr(1.0, 5, 5), std::invalid_argument);
}

TEST(LrSchedule, BatchSizeScaling) {
  EXPECT_DOUBLE_EQ(scale_lr_linear(0.1, 256, 1024), 0.4);
  EXPECT_DOUBLE_EQ(scale_lr_sqrt(0.1, 256, 1024), 0.2);
  EXPECT_DOUBLE_EQ(scale_lr_linear(0.1, 256, 128), 0.05);
  EXPECT_THROW(scale_lr_sqrt(0.1, 0, 128), std::invalid_argument);
}

TEST(Init, SeededAndWithTheRightScale) {
  std::vector<float> a(20000), b(20000);
  Rng r1(5), r2(5);
  initialize(Init::kHeNormal, 50, 10, r1, a);
  initialize(Init::kHeNormal, 50, 10, r2, b);
  EXPECT_EQ(a, b);
  double sq = 0;
  for (float v : a) sq += v * v;
  EXPECT_NEAR(sq / a.size(), 2.0 / 50, 0.002);
  Rng r3(6);
  initialize(Init::kXavierUniform, 30, 10, r3, a);
  const float bound = std::sqrt(6.0f / 40);
  float mx = 0;
  for (float v : a) mx = std::max(mx, std::abs(v));
  EXPECT_LE(mx, bound);
  EXPECT_GT(mx, 0.95f * bound);
}

}  // namespace
}  // namespace tuner::training
