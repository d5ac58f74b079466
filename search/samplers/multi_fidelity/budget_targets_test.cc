#include "search/samplers/multi_fidelity/budget_targets.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

namespace tuner {
namespace {

FrozenTrial trial(int number, TrialState state, std::map<int64_t, double> steps) {
  FrozenTrial t;
  t.trial_id = t.number = number;
  t.state = state;
  t.intermediate_values = std::move(steps);
  // A COMPLETE trial's value, and a PRUNED one's, is its last reported one.
  if (is_finished(state) && state != TrialState::kFail && !t.intermediate_values.empty()) {
    t.values = {t.intermediate_values.rbegin()->second};
  }
  return t;
}

// Accuracies after epochs 1, 3 and 8: two trials ran to the end, three were stopped. A PRUNED
// trial's last value is a value at its budget: it is carried to epoch 8 by the gap the trials
// that went on show between that budget and the end, not read as a final accuracy.
TEST(BudgetTargets, CarryAPrunedTrialsValueFromItsBudgetToTheLargest) {
  const std::vector<FrozenTrial> trials{
      trial(0, TrialState::kComplete, {{1, 0.80}, {3, 0.85}, {8, 0.88}}),
      trial(1, TrialState::kComplete, {{1, 0.78}, {3, 0.84}, {8, 0.87}}),
      trial(2, TrialState::kPruned, {{1, 0.75}}),
      trial(3, TrialState::kPruned, {{1, 0.81}, {3, 0.86}}),
      trial(4, TrialState::kPruned, {{1, 0.79}}),
      trial(5, TrialState::kRunning, {{1, 0.9}}),
      trial(6, TrialState::kFail, {}),
      trial(7, TrialState::kPruned, {}),
  };
  const std::vector<double> t = max_budget_targets(trials, StudyDirection::kMaximize);
  ASSERT_EQ(t.size(), trials.size());
  EXPECT_DOUBLE_EQ(t[0], 0.88);
  EXPECT_DOUBLE_EQ(t[1], 0.87);
  // Epoch 3: trials 0 and 1 went on, 0.03 and 0.03 better at the end.
  EXPECT_NEAR(t[3], 0.89, 1e-12);
  // Epoch 1: trials 0, 1 and 3 went on, with gaps 0.08, 0.09 and 0.08 (trial 3's to its own
  // target): the median is 0.08. Read as final, trial 2 would be 0.75.
  EXPECT_NEAR(t[2], 0.83, 1e-12);
  EXPECT_NEAR(t[4], 0.87, 1e-12);
  EXPECT_TRUE(std::isnan(t[5]));  // RUNNING
  EXPECT_TRUE(std::isnan(t[6]));  // FAIL
  EXPECT_TRUE(std::isnan(t[7]));  // PRUNED before any report
}

// A loss falls as training goes on: a stopped trial's loss is raised by the gap, in the
// direction that makes it worse, whatever the study's direction.
TEST(BudgetTargets, CarryLossesUpWhenMinimizing) {
  const std::vector<FrozenTrial> trials{
      trial(0, TrialState::kComplete, {{1, 0.6}, {4, 0.3}}),
      trial(1, TrialState::kPruned, {{1, 0.5}}),
  };
  const std::vector<double> t = max_budget_targets(trials, StudyDirection::kMinimize);
  EXPECT_DOUBLE_EQ(t[0], 0.3);
  EXPECT_NEAR(t[1], 0.2, 1e-12);  // 0.5 at step 1, 0.3 better than trial 0 was there
}

// Before any trial is COMPLETE the largest budget is the furthest any trial got; a budget that
// no trial went past gives no target.
TEST(BudgetTargets, TakeTheFurthestBudgetWhileNoTrialIsComplete) {
  const std::vector<FrozenTrial> trials{
      trial(0, TrialState::kPruned, {{1, 0.7}, {3, 0.8}}),
      trial(1, TrialState::kPruned, {{1, 0.6}}),
      trial(2, TrialState::kPruned, {{1, 0.65}, {3, 0.82}}),
  };
  const std::vector<double> t = max_budget_targets(trials, StudyDirection::kMaximize);
  EXPECT_DOUBLE_EQ(t[0], 0.8);
  EXPECT_DOUBLE_EQ(t[2], 0.82);
  EXPECT_NEAR(t[1], 0.6 + 0.135, 1e-12);  // gaps 0.1 and 0.17
  const std::vector<FrozenTrial> one{trial(0, TrialState::kPruned, {{1, 0.7}}),
                                     trial(1, TrialState::kRunning, {})};
  EXPECT_DOUBLE_EQ(max_budget_targets(one, StudyDirection::kMaximize)[0], 0.7);
}

TEST(BudgetTargetHistory, MakesPrunedTrialsWithATargetCompleteAndKeepsTheRest) {
  const std::vector<FrozenTrial> trials{
      trial(0, TrialState::kComplete, {{1, 0.80}, {8, 0.88}}),
      trial(1, TrialState::kPruned, {{1, 0.75}}),
      trial(2, TrialState::kPruned, {}),
      trial(3, TrialState::kRunning, {}),
  };
  const std::vector<StudyDirection> directions{StudyDirection::kMaximize};
  const BudgetTargetHistory targets(History{trials, directions});
  const History& h = targets.history();
  ASSERT_EQ(h.trials.size(), trials.size());
  EXPECT_EQ(targets.pruned_with_targets(), 1);
  EXPECT_EQ(h.trials[1].state, TrialState::kComplete);
  EXPECT_NEAR(h.trials[1].value(), 0.83, 1e-12);
  EXPECT_EQ(h.trials[2].state, TrialState::kPruned);
  EXPECT_EQ(h.trials[3].state, TrialState::kRunning);
  for (size_t i = 0; i < h.trials.size(); ++i) EXPECT_EQ(h.trials[i].number, static_cast<int>(i));
  EXPECT_EQ(h.direction(), StudyDirection::kMaximize);
}

}  // namespace
}  // namespace tuner
