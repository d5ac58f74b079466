#include "search/pareto.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "search/rng.h"

namespace tuner {
namespace {

// n random points of m objectives. `levels` > 0: values from {0, ..., levels - 1}, so that
// ties and equal points are common; else uniform on [0, 1); `on_sphere`: on the positive unit
// sphere, where no point dominates another.
std::vector<double> random_points(Rng& rng, size_t n, size_t m, int levels = 0,
                                  bool on_sphere = false) {
  std::vector<double> p(n * m);
  for (size_t i = 0; i < n; ++i) {
    double norm = 0.0;
    for (size_t k = 0; k < m; ++k) {
      double v = levels > 0 ? static_cast<double>(rng.integer(0, levels - 1)) : rng.uniform();
      if (on_sphere) v = std::abs(rng.normal());
      p[i * m + k] = v;
      norm += v * v;
    }
    if (on_sphere) {
      for (size_t k = 0; k < m; ++k) p[i * m + k] /= std::sqrt(norm);
    }
  }
  return p;
}

// Peels fronts off one at a time, with `dominated(i, j)`: j dominates i.
template <typename Dominated>
std::vector<int> brute_ranks(size_t n, Dominated dominated) {
  std::vector<int> ranks(n, -1);
  size_t assigned = 0;
  for (int rank = 0; assigned < n; ++rank) {
    std::vector<size_t> front;
    for (size_t i = 0; i < n; ++i) {
      if (ranks[i] >= 0) continue;
      bool beaten = false;
      for (size_t j = 0; j < n && !beaten; ++j) beaten = ranks[j] < 0 && dominated(i, j);
      if (!beaten) front.push_back(i);
    }
    for (size_t i : front) ranks[i] = rank;
    assigned += front.size();
  }
  return ranks;
}

std::vector<int> brute_ranks(const std::vector<double>& p, size_t m) {
  return brute_ranks(p.size() / m,
                     [&](size_t i, size_t j) { return dominates(&p[j * m], &p[i * m], m); });
}

// The exact hypervolume by the grid of every point's coordinates: a cell counts when a point is
// no worse than its lower corner.
double brute_hypervolume(const std::vector<double>& p, size_t m, const std::vector<double>& ref) {
  const size_t n = p.size() / m;
  std::vector<std::vector<double>> grid(m);
  for (size_t k = 0; k < m; ++k) {
    for (size_t i = 0; i < n; ++i) {
      if (p[i * m + k] < ref[k]) grid[k].push_back(p[i * m + k]);
    }
    grid[k].push_back(ref[k]);
    std::sort(grid[k].begin(), grid[k].end());
    grid[k].erase(std::unique(grid[k].begin(), grid[k].end()), grid[k].end());
  }
  double total = 0.0;
  std::vector<size_t> cell(m, 0);
  while (true) {
    bool valid = true;
    for (size_t k = 0; k < m; ++k) valid &= cell[k] + 1 < grid[k].size();
    if (valid) {
      bool covered = false;
      for (size_t i = 0; i < n && !covered; ++i) {
        bool below = true;
        for (size_t k = 0; k < m; ++k) below &= p[i * m + k] <= grid[k][cell[k]];
        covered = below;
      }
      if (covered) {
        double v = 1.0;
        for (size_t k = 0; k < m; ++k) v *= grid[k][cell[k] + 1] - grid[k][cell[k]];
        total += v;
      }
    }
    size_t k = 0;
    while (k < m && ++cell[k] >= grid[k].size()) cell[k++] = 0;
    if (k == m) break;
  }
  return total;
}

std::vector<double> without(const std::vector<double>& p, size_t m, size_t i) {
  std::vector<double> out = p;
  out.erase(out.begin() + static_cast<ptrdiff_t>(i * m),
            out.begin() + static_cast<ptrdiff_t>((i + 1) * m));
  return out;
}

TEST(Pareto, Dominates) {
  const double a[] = {1, 2}, b[] = {1, 3}, c[] = {0, 4};
  EXPECT_TRUE(dominates(a, b, 2));
  EXPECT_FALSE(dominates(b, a, 2));
  EXPECT_FALSE(dominates(a, a, 2));
  EXPECT_FALSE(dominates(a, c, 2));
  EXPECT_FALSE(dominates(c, a, 2));
}

TEST(Pareto, ConstrainedDominates) {
  const double good[] = {0, 0}, bad[] = {5, 5};
  EXPECT_TRUE(constrained_dominates(bad, 0, good, 1, 2));  // feasible beats infeasible
  EXPECT_FALSE(constrained_dominates(good, 1, bad, 0, 2));
  EXPECT_TRUE(constrained_dominates(bad, 1, good, 2, 2));  // the smaller violation
  EXPECT_FALSE(constrained_dominates(good, 2, bad, 1, 2));
  EXPECT_FALSE(constrained_dominates(good, 1, bad, 1, 2));  // equal violations: neither
  EXPECT_TRUE(constrained_dominates(good, 0, bad, 0, 2));   // both feasible: domination
}

TEST(Pareto, RanksMatchBruteForce) {
  Rng rng(7);
  for (size_t m : {1, 2, 3, 4, 5}) {
    for (int levels : {0, 3, 6}) {
      for (size_t n : {0, 1, 2, 5, 30, 200}) {
        std::vector<double> p = random_points(rng, n, m, levels);
        EXPECT_EQ(non_domination_ranks(p, m), brute_ranks(p, m))
            << "m=" << m << " levels=" << levels << " n=" << n;
        std::vector<size_t> front;
        std::vector<int> ranks = brute_ranks(p, m);
        for (size_t i = 0; i < n; ++i) {
          if (ranks[i] == 0) front.push_back(i);
        }
        EXPECT_EQ(pareto_front(p, m), front) << "m=" << m << " levels=" << levels << " n=" << n;
      }
    }
  }
}

TEST(Pareto, FrontsOfManyPointsInFourObjectivesOrMoreMatchBruteForce) {
  // Deep enough for the dominance tree's pruning to matter: thousands of points, on a cube, on
  // a sphere (most of them on the front) and on a coarse grid (ties and equal points).
  Rng rng(10);
  for (size_t m : {4, 5, 7}) {
    for (int shape = 0; shape < 3; ++shape) {
      const std::vector<double> p =
          random_points(rng, 1500, m, shape == 2 ? 3 : 0, /*on_sphere=*/shape == 1);
      std::vector<size_t> expected;
      for (size_t i = 0; i < 1500; ++i) {
        bool dominated = false;
        for (size_t j = 0; j < 1500 && !dominated; ++j) {
          dominated = dominates(&p[j * m], &p[i * m], m);
        }
        if (!dominated) expected.push_back(i);
      }
      EXPECT_EQ(pareto_front(p, m), expected) << "m=" << m << " shape=" << shape;
    }
  }
  // Every rank: fronts peeled off by the tree, and past 64 of them the generic pass (a chain of
  // 150 points, each dominating the next, has 150 fronts; the last 25 points tie in pairs).
  for (size_t m : {4, 5}) {
    for (int shape = 0; shape < 3; ++shape) {
      const std::vector<double> p =
          random_points(rng, 400, m, shape == 2 ? 3 : 0, /*on_sphere=*/shape == 1);
      EXPECT_EQ(non_domination_ranks(p, m), brute_ranks(p, m)) << "m=" << m << " shape=" << shape;
    }
    std::vector<double> chain;
    for (int i = 0; i < 150; ++i) {
      for (size_t k = 0; k < m; ++k) {
        chain.push_back(i < 125 ? i + 0.1 * rng.uniform() : 125 + (i - 125) / 2);
      }
    }
    EXPECT_EQ(non_domination_ranks(chain, m), brute_ranks(chain, m)) << "chain, m=" << m;
  }
}

TEST(Pareto, LeadingRanksAreTheFirstFrontsThatHoldEnough) {
  Rng rng(9);
  for (size_t m : {1, 2, 3, 4}) {
    for (int levels : {0, 4}) {
      for (size_t n : {0, 1, 7, 60, 400}) {
        const std::vector<double> p = random_points(rng, n, m, levels);
        const std::vector<int> all = brute_ranks(p, m);
        for (size_t enough : {size_t{1}, size_t{5}, n / 10, n / 2, n, n + 3}) {
          // Expected: exact up to the first rank whose fronts hold `enough`, the rest after it.
          std::vector<size_t> per_rank;
          for (int r : all) {
            if (static_cast<size_t>(r) >= per_rank.size()) per_rank.resize(r + 1, 0);
            ++per_rank[static_cast<size_t>(r)];
          }
          int last = static_cast<int>(per_rank.size());
          for (size_t r = 0, held = 0; r < per_rank.size(); ++r) {
            held += per_rank[r];
            if (held >= enough) {
              last = static_cast<int>(r);
              break;
            }
          }
          std::vector<int> expected = all;
          if (m > 1) {
            for (int& r : expected) r = std::min(r, last + 1);
          }
          EXPECT_EQ(leading_non_domination_ranks(p, m, enough), expected)
              << "m=" << m << " levels=" << levels << " n=" << n << " enough=" << enough;
        }
      }
    }
  }
}

TEST(Pareto, RanksOfOneFront) {
  Rng rng(8);
  for (size_t m : {2, 3, 4}) {
    std::vector<double> p = random_points(rng, 300, m, 0, /*on_sphere=*/true);
    EXPECT_EQ(non_domination_ranks(p, m), std::vector<int>(300, 0)) << m;
    EXPECT_EQ(pareto_front(p, m).size(), 300u) << m;
  }
}

TEST(Pareto, InfinitiesRank) {
  const std::vector<double> p = {INFINITY, 0, 0, INFINITY, INFINITY, INFINITY, 1, 1};
  EXPECT_EQ(non_domination_ranks(p, 2), (std::vector<int>{0, 0, 1, 0}));
}

TEST(Pareto, ConstrainedRanksMatchBruteForce) {
  Rng rng(9);
  for (size_t m : {2, 3, 4}) {
    for (int trial = 0; trial < 20; ++trial) {
      const size_t n = 40;
      std::vector<double> p = random_points(rng, n, m, trial % 2 ? 4 : 0);
      std::vector<double> violation(n);
      for (double& v : violation) v = rng.uniform() < 0.5 ? 0.0 : rng.integer(1, 4) * 0.5;
      auto brute = brute_ranks(n, [&](size_t i, size_t j) {
        return constrained_dominates(&p[j * m], violation[j], &p[i * m], violation[i], m);
      });
      EXPECT_EQ(constrained_non_domination_ranks(p, m, violation), brute) << "m=" << m;
    }
  }
  // No feasible point: the violations alone.
  const std::vector<double> p = {0, 0, 1, 1, 2, 2};
  EXPECT_EQ(constrained_non_domination_ranks(p, 2, std::vector<double>{2, 1, 2}),
            (std::vector<int>{1, 0, 1}));
}

TEST(Pareto, HypervolumeMatchesBruteForce) {
  Rng rng(10);
  for (size_t m : {1, 2, 3, 4, 5}) {
    for (int levels : {0, 4}) {
      for (size_t n : {0, 1, 2, 3, 7}) {
        for (int rep = 0; rep < 5; ++rep) {
          std::vector<double> p = random_points(rng, n, m, levels);
          // Some points beyond the reference in some objective.
          std::vector<double> ref(m, levels > 0 ? levels - 1.5 : 0.9);
          const double want = brute_hypervolume(p, m, ref);
          EXPECT_NEAR(hypervolume(p, m, ref), want, 1e-12 * std::max(1.0, want))
              << "m=" << m << " n=" << n << " levels=" << levels;
        }
      }
    }
  }
}

TEST(Pareto, HypervolumeOfKnownSets) {
  // Two boxes of 2 x 1 overlapping in 1 x 1.
  EXPECT_DOUBLE_EQ(hypervolume(std::vector<double>{0, 1, 1, 0}, 2, std::vector<double>{2, 2}), 3);
  // The unit cube's corner and a point on the reference: only the first counts.
  EXPECT_DOUBLE_EQ(
      hypervolume(std::vector<double>{0, 0, 0, 0.5, 1, 0.5}, 3, std::vector<double>{1, 1, 1}), 1);
  EXPECT_EQ(hypervolume(std::vector<double>{}, 3, std::vector<double>{1, 1, 1}), 0);
}

TEST(Pareto, HypervolumeOfLargerSets) {
  // Larger sets against a second way of computing: the sum of exclusive slices, point by point
  // (hv(S) = hv(S \ {p}) + contribution(p)), for the sweeps and for slicing.
  Rng rng(11);
  for (size_t m : {2, 3, 4}) {
    std::vector<double> p = random_points(rng, 60, m, 0, /*on_sphere=*/true);
    std::vector<double> ref(m, 1.1);
    const double all = hypervolume(p, m, ref);
    std::vector<double> contributions = hypervolume_contributions(p, m, ref);
    for (size_t i = 0; i < 60; i += 7) {
      EXPECT_NEAR(hypervolume(without(p, m, i), m, ref) + contributions[i], all, 1e-12) << m;
    }
  }
}

TEST(Pareto, ContributionsMatchBruteForce) {
  Rng rng(12);
  for (size_t m : {1, 2, 3, 4}) {
    for (int levels : {0, 3}) {
      for (int rep = 0; rep < 10; ++rep) {
        const size_t n = 6;
        std::vector<double> p = random_points(rng, n, m, levels);
        std::vector<double> ref(m, levels > 0 ? levels - 0.5 : 0.95);
        const double all = brute_hypervolume(p, m, ref);
        std::vector<double> got = hypervolume_contributions(p, m, ref);
        ASSERT_EQ(got.size(), n);
        for (size_t i = 0; i < n; ++i) {
          const double want = all - brute_hypervolume(without(p, m, i), m, ref);
          EXPECT_NEAR(got[i], want, 1e-12) << "m=" << m << " levels=" << levels << " i=" << i;
        }
      }
    }
  }
}

TEST(Pareto, SelectByHypervolumeIsGreedy) {
  Rng rng(13);
  for (size_t m : {2, 3, 4}) {
    for (int rep = 0; rep < 10; ++rep) {
      const size_t n = 9, k = 4;
      std::vector<double> p = random_points(rng, n, m, 0, /*on_sphere=*/rep % 2 == 0);
      std::vector<double> ref = nadir_reference(p, m);
      // The plain greedy: every candidate's gain recomputed at every step.
      std::vector<size_t> want;
      std::vector<double> chosen;
      for (size_t step = 0; step < k; ++step) {
        size_t best = n;
        double best_gain = -1;
        for (size_t i = 0; i < n; ++i) {
          if (std::find(want.begin(), want.end(), i) != want.end()) continue;
          std::vector<double> with = chosen;
          with.insert(with.end(), p.begin() + static_cast<ptrdiff_t>(i * m),
                      p.begin() + static_cast<ptrdiff_t>((i + 1) * m));
          const double g = brute_hypervolume(with, m, ref) - brute_hypervolume(chosen, m, ref);
          if (g > best_gain + 1e-12) {
            best_gain = g;
            best = i;
          }
        }
        want.push_back(best);
        chosen.insert(chosen.end(), p.begin() + static_cast<ptrdiff_t>(best * m),
                      p.begin() + static_cast<ptrdiff_t>((best + 1) * m));
      }
      // Dominated points tie at a gain of 0 (up to rounding), where either may come first: the
      // same volume after each step, and on the sphere (no ties) the same points.
      std::vector<size_t> got = select_by_hypervolume(p, m, k, ref);
      ASSERT_EQ(got.size(), k);
      std::vector<double> a, b;
      for (size_t step = 0; step < k; ++step) {
        a.insert(a.end(), p.begin() + static_cast<ptrdiff_t>(got[step] * m),
                 p.begin() + static_cast<ptrdiff_t>((got[step] + 1) * m));
        b.insert(b.end(), p.begin() + static_cast<ptrdiff_t>(want[step] * m),
                 p.begin() + static_cast<ptrdiff_t>((want[step] + 1) * m));
        EXPECT_NEAR(brute_hypervolume(a, m, ref), brute_hypervolume(b, m, ref), 1e-12)
            << "m=" << m << " rep=" << rep << " step=" << step;
      }
      if (rep % 2 == 0) {
        EXPECT_EQ(got, want) << "m=" << m << " rep=" << rep;
      }
    }
  }
}

TEST(Pareto, SelectByHypervolumeEdgeCases) {
  const std::vector<double> p = {0, 1, 1, 0, 0, 1, 0.5, 0.5};
  const std::vector<double> ref = {2, 2};
  EXPECT_EQ(select_by_hypervolume(p, 2, 4, ref), (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_TRUE(select_by_hypervolume(p, 2, 0, ref).empty());
  // The duplicate of point 0 adds nothing: it comes last.
  std::vector<size_t> three = select_by_hypervolume(p, 2, 3, ref);
  EXPECT_EQ(std::count(three.begin(), three.end(), 2u), 0);
  // A reference that cannot be multiplied: the first k.
  EXPECT_EQ(select_by_hypervolume(p, 2, 2, std::vector<double>{INFINITY, 2}),
            (std::vector<size_t>{0, 1}));
  // Volumes that overflow: the first k, though the second point is the better.
  EXPECT_EQ(select_by_hypervolume(std::vector<double>{0, 0, -1e300, -1e300}, 2, 1,
                                  std::vector<double>{1e300, 1e300}),
            (std::vector<size_t>{0}));
}

TEST(Pareto, NadirReference) {
  std::vector<double> a = nadir_reference(std::vector<double>{1, -2, 3, -4, 0, 0}, 2);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_DOUBLE_EQ(a[0], 3.3);
  EXPECT_EQ(a[1], 1e-12);
  std::vector<double> b = nadir_reference(std::vector<double>{-1, -2}, 2);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_DOUBLE_EQ(b[0], -0.9);
  EXPECT_DOUBLE_EQ(b[1], -1.8);
}

}  // namespace
}  // namespace tuner
