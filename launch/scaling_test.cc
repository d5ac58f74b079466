#include "launch/scaling.h"

#include <gtest/gtest.h>

namespace tuner {
namespace {

using std::chrono::seconds;
using State = LaunchedJob::State;

ScalingInput bounds(int min, int max, int slots = 1) {
  return ScalingInput{.min_executors = min,
                      .max_executors = max,
                      .slots_per_executor = slots,
                      .idle_grace = seconds(60)};
}

TEST(DecideScaling, SubmitsForWaitingTrialsUpToTheMaximum) {
  ScalingInput in = bounds(0, 2);
  in.startable_trials = 6;
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{.submit = 2}));
}

TEST(DecideScaling, CountsTheSlotsOfJobsNotConnectedYet) {
  ScalingInput in = bounds(0, 8, 2);
  in.startable_trials = 5;
  // 4 slots to come: one more job of 2 slots for the fifth trial.
  in.jobs = {{.id = "1", .state = State::kPending}, {.id = "2", .state = State::kStarting}};
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{.submit = 1}));
  in.startable_trials = 4;
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{}));
}

TEST(DecideScaling, FreeSlotsTakeWaitingTrialsFirst) {
  ScalingInput in = bounds(0, 4);
  in.jobs = {{.id = "1", .state = State::kRunning}};
  in.startable_trials = 3;
  in.free_slots = 1;
  EXPECT_EQ(decide_scaling(in).submit, 2);
}

TEST(DecideScaling, TopsUpToTheMinimumWithoutWork) {
  ScalingInput in = bounds(2, 4);
  in.jobs = {{.id = "1", .state = State::kRunning}};
  in.free_slots = 1;
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{.submit = 1}));
}

TEST(DecideScaling, CancelsPendingJobsNotNeededNewestFirst) {
  ScalingInput in = bounds(0, 4);
  in.jobs = {{.id = "1", .state = State::kRunning},
             {.id = "2", .state = State::kPending},
             {.id = "3", .state = State::kPending}};
  in.startable_trials = 1;  // job 2's or 3's slot is needed, not both
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{.cancel = {"3"}}));
}

TEST(DecideScaling, KeepsTheMinimum) {
  ScalingInput in = bounds(2, 4);
  in.jobs = {{.id = "1", .state = State::kPending}, {.id = "2", .state = State::kPending}};
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{}));
  in.jobs.push_back({.id = "3", .state = State::kRunning, .idle_for = seconds(600)});
  in.free_slots = 1;
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{.cancel = {"2"}}));
}

TEST(DecideScaling, CancelsRunningJobsOnlyAfterTheIdleGraceLongestIdleFirst) {
  ScalingInput in = bounds(0, 4);
  in.jobs = {{.id = "1", .state = State::kRunning, .idle_for = seconds(30)},
             {.id = "2", .state = State::kRunning, .idle_for = seconds(90)},
             {.id = "3", .state = State::kRunning, .idle_for = seconds(61)},
             {.id = "4", .state = State::kRunning}};  // busy
  in.free_slots = 3;
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{.cancel = {"2", "3"}}));
}

TEST(DecideScaling, KeepsIdleExecutorsWhoseSlotsTrialsNeed) {
  ScalingInput in = bounds(0, 4);
  in.jobs = {{.id = "1", .state = State::kRunning, .idle_for = seconds(600)},
             {.id = "2", .state = State::kRunning, .idle_for = seconds(600)}};
  in.free_slots = 2;
  in.startable_trials = 2;
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{}));
  in.startable_trials = 1;
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{.cancel = {"1"}}));
}

TEST(DecideScaling, ABusyExecutorIsNeverCancelled) {
  ScalingInput in = bounds(0, 4, 2);
  in.jobs = {{.id = "1", .state = State::kRunning}};  // one of its 2 slots holds a trial
  in.free_slots = 1;
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{}));
}

TEST(DecideScaling, AnIdleExecutorBesideABusyOneIsCancelledAfterTheGrace) {
  ScalingInput in = bounds(0, 4);
  in.jobs = {{.id = "1", .state = State::kRunning, .idle_for = seconds(59)},
             {.id = "2", .state = State::kRunning}};
  in.free_slots = 1;
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{}));
  in.jobs[0].idle_for = seconds(60);
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{.cancel = {"1"}}));
  in.startable_trials = 1;  // a trial waits for its slot
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{}));
  in.startable_trials = 0;
  in.min_executors = 2;
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{}));
}

TEST(DecideScaling, AStartingJobIsNotIdleAndItsSlotsAreToCome) {
  ScalingInput in = bounds(0, 4);
  in.jobs = {{.id = "1", .state = State::kStarting}};
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{}));
  in.startable_trials = 1;
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{}));
  in.startable_trials = 2;
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{.submit = 1}));
}

TEST(DecideScaling, CancelsWholeExecutorsOnly) {
  ScalingInput in = bounds(0, 4, 4);
  in.jobs = {{.id = "1", .state = State::kRunning, .idle_for = seconds(600)},
             {.id = "2", .state = State::kPending}};
  in.free_slots = 4;
  in.startable_trials = 5;  // 8 slots for 5 trials: 3 spare, less than an executor
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{}));
  in.startable_trials = 4;
  EXPECT_EQ(decide_scaling(in), (ScalingDecision{.cancel = {"2"}}));
}

}  // namespace
}  // namespace tuner
