#include "drift/ks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tuner::drift {
namespace {

// The expected values come from scipy 1.17.1 (PyPI, in a venv), computed once:
//   r = scipy.stats.ks_2samp(a, b)                 # the statistic D
//   scipy.stats.kstwobign.sf(sqrt(n * m / (n + m)) * r.statistic)   # the asymptotic p-value
// (ks_2samp's own p-value is its exact one at these sizes, 0.003544 for the first pair; the
// asymptotic one is the limit distribution's, which this module uses for every size).

TEST(KsTest, MatchesScipyOnKnownSamples) {
  const std::vector<double> a = {0.61, 0.29, 0.06,  0.59,  -1.73, -0.74, 0.51, -0.56, 0.39,
                                 1.64, 0.05, -0.06, 0.64,  -0.82, 0.37,  1.77, 1.09,  -1.28,
                                 2.36, 1.31, 1.05,  -0.32, -0.4,  1.06,  -2.47};
  const std::vector<double> b = {2.2,  1.66, 1.38, 0.2,  1.0,  1.41, 1.37, 1.08, 0.52, 0.5,
                                 1.92, 0.02, 1.86, 0.48, 0.18, 1.67, 2.05, 0.98, 0.9,  1.26,
                                 0.79, 1.69, 0.45, 0.83, 1.28, 1.72, 0.71, 1.54};
  const KsResult r = ks_two_sample(a, b);
  EXPECT_NEAR(r.statistic, 0.47, 1e-12);
  EXPECT_NEAR(r.p_value, 0.005846294810998636, 1e-12);
  // The statistic is symmetric.
  EXPECT_NEAR(ks_two_sample(b, a).statistic, 0.47, 1e-12);
}

TEST(KsTest, TiesStepTogether) {
  const std::vector<double> c = {1, 1, 2, 2, 2, 3, 3, 4, 5, 5};
  const std::vector<double> d = {2, 3, 3, 3, 4, 4, 5, 5, 6, 6, 6, 7};
  const KsResult r = ks_two_sample(c, d);
  EXPECT_NEAR(r.statistic, 0.4166666666666667, 1e-12);
  EXPECT_NEAR(r.p_value, 0.2999303117542793, 1e-12);
}

TEST(KsTest, SameAndDisjointSamples) {
  const std::vector<double> a = {3, 1, 2, 5, 4};
  const KsResult same = ks_two_sample(a, a);
  EXPECT_EQ(same.statistic, 0.0);
  EXPECT_EQ(same.p_value, 1.0);
  const std::vector<double> b = {10, 11, 12};
  EXPECT_EQ(ks_two_sample(a, b).statistic, 1.0);
  EXPECT_EQ(ks_two_sample(b, a).statistic, 1.0);
}

TEST(KsTest, KolmogorovSurvivalMatchesScipy) {
  // scipy.stats.kstwobign.sf(z), on both sides of the switch between the two series at z = 1.
  const struct {
    double z, sf;
  } kCases[] = {
      {0.3, 0.9999906941986655},   {0.5, 0.9639452436648751},    {0.8, 0.5441424115741981},
      {1.0, 0.26999967167735456},  {1.2, 0.11224966667072497},   {1.36, 0.049485876755377876},
      {1.6, 0.011952043239196616}, {2.0, 0.0006709252557796953}, {3.0, 3.045995948942526e-08}};
  for (const auto& c : kCases) {
    EXPECT_NEAR(kolmogorov_survival(c.z), c.sf, 1e-14) << "z = " << c.z;
    EXPECT_NEAR(kolmogorov_survival(c.z) / c.sf, 1.0, 1e-9) << "z = " << c.z;
  }
  EXPECT_EQ(kolmogorov_survival(0.0), 1.0);
  EXPECT_EQ(kolmogorov_survival(-1.0), 1.0);
  EXPECT_LT(kolmogorov_survival(10.0), 1e-80);
}

TEST(KsTest, EmptySampleIsRefused) {
  const std::vector<double> a = {1}, none;
  EXPECT_THROW(ks_two_sample(a, none), std::invalid_argument);
  EXPECT_THROW(ks_two_sample(none, a), std::invalid_argument);
}

}  // namespace
}  // namespace tuner::drift
