#include "search/schedulers/mo_asha.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "search/schedulers/scheduler_test_util.h"

namespace tuner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr auto kMin = StudyDirection::kMinimize;
constexpr auto kMax = StudyDirection::kMaximize;

using scheduler_test::MoStudy;
using Steps = scheduler_test::ObjectiveCurves;

TEST(MoAshaTest, RungsAndOptionsAreAshas) {
  EXPECT_THAT(MoAshaScheduler({.max_resource = 100}).rungs(), ElementsAre(1, 3, 9, 27, 81));
  EXPECT_THAT(
      scheduler_test::construction_error<MoAshaScheduler>(MoAshaOptions{.reduction_factor = 1}),
      HasSubstr("mo_asha.reduction_factor: must be >= 2"));
  EXPECT_THAT(scheduler_test::construction_error<MoAshaScheduler>(
                  MoAshaOptions{.min_resource = 4, .max_resource = 4}),
              HasSubstr("mo_asha.max_resource: must be > min_resource"));
  EXPECT_TRUE(MoAshaScheduler().judges_objectives(3));
}

// Accuracy (maximized) against latency (minimized), at rung 0 (step 1), reduction factor 2.
TEST(MoAshaTest, JudgesEachObjectiveInItsDirection) {
  const MoAshaScheduler mo_asha({.reduction_factor = 2});
  MoStudy study({kMax, kMin});
  study.add(TrialState::kComplete, {{1, {0.9, 10}}});
  study.add(TrialState::kRunning, {{1, {0.8, 5}}});
  study.add(TrialState::kPruned, {{1, {0.5, 50}}});
  // 4 competitors, 2 continue: the front {0.9@10, 0.8@5} holds them; a dominating newcomer
  // joins the front (3 points, broken by crowding: the extremes 0.95@4 and ... stay).
  const int best = study.add(TrialState::kRunning, {{1, {0.95, 4}}});
  EXPECT_EQ(study.decide(mo_asha, best, 1), Decision::kContinue);
  MoStudy worse({kMax, kMin});
  worse.add(TrialState::kComplete, {{1, {0.9, 10}}});
  worse.add(TrialState::kRunning, {{1, {0.8, 5}}});
  const int dominated = worse.add(TrialState::kRunning, {{1, {0.85, 20}}});
  EXPECT_EQ(worse.decide(mo_asha, dominated, 1), Decision::kStop);

  // The same numbers with the directions reversed: the dominated one now dominates.
  MoStudy flipped({kMin, kMax});
  flipped.add(TrialState::kComplete, {{1, {0.9, 10}}});
  flipped.add(TrialState::kRunning, {{1, {0.8, 5}}});
  const int now_best = flipped.add(TrialState::kRunning, {{1, {0.7, 20}}});
  EXPECT_EQ(flipped.decide(mo_asha, now_best, 1), Decision::kContinue);
  // A mix the other way: minimize both. (0.85, 20) is dominated by (0.8, 5).
  MoStudy both_min({kMin, kMin});
  both_min.add(TrialState::kComplete, {{1, {0.9, 10}}});
  both_min.add(TrialState::kRunning, {{1, {0.8, 5}}});
  const int dominated_min = both_min.add(TrialState::kRunning, {{1, {0.85, 20}}});
  EXPECT_EQ(both_min.decide(mo_asha, dominated_min, 1), Decision::kStop);
}

TEST(MoAshaTest, NonFiniteValuesRankLast) {
  const MoAshaScheduler mo_asha({.reduction_factor = 2});
  MoStudy study({kMin, kMin});
  study.add(TrialState::kComplete, {{1, {kNaN, 1}}});
  study.add(TrialState::kRunning, {{1, {0, kInf}}});
  study.add(TrialState::kPruned, {{1, {-kInf, 0}}});
  // 4 competitors, 2 continue; the three others are non-finite: a poor finite trial is kept.
  const int finite = study.add(TrialState::kRunning, {{1, {100, 100}}});
  EXPECT_EQ(study.decide(mo_asha, finite, 1), Decision::kContinue);
  // The reporting trial with a non-finite value is stopped at any rung it reaches.
  MoStudy alone({kMax, kMin});
  const int nan = alone.add(TrialState::kRunning, {{1, {kNaN, 1}}});
  EXPECT_EQ(alone.decide(mo_asha, nan, 1), Decision::kStop);
  const int inf = alone.add(TrialState::kRunning, {{1, {kInf, 1}}});
  EXPECT_EQ(alone.decide(mo_asha, inf, 1), Decision::kStop);
  // A missing objective (NaN in the view) is non-finite too.
  const int between = alone.add(TrialState::kRunning, {{1, {0.5, 1}}, {2, {0.5, 1}}});
  EXPECT_EQ(alone.decide(mo_asha, between, 2), Decision::kContinue);  // no rung at 2
}

TEST(MoAshaTest, JudgesARungOnceAndBootstraps) {
  const MoAshaScheduler mo_asha({.reduction_factor = 3, .bootstrap_count = 1});
  MoStudy study({kMin, kMin});
  // The first to reach rung 0 ends there (bootstrap_count 1).
  const int first = study.add(TrialState::kRunning, {{1, {1, 1}}});
  EXPECT_EQ(study.decide(mo_asha, first, 1), Decision::kStop);
  // The second is in the top third of 2 (k = 1) at rung 0; at step 2 (no rung: rungs 1, 3, ...)
  // it continues whatever its values; at step 3 it is judged again, and {9, 9} is dominated.
  const int second = study.add(TrialState::kRunning, {{1, {0, 0}}, {2, {9, 9}}, {3, {9, 9}}});
  EXPECT_EQ(study.decide(mo_asha, second, 1), Decision::kContinue);
  EXPECT_EQ(study.decide(mo_asha, second, 2), Decision::kContinue);
  const int third = study.add(TrialState::kComplete, {{1, {5, 5}}, {3, {1, 1}}});
  (void)third;
  EXPECT_EQ(study.decide(mo_asha, second, 3), Decision::kStop);
}

// Accuracy (maximized) against size (minimized), reduction factor 3: three trials on the rung's
// first front and three dominated ones. The quota is 2 of 6, and the front's middle trial has the
// smallest crowding distance, so the quota alone would stop it; the first front continues whole.
TEST(MoAshaTest, FirstFrontTrialBeyondTheQuotaContinues) {
  const MoAshaScheduler mo_asha({.reduction_factor = 3});
  MoStudy study({kMax, kMin});
  study.add(TrialState::kComplete, {{1, {0.90, 1000}}});
  study.add(TrialState::kPruned, {{1, {0.70, 900}}});
  study.add(TrialState::kComplete, {{1, {0.60, 10}}});
  study.add(TrialState::kPruned, {{1, {0.50, 500}}});
  study.add(TrialState::kPruned, {{1, {0.40, 800}}});
  const int middle = study.add(TrialState::kRunning, {{1, {0.80, 100}}});
  EXPECT_EQ(study.decide(mo_asha, middle, 1), Decision::kContinue);
  // A dominated trial in the same place is still held to the quota (alone on the second front,
  // it is no boundary point: a front of one point has none).
  MoStudy dominated_study({kMax, kMin});
  dominated_study.add(TrialState::kComplete, {{1, {0.90, 1000}}});
  dominated_study.add(TrialState::kPruned, {{1, {0.70, 900}}});
  dominated_study.add(TrialState::kComplete, {{1, {0.60, 10}}});
  dominated_study.add(TrialState::kPruned, {{1, {0.50, 500}}});
  dominated_study.add(TrialState::kRunning, {{1, {0.80, 100}}});
  const int dominated = dominated_study.add(TrialState::kRunning, {{1, {0.75, 150}}});
  EXPECT_EQ(dominated_study.decide(mo_asha, dominated, 1), Decision::kStop);
}

// Accuracy (maximized) against size (minimized), reduction factor 3, 7 trials: the first front
// holds 3, the second front 0.50@500 and the reporting 0.88@1200 (dominated only by 0.90@1000),
// both its extremes. k = min(3 + 2, 7 - 2) = 5 (the quota is 2): the dominated trial that is the
// most accurate after the front continues; one on the third front does not.
TEST(MoAshaTest, SecondFrontExtremesContinue) {
  const MoAshaScheduler mo_asha({.reduction_factor = 3});
  auto rung_of = [&](double accuracy, double size) {
    MoStudy study({kMax, kMin});
    study.add(TrialState::kComplete, {{1, {0.90, 1000}}});
    study.add(TrialState::kComplete, {{1, {0.80, 100}}});
    study.add(TrialState::kComplete, {{1, {0.60, 10}}});
    study.add(TrialState::kPruned, {{1, {0.50, 500}}});
    study.add(TrialState::kPruned, {{1, {0.40, 800}}});
    study.add(TrialState::kPruned, {{1, {0.30, 900}}});
    const int reporting = study.add(TrialState::kRunning, {{1, {accuracy, size}}});
    return study.decide(mo_asha, reporting, 1);
  };
  EXPECT_EQ(rung_of(0.88, 1200), Decision::kContinue);
  // 0.70@600: on the second front between its extremes 0.50@500 and 0.88@1200 (absent here,
  // so the second front is 0.50@500 and 0.70@600, both extremes): continues.
  EXPECT_EQ(rung_of(0.70, 600), Decision::kContinue);
  // On the third front (0.50@500 dominates 0.45@550): stops.
  EXPECT_EQ(rung_of(0.45, 550), Decision::kStop);
}

// A second front of three trials: its middle one stops, its extremes continue.
TEST(MoAshaTest, SecondFrontMiddleStops) {
  const MoAshaScheduler mo_asha({.reduction_factor = 3});
  MoStudy study({kMax, kMin});
  study.add(TrialState::kComplete, {{1, {0.90, 1000}}});
  study.add(TrialState::kComplete, {{1, {0.80, 100}}});
  study.add(TrialState::kComplete, {{1, {0.60, 10}}});
  study.add(TrialState::kPruned, {{1, {0.50, 500}}});
  study.add(TrialState::kPruned, {{1, {0.88, 1200}}});
  study.add(TrialState::kPruned, {{1, {0.30, 900}}});
  study.add(TrialState::kPruned, {{1, {0.20, 950}}});
  // n = 8: quota 2, cap 6, k = 3 + 2 = 5; the second front 0.50@500, 0.88@1200, 0.70@600.
  const int middle = study.add(TrialState::kRunning, {{1, {0.70, 600}}});
  EXPECT_EQ(study.decide(mo_asha, middle, 1), Decision::kStop);
}

// Six trials all on the first front, reduction factor 3: at most 6 - floor(6 / 3) = 4 continue,
// the front cut by crowding distance: the trial closest to its neighbours stops.
TEST(MoAshaTest, FirstFrontLargerThanTheCapIsCutByCrowding) {
  const MoAshaScheduler mo_asha({.reduction_factor = 3});
  MoStudy study({kMin, kMin});
  study.add(TrialState::kComplete, {{1, {0, 10}}});
  study.add(TrialState::kComplete, {{1, {2, 6}}});
  study.add(TrialState::kComplete, {{1, {4, 4}}});
  study.add(TrialState::kComplete, {{1, {6, 2}}});
  study.add(TrialState::kComplete, {{1, {10, 0}}});
  // Crowding distances: 1.0 for (2, 6), 0.5 for (4, 4), 0.9 for (6, 2), 0.4 for (4.5, 3.5), the
  // extremes infinite: (4, 4) and (4.5, 3.5) stop.
  const int crowded = study.add(TrialState::kRunning, {{1, {4.5, 3.5}}});
  EXPECT_EQ(study.decide(mo_asha, crowded, 1), Decision::kStop);
  const int spread = study.add(TrialState::kRunning, {{1, {1, 8}}});
  // Now 7 on the front, at most 5 continue; (1, 8) at 0.6 is among them, (4, 4) at 0.5 is not.
  EXPECT_EQ(study.decide(mo_asha, spread, 1), Decision::kContinue);
}

// The selection the scheduler must make, computed the slow way: fronts peeled by pairwise
// domination, the last front broken by crowding distance computed per objective, ties to the
// lower trial number; non-finite vectors after every finite one, by number.
bool brute_force_keeps(const std::vector<std::pair<int, std::vector<double>>>& competitors,
                       int reporting, size_t k) {
  const size_t n = competitors.size();
  std::vector<size_t> finite, infinite;
  for (size_t i = 0; i < n; ++i) {
    const auto& v = competitors[i].second;
    (std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); }) ? finite : infinite)
        .push_back(i);
  }
  auto dominates = [&](size_t a, size_t b) {
    const auto& x = competitors[a].second;
    const auto& y = competitors[b].second;
    bool better = false;
    for (size_t j = 0; j < x.size(); ++j) {
      if (x[j] > y[j]) return false;
      better = better || x[j] < y[j];
    }
    return better;
  };
  std::vector<size_t> kept;
  std::vector<size_t> left = finite;
  while (!left.empty() && kept.size() < k) {
    std::vector<size_t> front, rest;
    for (size_t a : left) {
      bool dominated = false;
      for (size_t b : left) dominated = dominated || dominates(b, a);
      (dominated ? rest : front).push_back(a);
    }
    if (kept.size() + front.size() <= k) {
      kept.insert(kept.end(), front.begin(), front.end());
    } else {
      std::map<size_t, double> distance;
      const size_t m = competitors[front[0]].second.size();
      for (size_t j = 0; j < m; ++j) {
        std::vector<size_t> by = front;
        std::sort(by.begin(), by.end(), [&](size_t a, size_t b) {
          const double x = competitors[a].second[j], y = competitors[b].second[j];
          return x != y ? x < y : competitors[a].first < competitors[b].first;
        });
        const double lo = competitors[by.front()].second[j];
        const double hi = competitors[by.back()].second[j];
        if (lo == hi) continue;  // an objective of one value sets no distance
        distance[by.front()] = kInf;
        distance[by.back()] = kInf;
        for (size_t i = 1; i + 1 < by.size(); ++i) {
          distance[by[i]] +=
              (competitors[by[i + 1]].second[j] - competitors[by[i - 1]].second[j]) / (hi - lo);
        }
      }
      std::vector<size_t> order = front;
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (distance[a] != distance[b]) return distance[a] > distance[b];
        return competitors[a].first < competitors[b].first;
      });
      for (size_t i = 0; kept.size() < k; ++i) kept.push_back(order[i]);
    }
    left = rest;
  }
  for (size_t i : infinite) {
    if (kept.size() < k) kept.push_back(i);
  }
  return std::any_of(kept.begin(), kept.end(),
                     [&](size_t i) { return competitors[i].first == reporting; });
}

// Random small populations at a rung, 2 or 3 objectives of random directions, values on a coarse
// grid (ties and duplicates are common), a few non-finite ones, trials that have not reached the
// rung yet, and a random bootstrap count: the scheduler keeps a trial exactly when the brute-force
// selection does.
TEST(MoAshaTest, RungDecisionsMatchABruteForceNonDominatedSort) {
  int stops = 0, continues = 0, kept_as_boundary = 0;
  for (uint32_t seed = 0; seed < 600; ++seed) {
    std::mt19937 random(seed);
    const size_t m = 2 + random() % 2;
    std::vector<StudyDirection> directions;
    for (size_t j = 0; j < m; ++j) directions.push_back(random() % 2 ? kMax : kMin);
    const int reduction_factor = 2 + static_cast<int>(random() % 3);
    const int bootstrap = random() % 4 == 0 ? static_cast<int>(random() % 3) : 0;
    const MoAshaScheduler mo_asha(
        {.reduction_factor = reduction_factor, .bootstrap_count = bootstrap});
    const int64_t rung = reduction_factor;  // rung 1: min_resource 1 times the factor
    auto random_vector = [&] {
      std::vector<double> v;
      for (size_t j = 0; j < m; ++j) {
        const uint32_t r = random() % 40;
        v.push_back(r == 0 ? kNaN : r == 1 ? (random() % 2 ? kInf : -kInf) : (r % 6) * 0.5);
      }
      return v;
    };
    MoStudy study(directions);
    const int n = 1 + static_cast<int>(random() % 14);
    std::vector<std::pair<int, std::vector<double>>> competitors;  // as losses
    auto as_losses = [&](const std::vector<double>& v) {
      std::vector<double> loss;
      bool finite = true;
      for (double x : v) finite = finite && std::isfinite(x);
      for (size_t j = 0; j < m; ++j) {
        loss.push_back(finite ? (directions[j] == kMax ? -v[j] : v[j]) : kInf);
      }
      return loss;
    };
    for (int i = 0; i < n; ++i) {
      const auto states = {TrialState::kComplete, TrialState::kRunning, TrialState::kPruned,
                           TrialState::kFail};
      const TrialState state = *(states.begin() + random() % 4);
      Steps steps{{1, random_vector()}};
      if (random() % 4 != 0) {
        // Reached the rung, at the rung or a bit past it (its first step >= the rung counts).
        const int64_t at = rung + static_cast<int64_t>(random() % 2);
        steps[at] = random_vector();
        steps[at + 5] = random_vector();
        competitors.emplace_back(i, as_losses(steps[at]));
      }
      study.add(state, steps);
    }
    std::vector<double> own;
    for (size_t j = 0; j < m; ++j) own.push_back(static_cast<double>(random() % 6) * 0.5);
    const int reporting = study.add(TrialState::kRunning, {{1, random_vector()}, {rung, own}});
    competitors.emplace_back(reporting, as_losses(own));

    // The quota, raised to the first front's size plus the second front's boundary points
    // (pairwise domination of the loss vectors; per objective whose values differ on the second
    // front, its least and its greatest, ties to the lower and to the higher number), capped at
    // all but floor(n / reduction_factor) of the rung.
    const size_t n_at_rung = competitors.size();
    auto non_dominated = [&](const std::vector<size_t>& among) {
      std::vector<size_t> front;
      for (size_t a : among) {
        bool dominated = false;
        for (size_t b : among) {
          bool no_worse = true, better = false;
          for (size_t j = 0; j < m; ++j) {
            no_worse = no_worse && competitors[b].second[j] <= competitors[a].second[j];
            better = better || competitors[b].second[j] < competitors[a].second[j];
          }
          dominated = dominated || (no_worse && better);
        }
        if (!dominated) front.push_back(a);
      }
      return front;
    };
    std::vector<size_t> everyone(n_at_rung);
    for (size_t i = 0; i < n_at_rung; ++i) everyone[i] = i;
    const std::vector<size_t> first_front = non_dominated(everyone);
    std::vector<size_t> rest;
    for (size_t i : everyone) {
      if (std::find(first_front.begin(), first_front.end(), i) == first_front.end()) {
        rest.push_back(i);
      }
    }
    const std::vector<size_t> second_front = non_dominated(rest);
    std::vector<size_t> boundary;
    for (size_t j = 0; j < m && !second_front.empty(); ++j) {
      auto value = [&](size_t i) { return competitors[i].second[j]; };
      size_t low = second_front.front(), high = second_front.front();
      for (size_t i : second_front) {
        if (value(i) < value(low)) low = i;
        if (value(i) >= value(high)) high = i;
      }
      if (value(low) == value(high)) continue;
      for (size_t i : {low, high}) {
        if (std::find(boundary.begin(), boundary.end(), i) == boundary.end()) boundary.push_back(i);
      }
    }
    const size_t quota = std::max<size_t>(n_at_rung / reduction_factor, 1);
    const size_t k = std::max(quota, std::min(first_front.size() + boundary.size(),
                                              n_at_rung - n_at_rung / reduction_factor));
    const bool keep = competitors.size() > static_cast<size_t>(bootstrap) &&
                      brute_force_keeps(competitors, reporting, k);
    const size_t k_first_front =
        std::max(quota, std::min(first_front.size(), n_at_rung - n_at_rung / reduction_factor));
    if (keep && !brute_force_keeps(competitors, reporting, k_first_front)) ++kept_as_boundary;
    const Decision d = study.decide(mo_asha, reporting, rung);
    ASSERT_EQ(d, keep ? Decision::kContinue : Decision::kStop)
        << "seed " << seed << ", " << competitors.size() << " competitors, k " << k;
    (keep ? continues : stops) += 1;
  }
  // Both decisions were taken many times, and some trials continued only as a boundary point
  // of the second front.
  EXPECT_GT(stops, 100);
  EXPECT_GT(continues, 100);
  EXPECT_GT(kept_as_boundary, 30) << kept_as_boundary;
}

}  // namespace
}  // namespace tuner
