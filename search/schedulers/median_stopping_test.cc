#include "search/schedulers/median_stopping.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "search/schedulers/scheduler_test_util.h"
#include "trials/error.h"

namespace tuner {
namespace {

using scheduler_test::curve;
using scheduler_test::StudyFixture;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Five completed trials, minimize, steps 1..5. At each step the values are v, v-1, ..., v-4:
//   step 1: 10 9 8 7 6   (median 8)
//   step 2:  8 7 6 5 4   (median 6)
//   step 3:  6 5 4 3 2   (median 4)
//   step 4:  5 4 3 2 1   (median 3)
//   step 5:  4 3 2 1 0   (median 2)
StudyFixture five_completed(StudyDirection direction = StudyDirection::kMinimize) {
  StudyFixture study(direction);
  for (int i = 0; i < 5; ++i) {
    const double d = i;
    study.complete(curve({10 - d, 8 - d, 6 - d, 5 - d, 4 - d}));
  }
  return study;
}

TEST(MedianStoppingTest, StopsATrialWorseThanTheMedianAtItsStep) {
  StudyFixture study = five_completed();
  MedianStopping median;
  // Best so far at step 3 is 5; the median of {6, 5, 4, 3, 2} is 4; 5 > 4: stop.
  EXPECT_EQ(median.on_report(study.next_running(curve({9, 7, 5})), 3, study.history()),
            Decision::kStop);
  // Best so far 3.9 < 4: continue.
  EXPECT_EQ(median.on_report(study.next_running(curve({9, 7, 3.9})), 3, study.history()),
            Decision::kContinue);
  // Equal to the median: not strictly worse, continue.
  EXPECT_EQ(median.on_report(study.next_running(curve({9, 7, 4})), 3, study.history()),
            Decision::kContinue);
  // At step 2: best 7 > median 6: stop.
  EXPECT_EQ(median.on_report(study.next_running(curve({9, 7})), 2, study.history()),
            Decision::kStop);
}

TEST(MedianStoppingTest, MemoizedDecisionsAreTheStatelessOnes) {
  // Completed trials with values at every step the running one may report, low enough that the
  // running trial's best so far (of values drawn from [0, 10]) takes many reports to reach them.
  StudyFixture study;
  for (int i = 0; i < 5; ++i) {
    scheduler_test::Curve values;
    for (int64_t step = 1; step <= 400; ++step) values[step] = 0.01 + 0.02 * i;
    study.complete(values);
  }
  int stops = 0;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    stops += scheduler_test::expect_memoized_decisions_match(MedianStopping(), study, seed, 300);
    stops += scheduler_test::expect_memoized_decisions_match(
        PercentileStopping({.percentile = 25, .n_warmup_steps = 3, .interval_steps = 4}), study,
        seed, 300);
  }
  EXPECT_GT(stops, 0);
}

// Regression: the trial's best value so far was computed over every step it had reported, at every
// report: the cost per report grew with the steps already reported. The memo carries it, so a
// report scans only the values after the last one seen: a value rewritten earlier without reset()
// (which the caller must call then) is not looked at again.
TEST(MedianStoppingTest, AReportScansOnlyTheValuesSinceTheLastOne) {
  StudyFixture study;
  for (int i = 0; i < 5; ++i) {
    scheduler_test::Curve values;
    for (int64_t step = 1; step <= 101; ++step) values[step] = 4.0;
    study.complete(values);
  }
  MedianStopping median;
  ReportMemo memo;
  scheduler_test::Curve values;
  for (int64_t step = 1; step <= 100; ++step) values[step] = step == 50 ? 1.0 : 5.0;
  FrozenTrial trial = study.next_running(values);
  // Best so far 1 (step 50) < median 4: continue, at every step.
  for (int64_t step = 1; step <= 100; ++step) {
    EXPECT_EQ(median.on_report_memoized(trial, step, study.history(), memo),
              step < 50 ? Decision::kStop : Decision::kContinue);
  }
  trial.intermediate_values[50] = 5.0;  // rewritten behind the memo's back
  trial.intermediate_values[101] = 5.0;
  EXPECT_EQ(median.on_report(trial, 101, study.history()), Decision::kStop);
  EXPECT_EQ(median.on_report_memoized(trial, 101, study.history(), memo), Decision::kContinue);
  memo.reset();  // as Trial::report does after a rewrite
  EXPECT_EQ(median.on_report_memoized(trial, 101, study.history(), memo), Decision::kStop);
}

TEST(MedianStoppingTest, TheMemoNoticesAValueAddedBelowItsStep) {
  StudyFixture study = five_completed();
  MedianStopping median;
  ReportMemo memo;
  FrozenTrial trial = study.next_running(curve({9, 7}));
  trial.intermediate_values[4] = 6;  // step 3 missing
  EXPECT_EQ(median.on_report_memoized(trial, 4, study.history(), memo), Decision::kStop);
  trial.intermediate_values[3] = 1;  // filled late
  trial.intermediate_values[5] = 6;
  // Best so far 1 < the median 2 at step 5.
  EXPECT_EQ(median.on_report_memoized(trial, 5, study.history(), memo), Decision::kContinue);
}

TEST(MedianStoppingTest, ComparesTheBestValueSoFarNotTheLastOne) {
  StudyFixture study = five_completed();
  MedianStopping median;
  // Last value 9 is far worse than the median 4 at step 3, but the best so far, 3 (at step 1),
  // is better than it: continue, as Optuna does.
  EXPECT_EQ(median.on_report(study.next_running(curve({3, 9, 9})), 3, study.history()),
            Decision::kContinue);
}

TEST(MedianStoppingTest, InterpolatesAnEvenNumberOfValues) {
  StudyFixture study;
  for (int i = 0; i < 4; ++i) study.complete(curve({6.0 - i}, 3));  // at step 3: 6 5 4 3
  MedianStopping median({.n_startup_trials = 4});
  // The median of {3, 4, 5, 6} is 4.5.
  EXPECT_EQ(median.on_report(study.next_running(curve({4.6}, 3)), 3, study.history()),
            Decision::kStop);
  EXPECT_EQ(median.on_report(study.next_running(curve({4.5}, 3)), 3, study.history()),
            Decision::kContinue);
}

TEST(MedianStoppingTest, WaitsForStartupTrialsToComplete) {
  StudyFixture study;
  for (int i = 0; i < 4; ++i) study.complete(curve({1, 1, 1}));
  // Neither running nor pruned nor failed trials count towards the 5 startup trials.
  study.add(TrialState::kRunning, curve({1, 1, 1}));
  study.add(TrialState::kPruned, curve({1, 1, 1}));
  study.add(TrialState::kFail, curve({1, 1, 1}));
  MedianStopping median;
  const FrozenTrial bad = study.next_running(curve({100, 100, 100}));
  EXPECT_EQ(median.on_report(bad, 3, study.history()), Decision::kContinue);
  study.complete(curve({1, 1, 1}));  // the fifth completed trial
  EXPECT_EQ(median.on_report(study.next_running(curve({100, 100, 100})), 3, study.history()),
            Decision::kStop);
}

TEST(MedianStoppingTest, ComparesOnlyAgainstCompletedTrials) {
  StudyFixture study = five_completed();
  // Pruned and running trials that did better at step 3 do not move the median (4).
  for (int i = 0; i < 5; ++i) {
    study.add(TrialState::kPruned, curve({0, 0, 0}));
    study.add(TrialState::kRunning, curve({0, 0, 0}));
  }
  MedianStopping median;
  EXPECT_EQ(median.on_report(study.next_running(curve({9, 7, 3.5})), 3, study.history()),
            Decision::kContinue);
}

TEST(MedianStoppingTest, NoStoppingBeforeTheWarmupSteps) {
  StudyFixture study = five_completed();
  MedianStopping median({.n_warmup_steps = 3});
  // 100 is far worse than every median, but steps 1 and 2 are warm-up.
  const FrozenTrial bad = study.next_running(curve({100, 100, 100}));
  EXPECT_EQ(median.on_report(bad, 1, study.history()), Decision::kContinue);
  EXPECT_EQ(median.on_report(bad, 2, study.history()), Decision::kContinue);
  EXPECT_EQ(median.on_report(bad, 3, study.history()), Decision::kStop);
}

TEST(MedianStoppingTest, DecidesOncePerInterval) {
  StudyFixture study = five_completed();
  // Checks at steps 1, 3, 5 (warm-up 1, then every 2 steps).
  MedianStopping median({.n_warmup_steps = 1, .interval_steps = 2});
  const FrozenTrial bad = study.next_running(curve({100, 100, 100, 100, 100}));
  EXPECT_EQ(median.on_report(bad, 1, study.history()), Decision::kStop);
  EXPECT_EQ(median.on_report(bad, 2, study.history()), Decision::kContinue);
  EXPECT_EQ(median.on_report(bad, 3, study.history()), Decision::kStop);
  EXPECT_EQ(median.on_report(bad, 4, study.history()), Decision::kContinue);
  EXPECT_EQ(median.on_report(bad, 5, study.history()), Decision::kStop);
}

TEST(MedianStoppingTest, ASkippedCheckHappensAtTheNextReport) {
  StudyFixture study = five_completed();
  MedianStopping median({.n_warmup_steps = 1, .interval_steps = 2});
  // Reports at steps 1 and 4: the check due at step 3 happens at step 4 (median 3 there);
  // best 100 > 3: stop.
  FrozenTrial bad = study.next_running({{1, 100}, {4, 100}});
  EXPECT_EQ(median.on_report(bad, 4, study.history()), Decision::kStop);
  // Reports at 3 and 4: step 3 was checked already; step 4 is not a check.
  bad = study.next_running({{3, 100}, {4, 100}});
  EXPECT_EQ(median.on_report(bad, 4, study.history()), Decision::kContinue);
}

TEST(MedianStoppingTest, NeedsMinTrialsAtTheStep) {
  StudyFixture study;
  // Five completed trials, but only two reported at step 3 (values 1 and 2).
  for (int i = 0; i < 3; ++i) study.complete(curve({1, 1}));
  study.complete(curve({1, 1, 1}));
  study.complete(curve({1, 1, 2}));
  const FrozenTrial bad = study.next_running(curve({100, 100, 100}));
  EXPECT_EQ(MedianStopping({.n_min_trials = 2}).on_report(bad, 3, study.history()),
            Decision::kStop);
  EXPECT_EQ(MedianStopping({.n_min_trials = 3}).on_report(bad, 3, study.history()),
            Decision::kContinue);
  // Step 4: nobody reported there; nothing to compare with.
  const FrozenTrial longer = study.next_running(curve({100, 100, 100, 100}));
  EXPECT_EQ(MedianStopping().on_report(longer, 4, study.history()), Decision::kContinue);
}

TEST(MedianStoppingTest, MaximizeKeepsTheLargerHalf) {
  // Maximize, at step 3 the completed trials have 6 5 4 3 2: median 4.
  StudyFixture study = five_completed(StudyDirection::kMaximize);
  MedianStopping median;
  EXPECT_EQ(median.on_report(study.next_running(curve({1, 2, 3.5})), 3, study.history()),
            Decision::kStop);
  EXPECT_EQ(median.on_report(study.next_running(curve({1, 2, 4.5})), 3, study.history()),
            Decision::kContinue);
  // The best so far is the largest: 5 at step 1.
  EXPECT_EQ(median.on_report(study.next_running(curve({5, 0, 0})), 3, study.history()),
            Decision::kContinue);
}

TEST(MedianStoppingTest, NonFiniteValuesAreTheWorst) {
  StudyFixture study = five_completed();
  MedianStopping median;
  // A trial that has reported only non-finite values stops (Optuna stops a NaN trial).
  EXPECT_EQ(median.on_report(study.next_running(curve({kInf})), 1, study.history()),
            Decision::kStop);
  EXPECT_EQ(median.on_report(study.next_running(curve({std::nan("")})), 1, study.history()),
            Decision::kStop);
  EXPECT_EQ(median.on_report(study.next_running(curve({-kInf})), 1, study.history()),
            Decision::kStop);  // -inf is not the best value when minimizing
  // A finite value earlier keeps it comparable: best 3.9 < median 4.
  EXPECT_EQ(median.on_report(study.next_running(curve({3.9, kInf, kInf})), 3, study.history()),
            Decision::kContinue);

  // Completed trials' non-finite values rank last: at step 1, {2, 3, NaN, inf, -inf} has the
  // median "worst", so nothing finite is worse than it.
  StudyFixture odd;
  for (double v : {2.0, 3.0, std::nan(""), kInf, -kInf}) odd.complete(curve({v}));
  EXPECT_EQ(median.on_report(odd.next_running(curve({1000})), 1, odd.history()),
            Decision::kContinue);
}

TEST(MedianStoppingTest, UsesTheTrialArgumentNotItsStaleCopyInHistory) {
  StudyFixture study = five_completed();
  // History's copy of trial 5 lags: it has only step 1 (a good value); the argument has steps
  // 1..3 with best 5 at step 3 > median 4.
  study.add(TrialState::kRunning, curve({9}));
  FrozenTrial current = scheduler_test::make_trial(5, TrialState::kRunning, curve({9, 7, 5}));
  EXPECT_EQ(MedianStopping().on_report(current, 3, study.history()), Decision::kStop);
}

TEST(MedianStoppingTest, AResumedStudyDecidesTheSame) {
  StudyFixture study = five_completed();
  study.add(TrialState::kRunning, curve({9, 6}));
  const FrozenTrial trial =
      scheduler_test::make_trial(6, TrialState::kRunning, curve({9, 7, 5, 1, 0}));
  MedianStopping median;
  // The decision at step 3, made live (the trial had reported up to step 3)...
  FrozenTrial live = trial;
  live.intermediate_values.erase(live.intermediate_values.upper_bound(3),
                                 live.intermediate_values.end());
  const Decision first = median.on_report(live, 3, study.history());
  EXPECT_EQ(first, Decision::kStop);
  // ...is the decision recomputed later by a fresh scheduler from the stored curve, whatever the
  // trial reported afterwards and whatever order the values were stored in.
  FrozenTrial stored = scheduler_test::make_trial(6, TrialState::kRunning, {});
  for (int64_t step : {5, 1, 4, 3, 2})
    stored.intermediate_values[step] = trial.intermediate_values.at(step);
  EXPECT_EQ(MedianStopping().on_report(stored, 3, study.history()), first);
  EXPECT_EQ(median.on_report(live, 3, study.history()), first);
}

TEST(PercentileStoppingTest, KeepsTheBestQuarter) {
  StudyFixture study = five_completed();
  // Minimize, step 3: {2, 3, 4, 5, 6}; the 25th percentile is at position 0.25 * 4 = 1: 3.
  PercentileStopping quarter({.percentile = 25});
  EXPECT_EQ(quarter.on_report(study.next_running(curve({9, 9, 3.5})), 3, study.history()),
            Decision::kStop);
  EXPECT_EQ(quarter.on_report(study.next_running(curve({9, 9, 3})), 3, study.history()),
            Decision::kContinue);
  // Percentile 0: only a value as good as the best survives; 100: only the worst is a bar.
  EXPECT_EQ(PercentileStopping({.percentile = 0})
                .on_report(study.next_running(curve({9, 9, 2.1})), 3, study.history()),
            Decision::kStop);
  EXPECT_EQ(PercentileStopping({.percentile = 100})
                .on_report(study.next_running(curve({9, 9, 6})), 3, study.history()),
            Decision::kContinue);
}

TEST(PercentileStoppingTest, KeepsTheBestQuarterWhenMaximizing) {
  // Maximize, step 3: {2, 3, 4, 5, 6}; the best quarter starts at Optuna's 75th percentile of
  // the raw values, position 0.75 * 4 = 3: 5.
  StudyFixture study = five_completed(StudyDirection::kMaximize);
  PercentileStopping quarter({.percentile = 25});
  EXPECT_EQ(quarter.on_report(study.next_running(curve({0, 0, 4.5})), 3, study.history()),
            Decision::kStop);
  EXPECT_EQ(quarter.on_report(study.next_running(curve({0, 0, 5})), 3, study.history()),
            Decision::kContinue);
  // Interpolated: percentile 10 -> raw 90th percentile, position 3.6: 5 + 0.6 * (6 - 5) = 5.6.
  PercentileStopping tenth({.percentile = 10});
  EXPECT_EQ(tenth.on_report(study.next_running(curve({0, 0, 5.5})), 3, study.history()),
            Decision::kStop);
  EXPECT_EQ(tenth.on_report(study.next_running(curve({0, 0, 5.7})), 3, study.history()),
            Decision::kContinue);
}

TEST(PercentileStoppingTest, RejectsInvalidOptions) {
  auto message_of = [](auto make) -> std::string {
    try {
      make();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return e.what();
    }
    return "no error";
  };
  using ::testing::HasSubstr;
  EXPECT_THAT(message_of([] { PercentileStopping({.percentile = 101}); }),
              HasSubstr("percentile_stopping.percentile"));
  EXPECT_THAT(message_of([] { PercentileStopping({.percentile = std::nan("")}); }),
              HasSubstr("percentile_stopping.percentile"));
  EXPECT_THAT(message_of([] { PercentileStopping({.percentile = -1}); }),
              HasSubstr("percentile_stopping.percentile: must be in [0, 100]"));
  EXPECT_THAT(message_of([] { MedianStopping({.n_startup_trials = -1}); }),
              HasSubstr("median_stopping.n_startup_trials: must be >= 0"));
  EXPECT_THAT(message_of([] { MedianStopping({.n_warmup_steps = -1}); }),
              HasSubstr("median_stopping.n_warmup_steps: must be >= 0"));
  EXPECT_THAT(message_of([] { MedianStopping({.interval_steps = 0}); }),
              HasSubstr("median_stopping.interval_steps: must be >= 1"));
  EXPECT_THAT(message_of([] { MedianStopping({.n_min_trials = 0}); }),
              HasSubstr("median_stopping.n_min_trials: must be >= 1"));
  EXPECT_EQ(MedianStopping().options().percentile, 50.0);
}

}  // namespace
}  // namespace tuner
