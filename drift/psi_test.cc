#include "drift/psi.h"

#include <gtest/gtest.h>

#include <vector>

namespace tuner::drift {
namespace {

// The expected values were computed once with numpy 2 (numpy.quantile's default linear
// interpolation for the cut points, numpy.searchsorted(cuts, x, side="left") for the bins, shares
// of 0 replaced by 1e-4, then sum((c - r) * log(c / r))); the first one also by hand.

std::vector<double> range(int from, int to, double plus = 0) {
  std::vector<double> v;
  for (int i = from; i <= to; ++i) v.push_back(i + plus);
  return v;
}

TEST(PsiTest, CutPointsAreTheReferencesQuantiles) {
  const std::vector<double> ref = range(1, 20);
  EXPECT_EQ(quantile_cut_points(ref, 4), (std::vector<double>{5.75, 10.5, 15.25}));
  EXPECT_TRUE(quantile_cut_points(ref, 1).empty());
  // Ties collapse bins: half the values are 0.
  std::vector<double> tied(10, 0.0);
  for (double v : range(1, 10)) tied.push_back(v);
  const std::vector<double> cuts = quantile_cut_points(tied, 5);
  ASSERT_EQ(cuts.size(), 3u);
  EXPECT_DOUBLE_EQ(cuts[0], 0.0);
  EXPECT_DOUBLE_EQ(cuts[1], 2.4);
  EXPECT_DOUBLE_EQ(cuts[2], 6.2);
}

TEST(PsiTest, BinsAreClosedOnTheRight) {
  const std::vector<double> cuts = {1.0, 2.0};
  const std::vector<double> values = {0.5, 1.0, 1.5, 2.0, 2.5, 3.0};
  EXPECT_EQ(bin_counts(values, cuts), (std::vector<int64_t>{2, 2, 2}));
}

TEST(PsiTest, KnownValues) {
  // 1..20 against 4..23 over quartile bins: shares 0.25 each against 0.1, 0.25, 0.25, 0.4:
  // 0.15 ln(0.4 / 0.25)... = -0.15 ln(0.4) + 0.15 ln(1.6) = 0.2079441541679836.
  EXPECT_NEAR(population_stability_index(range(1, 20), range(1, 20, 3), 4), 0.20794415416798362,
              1e-12);
  // Two of four bins empty in the current sample: each counts with the share 1e-4.
  std::vector<double> cur(5, 25.0);
  cur.insert(cur.end(), 5, 1.0);
  EXPECT_NEAR(population_stability_index(range(1, 20), cur, 4), 4.257031786505947, 1e-9);
  std::vector<double> ref(10, 0.0), cur2(5, 0.0);
  for (double v : range(1, 10)) ref.push_back(v);
  for (double v : range(1, 15)) cur2.push_back(v);
  EXPECT_NEAR(population_stability_index(ref, cur2, 5), 0.37601934919406854, 1e-12);
}

TEST(PsiTest, SameDistributionIsZeroAndTheIndexIsSymmetric) {
  EXPECT_DOUBLE_EQ(population_stability_index(range(1, 100), range(1, 100)), 0.0);
  const std::vector<int64_t> a = {10, 20, 30, 40}, b = {25, 25, 25, 25};
  EXPECT_DOUBLE_EQ(psi_from_counts(a, b), psi_from_counts(b, a));
  EXPECT_GT(psi_from_counts(a, b), 0.0);
  // Only the shares count, not the totals.
  const std::vector<int64_t> a10 = {100, 200, 300, 400};
  EXPECT_NEAR(psi_from_counts(a10, b), psi_from_counts(a, b), 1e-15);
}

TEST(PsiTest, RefusesWhatItCannotCompute) {
  const std::vector<double> none;
  EXPECT_THROW(population_stability_index(none, range(1, 3)), std::invalid_argument);
  EXPECT_THROW(population_stability_index(range(1, 3), none), std::invalid_argument);
  const std::vector<int64_t> a = {1, 2}, b = {1, 2, 3}, zero = {0, 0};
  EXPECT_THROW(psi_from_counts(a, b), std::invalid_argument);
  EXPECT_THROW(psi_from_counts(a, zero), std::invalid_argument);
  EXPECT_THROW(psi_from_counts(a, a, 0.0), std::invalid_argument);
}

}  // namespace
}  // namespace tuner::drift
