#include "search/schedulers/asha.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "search/schedulers/scheduler_test_util.h"
#include "trials/error.h"

namespace tuner {
namespace {

using scheduler_test::Curve;
using scheduler_test::curve;
using scheduler_test::StudyFixture;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(AshaTest, RungsFollowTheOptions) {
  EXPECT_THAT(AshaScheduler({.max_resource = 100}).rungs(), ElementsAre(1, 3, 9, 27, 81));
  // Rungs stop below max_resource: 27 is the budget of a whole trial, not a rung.
  EXPECT_THAT(AshaScheduler({.max_resource = 27}).rungs(), ElementsAre(1, 3, 9));
  EXPECT_THAT(AshaScheduler({.min_resource = 2, .reduction_factor = 2, .max_resource = 20}).rungs(),
              ElementsAre(2, 4, 8, 16));
  EXPECT_THAT(AshaScheduler({.max_resource = 100, .min_early_stopping_rate = 2}).rungs(),
              ElementsAre(9, 27, 81));
  EXPECT_THAT(AshaScheduler({.max_resource = 9, .min_early_stopping_rate = 2}).rungs(),
              ElementsAre());
  // Without max_resource, every rung that fits in int64_t: 2^0 .. 2^62.
  EXPECT_EQ(AshaScheduler({.reduction_factor = 2}).rungs().size(), 63u);
}

// Rung 0 is at step 1 (defaults: min_resource 1, reduction factor 3). Five trials in various
// states reached it with values 1, 2, 3, 4, 5.
StudyFixture five_at_rung_zero(StudyDirection direction = StudyDirection::kMinimize) {
  StudyFixture study(direction);
  study.complete(curve({1, 1, 1}));
  study.add(TrialState::kPruned, curve({2}));
  study.add(TrialState::kRunning, curve({3, 3}));
  study.add(TrialState::kFail, curve({4}));
  study.complete(curve({5, 5, 5}));
  return study;
}

TEST(AshaTest, KeepsTheTopThirdAtARung) {
  StudyFixture study = five_at_rung_zero();
  AshaScheduler asha;
  // With the new trial, 6 trials reached rung 0; the top 6 / 3 = 2 continue, so the bar is the
  // 2nd best value. {1, 2, 3, 4, 5, 2.5}: 2nd best is 2; 2.5 > 2: stop.
  EXPECT_EQ(asha.on_report(study.next_running(curve({2.5})), 1, study.history()), Decision::kStop);
  // {1, 2, 3, 4, 5, 2}: 2nd best is 2, a tie: continue.
  EXPECT_EQ(asha.on_report(study.next_running(curve({2})), 1, study.history()),
            Decision::kContinue);
  // {1, 1.5, 2, ...}: 1.5 is the 2nd best: continue.
  EXPECT_EQ(asha.on_report(study.next_running(curve({1.5})), 1, study.history()),
            Decision::kContinue);
}

TEST(AshaTest, FewTrialsAtARungMustBeTheBest) {
  StudyFixture study;
  AshaScheduler asha;
  // The first trial at a rung competes with itself: continue.
  EXPECT_EQ(asha.on_report(study.next_running(curve({10})), 1, study.history()),
            Decision::kContinue);
  study.complete(curve({10}));
  // Two trials: max(2 / 3, 1) = 1 continues, so the new one must be the best.
  EXPECT_EQ(asha.on_report(study.next_running(curve({11})), 1, study.history()), Decision::kStop);
  EXPECT_EQ(asha.on_report(study.next_running(curve({9})), 1, study.history()),
            Decision::kContinue);
}

TEST(AshaTest, DecidesOnlyWhenATrialFirstReachesARung) {
  StudyFixture study = five_at_rung_zero();
  AshaScheduler asha;
  // Steps 2 (between rungs 1 and 3) and a second report past rung 1 decide nothing, however bad.
  const FrozenTrial bad = study.next_running(curve({100, 100}));
  EXPECT_EQ(asha.on_report(bad, 2, study.history()), Decision::kContinue);
  // At step 3 (rung 1) only trials 0 and 4 have a value at a step >= 3 (the running trial 2 is
  // at step 2): {1, 5, 100}: max(3 / 3, 1) = 1 continues, the best: stop.
  const FrozenTrial bad3 = study.next_running(curve({100, 100, 100}));
  EXPECT_EQ(asha.on_report(bad3, 3, study.history()), Decision::kStop);
  // {1, 5, 0.5}: the best: continue.
  EXPECT_EQ(asha.on_report(study.next_running(curve({100, 100, 0.5})), 3, study.history()),
            Decision::kContinue);
}

TEST(AshaTest, ARungValueIsTheValueAtTheFirstStepAtOrAboveIt) {
  StudyFixture study;
  // Trial 0 reported at steps 1 and 5 only: its value at rung 3 is the one at step 5 (2.0).
  study.complete({{1, 50}, {5, 2}});
  // Trial 1 reported at steps 1..4: its value at rung 3 is the one at step 3 (4.0).
  study.complete(curve({50, 50, 4, 1}));
  AshaScheduler asha;
  // New trial at step 3 with 3.0: {2, 4, 3}: max(3 / 3, 1) = 1: not the best: stop.
  EXPECT_EQ(asha.on_report(study.next_running(curve({1, 1, 3})), 3, study.history()),
            Decision::kStop);
  // With 1.5 it is the best: continue.
  EXPECT_EQ(asha.on_report(study.next_running(curve({1, 1, 1.5})), 3, study.history()),
            Decision::kContinue);
  // A new trial jumping from step 1 to step 4 is judged at rung 3 with its value at step 4.
  EXPECT_EQ(asha.on_report(study.next_running({{1, 1}, {4, 1.9}}), 4, study.history()),
            Decision::kContinue);
  EXPECT_EQ(asha.on_report(study.next_running({{1, 1}, {4, 2.1}}), 4, study.history()),
            Decision::kStop);
}

TEST(AshaTest, AReportPastSeveralRungsIsJudgedAtEach) {
  StudyFixture study;
  // At rung 1 (step 1): values 10, 11, 12; at rung 3 (step 3): 10, 11, 12 (trials 0..2);
  // at rung 9 (step 9): 1 (trial 0 only).
  study.complete({{1, 10}, {3, 10}, {9, 1}});
  study.add(TrialState::kPruned, {{1, 11}, {3, 11}});
  study.add(TrialState::kPruned, {{1, 12}, {3, 12}});
  AshaScheduler asha;
  // First report at step 10 with 5: rung 1 {10, 11, 12, 5}: bar = 1st best (4 / 3 = 1): 5 is;
  // rung 3: the same; rung 9 {1, 5}: bar = 1st best, 1: stop.
  EXPECT_EQ(asha.on_report(study.next_running({{10, 5}}), 10, study.history()), Decision::kStop);
  // With 0.5 it is the best at every rung.
  EXPECT_EQ(asha.on_report(study.next_running({{10, 0.5}}), 10, study.history()),
            Decision::kContinue);
}

TEST(AshaTest, MinEarlyStoppingRateSkipsTheFirstRungs) {
  StudyFixture study = five_at_rung_zero();
  AshaScheduler asha({.min_early_stopping_rate = 1});  // rungs 3, 9, ...
  EXPECT_EQ(asha.on_report(study.next_running(curve({100})), 1, study.history()),
            Decision::kContinue);
  // At step 3: {1 (trial 0), 5 (trial 4), 100}: not the best: stop.
  EXPECT_EQ(asha.on_report(study.next_running(curve({100, 100, 100})), 3, study.history()),
            Decision::kStop);
}

TEST(AshaTest, NoRungAtOrAboveMaxResource) {
  StudyFixture study;
  for (int i = 0; i < 5; ++i) study.complete(curve({1, 1, 1, 1, 1, 1, 1, 1, 1}));
  const FrozenTrial bad = study.next_running(curve({1, 1, 1, 1, 1, 1, 1, 1, 100}));
  // Unbounded, 9 is a rung: {1 x5, 100}: bar is the 2nd best, 1: stop.
  EXPECT_EQ(AshaScheduler().on_report(bad, 9, study.history()), Decision::kStop);
  // With max_resource 9 the rungs are 1 and 3: step 9 is the end of the budget, not a rung.
  EXPECT_EQ(AshaScheduler({.max_resource = 9}).on_report(bad, 9, study.history()),
            Decision::kContinue);
}

TEST(AshaTest, BootstrapTrialsStopAtTheRung) {
  StudyFixture study;
  AshaScheduler asha({.bootstrap_count = 2});
  // The first two trials to reach rung 0 stop there (n = 1, then n = 2 <= 2), however good.
  EXPECT_EQ(asha.on_report(study.next_running(curve({1})), 1, study.history()), Decision::kStop);
  study.add(TrialState::kPruned, curve({1}));
  EXPECT_EQ(asha.on_report(study.next_running(curve({0})), 1, study.history()), Decision::kStop);
  study.add(TrialState::kPruned, curve({0}));
  // The third is judged: {1, 0, -1}: bar is the best (3 / 3 = 1): -1 is the best: continue.
  EXPECT_EQ(asha.on_report(study.next_running(curve({-1})), 1, study.history()),
            Decision::kContinue);
  EXPECT_EQ(asha.on_report(study.next_running(curve({0.5})), 1, study.history()), Decision::kStop);
}

TEST(AshaTest, MaximizeKeepsTheLargestValues) {
  StudyFixture study = five_at_rung_zero(StudyDirection::kMaximize);
  AshaScheduler asha;
  // {1, 2, 3, 4, 5, x}: the bar is the 2nd largest: 4 (or x).
  EXPECT_EQ(asha.on_report(study.next_running(curve({4.5})), 1, study.history()),
            Decision::kContinue);
  EXPECT_EQ(asha.on_report(study.next_running(curve({4})), 1, study.history()),
            Decision::kContinue);
  EXPECT_EQ(asha.on_report(study.next_running(curve({3.5})), 1, study.history()), Decision::kStop);
}

TEST(AshaTest, NonFiniteValuesAreTheWorst) {
  StudyFixture study;
  AshaScheduler asha;
  // The reporting trial stops at a rung with a non-finite value, even if it is alone there.
  EXPECT_EQ(asha.on_report(study.next_running(curve({std::nan("")})), 1, study.history()),
            Decision::kStop);
  EXPECT_EQ(asha.on_report(study.next_running(curve({-kInf})), 1, study.history()),
            Decision::kStop);
  // Others' non-finite values rank last: {inf, NaN, -inf, 100}: 100 is the best: continue.
  study.complete(curve({kInf}));
  study.add(TrialState::kFail, curve({std::nan("")}));
  study.add(TrialState::kPruned, curve({-kInf}));
  EXPECT_EQ(asha.on_report(study.next_running(curve({100})), 1, study.history()),
            Decision::kContinue);
}

TEST(AshaTest, UsesTheTrialArgumentNotItsStaleCopyInHistory) {
  StudyFixture study;
  study.complete(curve({5}));
  // History holds trial 1 as it was before its first report; the argument has its value 6.
  study.add(TrialState::kRunning, {});
  const FrozenTrial current = scheduler_test::make_trial(1, TrialState::kRunning, curve({6}));
  // {5, 6}: must be the best: stop.
  EXPECT_EQ(AshaScheduler().on_report(current, 1, study.history()), Decision::kStop);
  // A copy in history that is up to date is not counted twice: with bootstrap_count 2, {5, 4}
  // has n = 2 <= 2: stop; counted twice, {5, 4, 4} would be judged, and 4 is the best.
  study.trials()[1].intermediate_values = curve({4});
  const FrozenTrial better = scheduler_test::make_trial(1, TrialState::kRunning, curve({4}));
  EXPECT_EQ(AshaScheduler({.bootstrap_count = 2}).on_report(better, 1, study.history()),
            Decision::kStop);
  EXPECT_EQ(AshaScheduler().on_report(better, 1, study.history()), Decision::kContinue);
}

TEST(AshaTest, AResumedStudyDecidesTheSame) {
  StudyFixture study = five_at_rung_zero();
  for (int i = 0; i < 3; ++i) study.add(TrialState::kRunning, curve({0.5, 0.5, 0.5}));
  // Trial 8 reached rung 1 (step 3) with 0.7 and went on to step 5.
  const Curve full = curve({0.2, 0.9, 0.7, 0.1, 0.1});
  Curve live_curve = full;
  live_curve.erase(4);
  live_curve.erase(5);
  AshaScheduler asha;
  // Live, at step 3: rung 3 holds trials 0, 4, 5, 6, 7 and 8: {1, 5, 0.5, 0.5, 0.5, 0.7};
  // the bar is the 2nd best, 0.5: stop.
  const Decision live = asha.on_report(
      scheduler_test::make_trial(8, TrialState::kRunning, live_curve), 3, study.history());
  EXPECT_EQ(live, Decision::kStop);
  // Recomputed after a restart from the stored curve (values stored in another order, later
  // values present) by a fresh scheduler: the same.
  FrozenTrial stored = scheduler_test::make_trial(8, TrialState::kRunning, {});
  for (int64_t step : {5, 3, 1, 4, 2}) stored.intermediate_values[step] = full.at(step);
  EXPECT_EQ(AshaScheduler().on_report(stored, 3, study.history()), live);
  EXPECT_EQ(asha.on_report(stored, 3, study.history()), live);
}

TEST(AshaTest, RejectsInvalidOptions) {
  auto message_of = [](const AshaOptions& options) {
    return scheduler_test::construction_error<AshaScheduler>(options);
  };
  EXPECT_THAT(message_of({.min_resource = 0}), HasSubstr("asha.min_resource: must be >= 1"));
  EXPECT_THAT(message_of({.reduction_factor = 1}),
              HasSubstr("asha.reduction_factor: must be >= 2"));
  EXPECT_THAT(message_of({.min_resource = 4, .max_resource = 4}),
              HasSubstr("asha.max_resource: must be > min_resource"));
  EXPECT_THAT(message_of({.min_early_stopping_rate = -1}),
              HasSubstr("asha.min_early_stopping_rate: must be >= 0"));
  EXPECT_THAT(message_of({.bootstrap_count = -1}), HasSubstr("asha.bootstrap_count: must be >= 0"));
  EXPECT_EQ(message_of({}), "no error");
}

}  // namespace
}  // namespace tuner
