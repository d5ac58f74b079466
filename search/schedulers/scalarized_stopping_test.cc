#include "search/schedulers/scalarized_stopping.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "search/schedulers/scheduler_test_util.h"
#include "trials/error.h"

namespace tuner {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr auto kMin = StudyDirection::kMinimize;
constexpr auto kMax = StudyDirection::kMaximize;

using scheduler_test::MoStudy;
using Steps = scheduler_test::ObjectiveCurves;

std::shared_ptr<const PercentileStopping> median(int n_startup_trials = 2) {
  return std::make_shared<MedianStopping>(
      MedianStoppingOptions{.n_startup_trials = n_startup_trials});
}

TEST(ScalarizedStoppingTest, WeighsTheObjectivesMadeLargerIsBetter) {
  const ScalarizedStopping rule(median(), {1.0, 0.01});
  const std::vector<StudyDirection> directions = {kMax, kMin};
  // accuracy 0.9, latency 20 ms: 0.9 - 0.2.
  EXPECT_DOUBLE_EQ(rule.scalarize(std::vector<double>{0.9, 20}, directions), 0.7);
  EXPECT_TRUE(std::isnan(rule.scalarize(std::vector<double>{kNaN, 20}, directions)));
  // A weight of 0 ignores its objective, even a non-finite value of it.
  const ScalarizedStopping accuracy_only(median(), {1.0, 0.0});
  EXPECT_DOUBLE_EQ(accuracy_only.scalarize(std::vector<double>{0.9, kNaN}, directions), 0.9);
  EXPECT_TRUE(rule.judges_objectives(2));
  EXPECT_FALSE(rule.judges_objectives(1));
  EXPECT_FALSE(rule.judges_objectives(3));
}

TEST(ScalarizedStoppingTest, RefusesBadWeights) {
  auto error = [](std::vector<double> weights) -> std::string {
    try {
      ScalarizedStopping rule(median(), std::move(weights));
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return e.what();
    }
    return "no error";
  };
  EXPECT_THAT(error({}), HasSubstr("scalarization.weights: give one weight per objective"));
  EXPECT_THAT(error({1, -1}), HasSubstr("weight 1 must be a finite number >= 0"));
  EXPECT_THAT(error({0, 0}), HasSubstr("at least one weight must be > 0"));
  EXPECT_THAT(error({1, kNaN}), HasSubstr("weight 1 must be a finite number >= 0"));
}

// Accuracy (maximized) and latency (minimized), weights 1 and 0.01: completed trials with
// scalars 0.7, 0.6 and 0.5 at step 2 (median 0.6).
TEST(ScalarizedStoppingTest, TheMedianRuleOverTheScalar) {
  const ScalarizedStopping rule(median(), {1.0, 0.01});
  MoStudy study({kMax, kMin});
  study.add(TrialState::kComplete, {{1, {0.5, 10}}, {2, {0.9, 20}}});  // 0.7
  study.add(TrialState::kComplete, {{1, {0.5, 10}}, {2, {0.8, 20}}});  // 0.6
  study.add(TrialState::kComplete, {{1, {0.5, 10}}, {2, {0.6, 10}}});  // 0.5
  study.add(TrialState::kRunning, {{2, {0.0, 1000}}});  // RUNNING: not compared against
  // Best accuracy of all (0.95) but slow: 0.95 - 0.5 = 0.45 < 0.6: stopped.
  const int slow = study.add(TrialState::kRunning, {{1, {0.3, 50}}, {2, {0.95, 50}}});
  EXPECT_EQ(study.decide(rule, slow, 2), Decision::kStop);
  // Less accurate but fast: 0.7 - 0.05 = 0.65 >= 0.6: continues.
  const int fast = study.add(TrialState::kRunning, {{1, {0.3, 5}}, {2, {0.7, 5}}});
  EXPECT_EQ(study.decide(rule, fast, 2), Decision::kContinue);
  // The best scalar so far counts, as in the median rule: 0.61 at step 1 carries step 2.
  const int earlier = study.add(TrialState::kRunning, {{1, {0.62, 1}}, {2, {0.1, 1}}});
  EXPECT_EQ(study.decide(rule, earlier, 2), Decision::kContinue);
  // A NaN objective of positive weight is the worst value.
  const int nan = study.add(TrialState::kRunning, {{2, {kNaN, 1}}});
  EXPECT_EQ(study.decide(rule, nan, 2), Decision::kStop);
  // Without the objective values (a caller that gives none), nothing is judged.
  History bare{std::vector<FrozenTrial>{}, std::vector<StudyDirection>{kMax, kMin}};
  FrozenTrial t;
  t.number = 0;
  t.intermediate_values = {{2, -100.0}};
  EXPECT_EQ(rule.on_report(t, 2, bare), Decision::kContinue);
}

// On random studies, the scalarized rule decides as the plain rule does on a study of one
// maximized objective whose intermediate values are the scalars.
TEST(ScalarizedStoppingTest, DecidesAsTheRuleOnTheScalars) {
  int stops = 0, continues = 0;
  for (uint32_t seed = 0; seed < 200; ++seed) {
    std::mt19937 random(seed);
    const std::vector<StudyDirection> directions = {random() % 2 ? kMax : kMin,
                                                    random() % 2 ? kMax : kMin};
    const std::vector<double> weights = {0.5 + random() % 3, 0.25 * (random() % 3)};
    auto rule_of = [&] {
      return std::make_shared<PercentileStopping>(PercentileStoppingOptions{
          .percentile = 25.0 * (1 + random() % 3), .n_startup_trials = 2, .n_min_trials = 2});
    };
    const auto inner = rule_of();
    const ScalarizedStopping rule(inner, weights);
    MoStudy study(directions);
    scheduler_test::StudyFixture scalars(kMax);
    const int n = 3 + static_cast<int>(random() % 8);
    for (int i = 0; i <= n; ++i) {
      const TrialState state = i == n              ? TrialState::kRunning
                               : random() % 4 == 0 ? TrialState::kPruned
                                                   : TrialState::kComplete;
      Steps steps;
      scheduler_test::Curve curve;
      for (int64_t step = 1; step <= 4; ++step) {
        if (random() % 5 == 0) continue;
        steps[step] = {static_cast<double>(random() % 10), static_cast<double>(random() % 10)};
        curve[step] = rule.scalarize(steps[step], directions);
      }
      study.add(state, steps);
      scalars.add(state, curve);
    }
    for (int64_t step = 1; step <= 4; ++step) {
      if (!scalars.trials()[static_cast<size_t>(n)].intermediate_values.contains(step)) continue;
      const Decision want =
          inner->on_report(scalars.trials()[static_cast<size_t>(n)], step, scalars.history());
      ASSERT_EQ(study.decide(rule, n, step), want) << "seed " << seed << ", step " << step;
      (want == Decision::kStop ? stops : continues) += 1;
    }
  }
  EXPECT_GT(stops, 50);
  EXPECT_GT(continues, 50);
}

}  // namespace
}  // namespace tuner
