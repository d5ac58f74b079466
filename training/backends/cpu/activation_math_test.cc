// The CPU kernels' vectorizable exp, erf, tanh, sigmoid and GELU against double precision over
// dense grids, past the ranges where each switches method or clamps.
#include "training/backends/cpu/activation_math.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tuner::training::cpu {
namespace {

// f over n + 1 evenly spaced points of [lo, hi]: the worst of |got - want| / (floor + |want|).
template <class Got, class Want>
double worst_error(Got got, Want want, double lo, double hi, double floor, int n = 200000) {
  double worst = 0.0;
  for (int i = 0; i <= n; ++i) {
    const float x = static_cast<float>(lo + (hi - lo) * i / n);
    const double w = want(static_cast<double>(x));
    worst = std::max(worst, std::fabs(got(x) - w) / (floor + std::fabs(w)));
  }
  return worst;
}

double gelu_exact(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

TEST(ActivationMath, ExpIsWithinAFewUlpsWhereFloatsAreNormal) {
  EXPECT_LT(worst_error(
                exp_approx, [](double x) { return std::exp(x); }, -87, 88, 0),
            3e-7);
  EXPECT_EQ(exp_approx(0.0f), 1.0f);
  EXPECT_TRUE(std::isfinite(exp_approx(1000.0f)));  // clamped, not inf or NaN
  EXPECT_LT(exp_approx(-1000.0f), 1e-37f);
}

TEST(ActivationMath, TanhAndSigmoidAreWithinAFewUlps) {
  EXPECT_LT(worst_error(
                tanh_approx, [](double x) { return std::tanh(x); }, -20, 20, 1e-30),
            1e-6);
  EXPECT_LT(worst_error(
                tanh_approx, [](double x) { return std::tanh(x); }, -0.3, 0.3, 1e-30),
            1e-6);
  EXPECT_EQ(tanh_approx(0.0f), 0.0f);
  EXPECT_EQ(tanh_approx(100.0f), 1.0f);
  EXPECT_EQ(tanh_approx(-100.0f), -1.0f);
  EXPECT_LT(worst_error(
                sigmoid, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -80, 80, 0),
            1e-6);
}

TEST(ActivationMath, GeluAndItsGradientAreWithinTheOpSuitesTolerance) {
  EXPECT_LT(worst_error(
                erf_approx, [](double x) { return std::erf(x); }, -6, 6, 1.0),
            6e-7);
  // Absolute error relative to 1 + |x|: GELU's values near 0 on the left are tiny.
  EXPECT_LT(worst_error(gelu, gelu_exact, -12, 12, 1.0), 3e-7);
  const auto grad_exact = [](double x) {
    return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) +
           x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
  };
  EXPECT_LT(worst_error(gelu_grad, grad_exact, -12, 12, 1.0), 5e-7);
  EXPECT_EQ(gelu(0.0f), 0.0f);
}

}  // namespace
}  // namespace tuner::training::cpu
