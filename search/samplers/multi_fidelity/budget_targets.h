// Budget targets: what a model of the final objective learns from trials that an early-stopping
// scheduler (ASHA, Hyperband, a median rule) stopped at a lower budget (docs/samplers.md,
// "Multi-fidelity").
//
// A study under a rung scheduler finishes most trials PRUNED after a step or a few; their last
// intermediate value is a value at that budget, not a final one (an MLP's accuracy after one
// epoch of eight). These functions give each such trial the value expected at the study's
// largest budget, from the trials that went on past its budget:
// - the largest budget B is the last step of the COMPLETE trials (of the finished ones when none
//   is COMPLETE); a COMPLETE trial's target is its value, a PRUNED one that reached B its value
//   at B;
// - the PRUNED trials are taken budget by budget, largest first: at budget s (the trial's last
//   step), the references are the trials with a target and a value at s (the intermediate value
//   at the first step at or past s, as ASHA reads a rung); a trial's target is its value at s
//   plus the median, over the references, of their target less their value at s. A trial
//   stopped at s was behind the ones that went on, and that gap at s is kept at B: the model
//   learns where trials were stopped, and how far they were behind, not that they were good.
// One objective only. Pure functions of the trials: deterministic, thread-safe.
#ifndef TUNER_SEARCH_SAMPLERS_MULTI_FIDELITY_BUDGET_TARGETS_H_
#define TUNER_SEARCH_SAMPLERS_MULTI_FIDELITY_BUDGET_TARGETS_H_

#include <span>
#include <vector>

#include "search/history.h"
#include "trials/frozen_trial.h"

namespace tuner {

// One target per trial of `trials` (in their order), in the objective's own units and
// direction: a COMPLETE trial's value; a PRUNED trial's expected value at the largest budget
// (above); NaN for a trial that has none (RUNNING, FAIL, a PRUNED trial without intermediate
// values, or one whose budget no trial went past).
std::vector<double> max_budget_targets(std::span<const FrozenTrial> trials,
                                       StudyDirection direction);

// A copy of a history's trials in which every PRUNED trial with a target (max_budget_targets)
// is COMPLETE with that value, for a model that learns from COMPLETE trials only (the GP).
// The other trials, the numbers and the order are unchanged. One objective.
//
// Not thread-safe to share while being built; the history() view is valid while this object
// lives and borrows `history`'s directions, objective steps and prior, which must outlive it.
class BudgetTargetHistory {
 public:
  explicit BudgetTargetHistory(const History& history);

  BudgetTargetHistory(const BudgetTargetHistory&) = delete;
  BudgetTargetHistory& operator=(const BudgetTargetHistory&) = delete;

  const History& history() const { return history_; }
  // The trials of history(); valid while this object lives, which `history` need not outlive.
  std::span<const FrozenTrial> trials() const { return trials_; }
  // How many PRUNED trials now count as COMPLETE.
  int pruned_with_targets() const { return pruned_with_targets_; }

 private:
  std::vector<FrozenTrial> trials_;
  History history_;
  int pruned_with_targets_ = 0;
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SAMPLERS_MULTI_FIDELITY_BUDGET_TARGETS_H_
