#include "search/samplers/tpe/parzen_estimator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "trials/error.h"

namespace tuner {
namespace {

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

TEST(ParzenTruncnorm, LogNdtrMatchesErfcAndTails) {
  for (double z : {-5.0, -1.0, 0.0, 0.5, 3.0}) {
    EXPECT_NEAR(log_ndtr(z), std::log(normal_cdf(z)), 1e-12) << z;
  }
  // Deep left tail: log Phi(z) ~ -z^2/2 - log(-z sqrt(2 pi)).
  EXPECT_NEAR(log_ndtr(-40.0), -800.0 - std::log(40.0 * std::sqrt(2 * M_PI)), 1e-3);
  EXPECT_NEAR(log_ndtr(10.0), -normal_cdf(-10.0), 1e-30);
}

TEST(ParzenTruncnorm, LogGaussMass) {
  EXPECT_NEAR(log_gauss_mass(-1.0, 1.0), std::log(normal_cdf(1.0) - normal_cdf(-1.0)), 1e-12);
  EXPECT_NEAR(log_gauss_mass(2.0, 3.0), std::log(normal_cdf(-2.0) - normal_cdf(-3.0)), 1e-12);
  EXPECT_NEAR(log_gauss_mass(-3.0, -2.0), log_gauss_mass(2.0, 3.0), 1e-12);
  EXPECT_TRUE(std::isfinite(log_gauss_mass(50.0, 51.0)));
  EXPECT_EQ(log_gauss_mass(1.0, 1.0), -INFINITY);
  EXPECT_NEAR(log_gauss_mass(-INFINITY, INFINITY), 0.0, 1e-15);
}

TEST(ParzenTruncnorm, NdtriInvertsPhi) {
  for (double p : {1e-300, 1e-20, 1e-5, 0.01, 0.3, 0.5, 0.77, 0.99, 1 - 1e-12}) {
    EXPECT_NEAR(normal_cdf(ndtri(p)) / p, 1.0, 1e-9) << p;
  }
  EXPECT_EQ(ndtri(0.0), -INFINITY);
  EXPECT_EQ(ndtri(1.0), INFINITY);
}

TEST(ParzenTruncnorm, PpfStaysInsideAndInvertsTheTruncatedCdf) {
  const double a = -0.5, b = 2.0;
  for (double u : {0.0, 0.1, 0.5, 0.9, 0.999999}) {
    double z = truncnorm_ppf(u, a, b);
    EXPECT_GE(z, a);
    EXPECT_LE(z, b);
    double cdf = (normal_cdf(z) - normal_cdf(a)) / (normal_cdf(b) - normal_cdf(a));
    EXPECT_NEAR(cdf, u, 1e-9) << u;
  }
  // Entirely in a tail, on either side.
  for (double u : {0.0, 0.5, 0.99}) {
    double z = truncnorm_ppf(u, 6.0, 7.0);
    EXPECT_GE(z, 6.0);
    EXPECT_LE(z, 7.0);
    z = truncnorm_ppf(u, -40.0, -39.0);
    EXPECT_GE(z, -40.0);
    EXPECT_LE(z, -39.0);
  }
}

// The density integrates (sums) to one over the distribution.
double total_mass(const ParzenEstimator& pe, const Distribution& d) {
  std::vector<double> xs;
  double cell = 1.0;
  if (const auto* f = std::get_if<FloatDistribution>(&d)) {
    const int n = 20000;
    double lo = f->log ? std::log(f->low) : f->low;
    double hi = f->log ? std::log(f->high) : f->high;
    cell = (hi - lo) / n;
    for (int i = 0; i < n; ++i) {
      double t = lo + cell * (i + 0.5);
      xs.push_back(f->log ? std::exp(t) : t);
    }
  } else if (const auto* in = std::get_if<IntDistribution>(&d)) {
    for (int64_t v = in->low; v <= in->high; v += in->step) xs.push_back(static_cast<double>(v));
  } else if (const auto* c = std::get_if<CategoricalDistribution>(&d)) {
    for (size_t i = 0; i < c->choices.size(); ++i) xs.push_back(static_cast<double>(i));
  }
  auto lp = pe.log_pdf(xs, static_cast<int>(xs.size()));
  double s = 0.0;
  for (double v : lp) s += std::exp(v) * cell;
  return s;
}

TEST(ParzenEstimator, DensitiesAreNormalized) {
  std::vector<double> w{1.0, 0.5, 1.0, 2.0};
  std::vector<std::pair<Distribution, std::vector<double>>> cases = {
      {FloatDistribution{-5, 10}, {1.0, 2.0, 9.5, -4.0}},
      {FloatDistribution{1e-4, 10, true}, {0.01, 0.1, 5.0, 5.0}},
      {IntDistribution{1, 8}, {3, 3, 5, 8}},
      {IntDistribution{1, 1000, true}, {3, 30, 500, 1000}},
      {IntDistribution{0, 100, false, 5}, {0, 50, 55, 100}},
      {CategoricalDistribution{{int64_t{1}, int64_t{2}, int64_t{3}}}, {0, 0, 2, 1}},
  };
  for (const auto& [d, obs] : cases) {
    for (bool prior : {true, false}) {
      ParzenEstimatorOptions o;
      o.consider_prior = prior;
      std::vector<Distribution> dims{d};
      std::vector<std::vector<double>> columns{obs};
      ParzenEstimator pe(dims, columns, w, o);
      EXPECT_NEAR(total_mass(pe, d), 1.0, 1e-3) << to_string(d) << " prior " << prior;
    }
  }
  // A stepped float with many cells: the series path.
  Distribution d = FloatDistribution{0, 1, false, 0.001};
  std::vector<Distribution> dims{d};
  std::vector<std::vector<double>> columns{{0.3, 0.301, 0.7, 0.9}};
  ParzenEstimator pe(dims, columns, w, {});
  std::vector<double> xs;
  for (int i = 0; i <= 1000; ++i) xs.push_back(i * 0.001);
  double s = 0.0;
  for (double v : pe.log_pdf(xs, static_cast<int>(xs.size()))) s += std::exp(v);
  EXPECT_NEAR(s, 1.0, 1e-4);
}

TEST(ParzenEstimator, DrawsFollowTheDensity) {
  Distribution d = IntDistribution{1, 8};
  std::vector<Distribution> dims{d};
  std::vector<std::vector<double>> columns{{3, 3, 5}};
  std::vector<double> w{1, 1, 1};
  ParzenEstimator pe(dims, columns, w, {});
  Rng rng(7);
  const int n = 40000;
  auto draws = pe.sample(rng, n);
  std::vector<double> count(9, 0.0);
  for (double v : draws) count[static_cast<size_t>(v)] += 1.0 / n;
  std::vector<double> grid{1, 2, 3, 4, 5, 6, 7, 8};
  auto lp = pe.log_pdf(grid, 8);
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(count[i + 1], std::exp(lp[i]), 0.01) << i + 1;
}

TEST(ParzenEstimator, MultivariateDensityIsAProductMixture) {
  std::vector<Distribution> dims{FloatDistribution{0, 1}, CategoricalDistribution{{true, false}}};
  std::vector<std::vector<double>> columns{{0.2, 0.8}, {0, 1}};
  std::vector<double> w{1, 1};
  ParzenEstimator pe(dims, columns, w, {});
  EXPECT_EQ(pe.n_kernels(), 3u);
  std::vector<double> x{0.2, 0.0, 0.2, 1.0};
  auto lp = pe.log_pdf(x, 2);
  EXPECT_GT(lp[0], lp[1]);  // (0.2, true) was observed together; (0.2, false) was not
  Rng rng(1);
  auto draws = pe.sample(rng, 100);
  for (int i = 0; i < 100; ++i) {
    EXPECT_GE(draws[i * 2], 0.0);
    EXPECT_LE(draws[i * 2], 1.0);
    EXPECT_TRUE(draws[i * 2 + 1] == 0.0 || draws[i * 2 + 1] == 1.0);
  }
}

TEST(ParzenEstimator, NormalDistributionIsUnbounded) {
  std::vector<Distribution> dims{NormalDistribution{0.0, 1.0, false, 0.5}};
  std::vector<std::vector<double>> columns{{0.5, 1.0, -2.0}};
  std::vector<double> w{1, 1, 1};
  ParzenEstimator pe(dims, columns, w, {});
  Rng rng(3);
  for (double v : pe.sample(rng, 200)) {
    EXPECT_TRUE(std::isfinite(v));
    EXPECT_NEAR(std::remainder(v, 0.5), 0.0, 1e-12);
  }
  std::vector<double> far{25.0};
  EXPECT_TRUE(std::isfinite(pe.log_pdf(far, 1)[0]));
}

TEST(ParzenEstimator, RejectsMismatchedInputs) {
  std::vector<Distribution> dims{FloatDistribution{0, 1}};
  std::vector<std::vector<double>> columns{{0.5}};
  std::vector<double> two{1, 1};
  EXPECT_THROW(ParzenEstimator(dims, columns, two, {}), Error);
  std::vector<double> zero{0.0};
  EXPECT_THROW(ParzenEstimator(dims, columns, zero, {}), Error);
}

TEST(ParzenEstimator, PriorInBandwidthsCountsThePriorCentreAsANeighbour) {
  // One observation at 0.45 on [0, 1]: its bandwidth is max(0.45, 0.55) = 0.55 without the
  // prior's centre (0.5) among its neighbours, and the clip's 0.5 with it (Optuna 3.1).
  std::vector<Distribution> dims{FloatDistribution{0, 1}};
  std::vector<std::vector<double>> columns{{0.45}};
  std::vector<double> w{1.0};
  ParzenEstimatorOptions without;
  ParzenEstimatorOptions with;
  with.prior_in_bandwidths = true;
  ParzenEstimator a(dims, columns, w, without);
  ParzenEstimator b(dims, columns, w, with);
  std::vector<double> x{0.45, 0.999};
  auto la = a.log_pdf(x, 2);
  auto lb = b.log_pdf(x, 2);
  EXPECT_GT(lb[0], la[0]);  // the narrower kernel is denser at its centre
  EXPECT_LT(lb[1], la[1]);  // and thinner far from it
  EXPECT_NEAR(total_mass(b, dims[0]), 1.0, 1e-3);
}

TEST(ParzenEstimator, MemoChangesNothing) {
  // Estimators built with a memo (cold, then warm, then after other inputs) are bit-identical to
  // those built without one, in every kind of dimension, joint and one-dimensional.
  std::vector<Distribution> dims{FloatDistribution{-1, 1},
                                 FloatDistribution{1e-5, 1e-1, true},
                                 IntDistribution{1, 1024, true},
                                 IntDistribution{0, 100, false, 5},
                                 CategoricalDistribution{{true, false, 3.5}},
                                 NormalDistribution{0.0, 2.0, false, std::nullopt}};
  Rng data(7);
  std::vector<std::vector<double>> columns(dims.size());
  std::vector<double> w;
  for (int k = 0; k < 60; ++k) {
    columns[0].push_back(2.0 * data.uniform() - 1.0);
    columns[1].push_back(std::exp(std::log(1e-5) + data.uniform() * std::log(1e4)));
    columns[2].push_back(std::round(std::exp(data.uniform() * std::log(1024.0))));
    columns[3].push_back(5.0 * std::floor(data.uniform() * 21.0));
    columns[4].push_back(std::floor(data.uniform() * 3.0));
    columns[5].push_back(4.0 * data.uniform() - 2.0);
    w.push_back(0.1 + k / 60.0);
  }
  ParzenMemo memo;
  auto check = [&](std::span<const Distribution> d, std::span<const std::vector<double>> c,
                   std::span<const double> weights) {
    ParzenEstimator plain(d, c, weights, {});
    Rng rng(11);
    std::vector<double> x = plain.sample(rng, 30);
    std::vector<double> expected = plain.log_pdf(x, 30);
    for (int round = 0; round < 2; ++round) {
      ParzenEstimator memoized(d, c, weights, {}, {}, &memo);
      Rng again(11);
      EXPECT_EQ(memoized.sample(again, 30), x);
      EXPECT_EQ(memoized.log_pdf(x, 30), expected);
    }
  };
  check(dims, columns, w);
  for (size_t d = 0; d < dims.size(); ++d) {
    check(std::span<const Distribution>(&dims[d], 1),
          std::span<const std::vector<double>>(&columns[d], 1), w);
  }
  std::vector<double> fewer(w.begin(), w.end() - 1);
  for (auto& c : columns) c.pop_back();
  check(dims, columns, fewer);
}

TEST(ParzenEstimator, EachPointsDensityIsItsOwn) {
  // log_pdf() evaluates points in blocks (vector lanes) and grid cells in several passes: a
  // point's density is bit-identical whatever the other points, their number and its position.
  std::vector<Distribution> dims{
      FloatDistribution{-1, 1},          FloatDistribution{1e-5, 1e-1, true},
      IntDistribution{16, 1024, true},   IntDistribution{1, 100},
      IntDistribution{0, 100, false, 5}, CategoricalDistribution{{true, false, 3.5}}};
  Rng data(5);
  std::vector<std::vector<double>> columns(dims.size());
  std::vector<double> w;
  for (int k = 0; k < 300; ++k) {
    columns[0].push_back(2.0 * data.uniform() - 1.0);
    columns[1].push_back(std::exp(std::log(1e-5) + data.uniform() * std::log(1e4)));
    columns[2].push_back(std::round(std::exp(std::log(16.0) + data.uniform() * std::log(64.0))));
    columns[3].push_back(std::floor(1.0 + data.uniform() * 100.0));
    columns[4].push_back(5.0 * std::floor(data.uniform() * 21.0));
    columns[5].push_back(std::floor(data.uniform() * 3.0));
    w.push_back(0.1 + k / 300.0);
  }
  auto check = [&](std::span<const Distribution> d, std::span<const std::vector<double>> c) {
    ParzenEstimator pe(d, c, w, {});
    Rng rng(3);
    const int n = 11;
    std::vector<double> x = pe.sample(rng, n);
    const size_t n_dims = d.size();
    std::vector<double> alone(n);
    for (int i = 0; i < n; ++i) {
      std::vector<double> point(x.begin() + i * n_dims, x.begin() + (i + 1) * n_dims);
      alone[i] = pe.log_pdf(point, 1)[0];
      EXPECT_TRUE(std::isfinite(alone[i])) << i;
    }
    for (int m = 1; m <= n; ++m) {
      std::vector<double> first(x.begin(), x.begin() + m * n_dims);
      std::vector<double> lp = pe.log_pdf(first, m);
      for (int i = 0; i < m; ++i) EXPECT_EQ(lp[i], alone[i]) << m << " points, point " << i;
    }
    std::vector<double> reversed;
    for (int i = n - 1; i >= 0; --i) {
      reversed.insert(reversed.end(), x.begin() + i * n_dims, x.begin() + (i + 1) * n_dims);
    }
    std::vector<double> lp = pe.log_pdf(reversed, n);
    for (int i = 0; i < n; ++i) EXPECT_EQ(lp[n - 1 - i], alone[i]) << "reversed, point " << i;
  };
  check(dims, columns);
  for (size_t d = 2; d < dims.size(); ++d) {
    check(std::span<const Distribution>(&dims[d], 1),
          std::span<const std::vector<double>>(&columns[d], 1));
  }
}

}  // namespace
}  // namespace tuner
