#include "drift/chi_square.h"

#include <gtest/gtest.h>

#include <vector>

namespace tuner::drift {
namespace {

// The expected values come from scipy 1.17.1 (PyPI, in a venv), computed once:
//   scipy.stats.chi2_contingency([[30, 25, 45, 0], [20, 35, 40, 5]], correction=False)
//   scipy.stats.chi2.sf(x, df)

TEST(ChiSquareTest, HomogeneityMatchesScipy) {
  const std::vector<int64_t> a = {30, 25, 45, 0}, b = {20, 35, 40, 5};
  const ChiSquareResult r = chi_square_homogeneity(a, b);
  EXPECT_NEAR(r.statistic, 8.96078431372549, 1e-12);
  EXPECT_EQ(r.df, 3);
  EXPECT_NEAR(r.p_value, 0.02981684987936667, 1e-13);
  // A category neither sample has is no category.
  const std::vector<int64_t> a0 = {30, 0, 25, 45, 0}, b0 = {20, 0, 35, 40, 5};
  const ChiSquareResult r0 = chi_square_homogeneity(a0, b0);
  EXPECT_EQ(r0.df, 3);
  EXPECT_NEAR(r0.statistic, r.statistic, 1e-12);
}

TEST(ChiSquareTest, SameSharesAreNoEvidence) {
  const std::vector<int64_t> a = {10, 20, 30}, b = {20, 40, 60};
  const ChiSquareResult r = chi_square_homogeneity(a, b);
  EXPECT_NEAR(r.statistic, 0.0, 1e-12);
  EXPECT_NEAR(r.p_value, 1.0, 1e-12);
  const std::vector<int64_t> one = {5, 0}, other = {7, 0};
  EXPECT_EQ(chi_square_homogeneity(one, other).df, 0);
  EXPECT_EQ(chi_square_homogeneity(one, other).p_value, 1.0);
}

TEST(ChiSquareTest, SurvivalMatchesScipy) {
  const struct {
    double x, df, sf;
  } kCases[] = {{1.0, 1, 0.31731050786291115},     {3.84, 1, 0.05004352124870519},
                {10.0, 9, 0.3504852123233613},     {16.92, 9, 0.04998360638750561},
                {50.0, 9, 1.0772382022574693e-07}, {0.5, 4, 0.9735009788392561},
                {200.0, 9, 3.312992393909567e-38}};
  for (const auto& c : kCases) {
    EXPECT_NEAR(chi_square_survival(c.x, c.df) / c.sf, 1.0, 1e-12) << c.x << " df " << c.df;
  }
  EXPECT_EQ(chi_square_survival(0.0, 3), 1.0);
  EXPECT_THROW(chi_square_survival(1.0, 0), std::invalid_argument);
}

TEST(ChiSquareTest, RefusesMismatchedOrEmptyCounts) {
  const std::vector<int64_t> a = {1, 2}, b = {1, 2, 3}, zero = {0, 0};
  EXPECT_THROW(chi_square_homogeneity(a, b), std::invalid_argument);
  EXPECT_THROW(chi_square_homogeneity(a, zero), std::invalid_argument);
}

}  // namespace
}  // namespace tuner::drift
