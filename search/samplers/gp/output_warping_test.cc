#include "search/samplers/gp/output_warping.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

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

TEST(OutputWarping, ConstantOrSingleValuesGetTheIdentityShape) {
  EXPECT_EQ(OutputWarping::fit({}).lambda(), 1.0);
  EXPECT_EQ(OutputWarping::fit({2.0}).lambda(), 1.0);
  const OutputWarping constant = OutputWarping::fit({4.0, 4.0, 4.0});
  EXPECT_EQ(constant.lambda(), 1.0);
  EXPECT_LT(constant(3.0), constant(5.0));
}

}  // namespace
}  // namespace tuner
