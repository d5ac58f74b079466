#include "search/samplers/gp/output_warping.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "search/rng.h"

namespace tuner {
namespace {

double skewness(const std::vector<double>& v) {
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double m2 = 0, m3 = 0;
  for (double x : v) m2 += (x - mean) * (x - mean), m3 += std::pow(x - mean, 3);
  m2 /= static_cast<double>(v.size());
  m3 /= static_cast<double>(v.size());
  return m3 / std::pow(m2, 1.5);
}

std::vector<double> normal_sample(int n, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal(0, 1);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = normal(gen);
  return v;
}

TEST(OutputWarping, LeavesNormalValuesNearlyAsTheyAre) {
  std::vector<double> y = normal_sample(200, 1);
  for (double& v : y) v = 3 + 10 * v;
  EXPECT_NEAR(OutputWarping::fit(y).lambda(), 1.0, 0.3);
}

// A minimized loss whose bad trials are orders of magnitude worse: negated (the GP maximizes), a
// long tail of low values.
TEST(OutputWarping, PullsInALongTail) {
  std::vector<double> y = normal_sample(100, 2);
  for (double& v : y) v = -std::exp(2 * v);
  const OutputWarping warp = OutputWarping::fit(y);
  std::vector<double> warped;
  for (double v : y) warped.push_back(warp(v));
  EXPECT_LT(skewness(y), -3.0);
  EXPECT_GT(skewness(warped), -1.0);
  EXPECT_GT(warp.lambda(), 1.0);  // above 1 the negative side is compressed
}

TEST(OutputWarping, IsStrictlyIncreasing) {
  std::vector<double> y = normal_sample(50, 3);
  for (double& v : y) v = std::exp(3 * v);  // the tail on the other side: lambda < 1 flips
  for (const std::vector<double>& values : {y, normal_sample(50, 4)}) {
    const OutputWarping warp = OutputWarping::fit(values);
    double previous = -INFINITY;
    for (double v = -50; v <= 50; v += 0.125) {
      const double w = warp(v);
      ASSERT_TRUE(std::isfinite(w)) << v;
      EXPECT_GT(w, previous) << v;
      previous = w;
    }
  }
}

TEST(OutputWarping, LogDerivativeMatchesFiniteDifferences) {
  std::vector<double> y = normal_sample(60, 5);
  for (double& v : y) v = -std::exp(2 * v);
  const OutputWarping warp = OutputWarping::fit(y);
  for (double v : {-20.0, -3.0, -1.0, -0.2, 0.0, 0.5, 4.0}) {
    const double h = 1e-6 * (1 + std::abs(v));
    EXPECT_NEAR(warp.log_derivative(v), std::log((warp(v + h) - warp(v - h)) / (2 * h)), 1e-5) << v;
  }
}

// A study's trials in the order a sampler makes them: 40 points uniform over the unit square, then
// 10 along the line through (0.3, 0.6) in direction (1, -1), within 0.2 of it along and 5e-4
// across; values -f (maximized, as the GP sampler fits them).
struct Trials {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
};
Trials trials(const std::function<double(double, double)>& f) {
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> unit(0, 1), close(-0.05, 0.05);
  Trials t;
  for (int i = 0; i < 50; ++i) {
    const double along = 4 * close(gen), across = 0.01 * close(gen);
    const double a = i < 40 ? unit(gen) : 0.3 + along + across;
    const double b = i < 40 ? unit(gen) : 0.6 - along + across;
    t.x.push_back({a, b});
    t.y.push_back(-f(a, b));
  }
  return t;
}

bool warps(const Trials& t) {
  return warping_predicts_no_worse(
      t.x, t.y, [](const std::vector<std::vector<double>>& x, const std::vector<double>& y) {
        Rng rng(17);
        return GaussianProcess::fit(x, y, rng);
      });
}

// A rotated quadratic valley of condition 1e6, its later trials along the valley's floor: the
// warping bends the walls the GP extrapolates from, and the values as they are predict the floor.
TEST(OutputWarping, ForwardCheckDropsTheWarpingInAnIllConditionedValley) {
  EXPECT_FALSE(warps(trials([](double a, double b) {
    const double steep = (a - 0.3) + (b - 0.6), flat = (a - 0.3) - (b - 0.6);
    return 1e6 * steep * steep + flat * flat;
  })));
}

// The same trials on a loss that explodes away from its best point, and on a cone: the warped
// model predicts no worse, and the warping stays; so it does with too few trials to hold any out.
TEST(OutputWarping, ForwardCheckKeepsTheWarpingWhereItPredictsNoWorse) {
  EXPECT_TRUE(warps(
      trials([](double a, double b) { return std::exp(12 * std::hypot(a - 0.3, b - 0.6)) - 1; })));
  EXPECT_TRUE(warps(trials([](double a, double b) { return std::hypot(a - 0.3, b - 0.6); })));
  Trials few = trials([](double a, double b) { return 1e6 * (a - b) * (a - b); });
  few.x.resize(6);
  few.y.resize(6);
  EXPECT_TRUE(warps(few));
}

TEST(OutputWarping, ConstantOrSingleValuesGetTheIdentityShape) {
  EXPECT_EQ(OutputWarping::fit({}).lambda(), 1.0);
  EXPECT_EQ(OutputWarping::fit({2.0}).lambda(), 1.0);
  const OutputWarping constant = OutputWarping::fit({4.0, 4.0, 4.0});
  EXPECT_EQ(constant.lambda(), 1.0);
  EXPECT_LT(constant(3.0), constant(5.0));
}

}  // namespace
}  // namespace tuner
