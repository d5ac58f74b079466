#include "search/schedulers/patience.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "search/schedulers/scheduler_test_util.h"
#include "trials/error.h"

namespace tuner {
namespace {

using scheduler_test::curve;
using scheduler_test::StudyFixture;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr double kInf = std::numeric_limits<double>::infinity();

// The decisions at every step of `values` (steps 1, 2, ...), "C" for continue and "S" for stop.
std::vector<std::string> decisions(const PatienceStopping& patience, std::vector<double> values,
                                   StudyDirection direction = StudyDirection::kMinimize) {
  StudyFixture study(direction);
  const FrozenTrial trial = study.next_running(curve(std::move(values)));
  std::vector<std::string> result;
  for (const auto& [step, value] : trial.intermediate_values) {
    result.push_back(patience.on_report(trial, step, study.history()) == Decision::kStop ? "S"
                                                                                         : "C");
  }
  return result;
}

TEST(PatienceTest, MemoizedDecisionsAreTheStatelessOnes) {
  int stops = 0;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    for (StudyDirection direction : {StudyDirection::kMinimize, StudyDirection::kMaximize}) {
      StudyFixture study(direction);
      stops += scheduler_test::expect_memoized_decisions_match(
          PatienceStopping({.patience = 4, .min_delta = 0.5, .n_warmup_steps = 2}), study, seed,
          300);
    }
  }
  EXPECT_GT(stops, 0);
}

// Regression: every report walked all of the trial's values from its first step: the cost per
// report grew with the steps already reported. The memo carries the walk, so a report walks only
// the values after the last one seen: a value rewritten earlier without reset() (which the caller
// must call then) is not looked at again.
TEST(PatienceTest, AReportWalksOnlyTheValuesSinceTheLastOne) {
  StudyFixture study;
  PatienceStopping patience({.patience = 3});
  ReportMemo memo;
  FrozenTrial trial = study.next_running(curve({10, 9, 8, 7, 6, 5, 4, 3, 2, 1}));
  for (int64_t step = 1; step <= 10; ++step) {
    EXPECT_EQ(patience.on_report_memoized(trial, step, study.history(), memo), Decision::kContinue);
  }
  trial.intermediate_values[3] = 0.5;  // rewritten behind the memo's back
  trial.intermediate_values[11] = 0.9;
  // From the start: 0.5 at step 3 is the best, and 8 reports since did not improve on it.
  EXPECT_EQ(patience.on_report(trial, 11, study.history()), Decision::kStop);
  EXPECT_EQ(patience.on_report_memoized(trial, 11, study.history(), memo), Decision::kContinue);
  memo.reset();  // as Trial::report does after a rewrite
  EXPECT_EQ(patience.on_report_memoized(trial, 11, study.history(), memo), Decision::kStop);
}

TEST(PatienceTest, TheMemoNoticesAValueAddedBelowItsStep) {
  StudyFixture study;
  PatienceStopping patience({.patience = 2});
  ReportMemo memo;
  FrozenTrial trial = study.next_running(curve({5, 4}));
  trial.intermediate_values[4] = 3;  // step 3 missing
  EXPECT_EQ(patience.on_report_memoized(trial, 4, study.history(), memo), Decision::kContinue);
  trial.intermediate_values[3] = 1;  // filled late: 3 at step 4 no longer improves
  trial.intermediate_values[5] = 2;
  EXPECT_EQ(patience.on_report_memoized(trial, 5, study.history(), memo), Decision::kStop);
}

TEST(PatienceTest, StopsAfterPatienceReportsWithoutImprovement) {
  PatienceStopping patience({.patience = 2});
  // 5 (best 5), 4 (improves), 4 (1 without), 4 (2 without): stop at step 4.
  EXPECT_THAT(decisions(patience, {5, 4, 4, 4}), ElementsAre("C", "C", "C", "S"));
  // 4.5 is worse than the best 4: it does not reset the count.
  EXPECT_THAT(decisions(patience, {5, 4, 4.5, 4.2}), ElementsAre("C", "C", "C", "S"));
  // An improvement at step 4 resets the count.
  EXPECT_THAT(decisions(patience, {5, 4, 4, 3, 3, 3}), ElementsAre("C", "C", "C", "C", "C", "S"));
  // patience 1: the first report that does not improve stops.
  EXPECT_THAT(decisions(PatienceStopping({.patience = 1}), {3, 2, 2}), ElementsAre("C", "C", "S"));
}

TEST(PatienceTest, MinDeltaIsTheLeastImprovement) {
  // 5, 4.8, 4.6: improvements of 0.2 and 0.4 over the best 5 are not more than 0.5: with
  // patience 2, stop at step 3; without min_delta both are improvements.
  EXPECT_THAT(decisions(PatienceStopping({.patience = 2, .min_delta = 0.5}), {5, 4.8, 4.6}),
              ElementsAre("C", "C", "S"));
  EXPECT_THAT(decisions(PatienceStopping({.patience = 2}), {5, 4.8, 4.6}),
              ElementsAre("C", "C", "C"));
  // 5, 4.8, 4.4: 4.4 improves on the best 5 by 0.6 > 0.5 and becomes the best; 4.0 improves on it
  // by only 0.4.
  EXPECT_THAT(
      decisions(PatienceStopping({.patience = 2, .min_delta = 0.5}), {5, 4.8, 4.4, 4.0, 3.95}),
      ElementsAre("C", "C", "C", "C", "S"));
}

TEST(PatienceTest, MaximizeImprovesUpwards) {
  PatienceStopping patience({.patience = 2});
  EXPECT_THAT(decisions(patience, {1, 2, 3, 4}, StudyDirection::kMaximize),
              ElementsAre("C", "C", "C", "C"));
  EXPECT_THAT(decisions(patience, {1, 2, 1.5, 2}, StudyDirection::kMaximize),
              ElementsAre("C", "C", "C", "S"));
  // Decreasing values improve when minimizing only.
  EXPECT_THAT(decisions(patience, {4, 3, 2}, StudyDirection::kMaximize),
              ElementsAre("C", "C", "S"));
}

TEST(PatienceTest, NoStoppingBeforeTheWarmupSteps) {
  PatienceStopping patience({.patience = 2, .n_warmup_steps = 5});
  // Flat from step 1: stop at the first step allowed; the reports before it count.
  EXPECT_THAT(decisions(patience, {1, 1, 1, 1, 1, 1}), ElementsAre("C", "C", "C", "C", "S", "S"));
}

TEST(PatienceTest, NonFiniteValuesNeverImprove) {
  PatienceStopping patience({.patience = 2});
  EXPECT_THAT(decisions(patience, {3, std::nan(""), kInf}), ElementsAre("C", "C", "S"));
  // -inf is not an improvement when minimizing.
  EXPECT_THAT(decisions(patience, {3, -kInf, -kInf}), ElementsAre("C", "C", "S"));
  // A finite value improves on a non-finite start.
  EXPECT_THAT(decisions(patience, {kInf, 3, kInf}), ElementsAre("C", "C", "C"));
}

TEST(PatienceTest, OnlyTheTrialsOwnCurveMatters) {
  PatienceStopping patience({.patience = 2});
  StudyFixture study;
  for (int i = 0; i < 5; ++i) study.complete(curve({0, 0, 0, 0}));
  // Far worse than everyone, but improving: continue.
  EXPECT_EQ(patience.on_report(study.next_running(curve({100, 99, 98})), 3, study.history()),
            Decision::kContinue);
  // The decision at step 3 ignores later values (a replay after a restart decides the same),
  // and a stale copy of the trial in history is ignored.
  study.add(TrialState::kRunning, curve({100}));
  const FrozenTrial later =
      scheduler_test::make_trial(5, TrialState::kRunning, curve({100, 100, 100, 1}));
  EXPECT_EQ(patience.on_report(later, 3, study.history()), Decision::kStop);
  EXPECT_EQ(patience.on_report(later, 4, study.history()), Decision::kContinue);
}

TEST(PatienceTest, RejectsInvalidOptions) {
  auto message_of = [](const PatienceOptions& options) {
    return scheduler_test::construction_error<PatienceStopping>(options);
  };
  EXPECT_THAT(message_of({}), HasSubstr("patience.patience: required, must be >= 1"));
  EXPECT_THAT(message_of({.patience = 1, .min_delta = -0.1}),
              HasSubstr("patience.min_delta: must be finite and >= 0"));
  EXPECT_THAT(message_of({.patience = 1, .min_delta = std::nan("")}),
              HasSubstr("patience.min_delta"));
  EXPECT_THAT(message_of({.patience = 1, .min_delta = kInf}), HasSubstr("patience.min_delta"));
  EXPECT_THAT(message_of({.patience = 1, .n_warmup_steps = -1}),
              HasSubstr("patience.n_warmup_steps: must be >= 0"));
  EXPECT_EQ(message_of({.patience = 3}), "no error");
}

}  // namespace
}  // namespace tuner
