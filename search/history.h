// History: what samplers and schedulers see of a study.
//
// A borrowed view, valid for the duration of one call. Samplers and schedulers keep no state that
// cannot be rebuilt from it, which is what makes a resumed study decide as it would have decided
// without the interruption.
#ifndef TUNER_SEARCH_HISTORY_H_
#define TUNER_SEARCH_HISTORY_H_

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "trials/frozen_trial.h"
#include "trials/trial_state.h"

namespace tuner {

// A study of several objectives: each trial's objective values per step, as its reports stored
// them (the step metrics named after the objectives, trials/step_metrics.h). Keyed by trial
// number, then step; each vector holds one value per objective, in the study's order, NaN where
// the step lacks that objective's metric. A trial without such steps has no entry.
struct ObjectiveSteps {
  std::map<int, std::map<int64_t, std::vector<double>>> by_trial;

  // The steps of trial `number`; null when it has none.
  const std::map<int64_t, std::vector<double>>* of(int number) const {
    auto it = by_trial.find(number);
    return it == by_trial.end() ? nullptr : &it->second;
  }
};

struct History {
  // Every trial of the study ordered by number, in every state (RUNNING ones included, which is
  // what the constant liar needs). trials[i].number == i.
  std::span<const FrozenTrial> trials;
  // One per objective; never empty.
  std::span<const StudyDirection> directions;
  // True when the objective is noisy: the same parameters may give another value, so a sampler
  // may propose a point evaluated (or running) already. False (the default): the objective is
  // deterministic, and the GP, TPE and the AutoSampler propose no point a trial (not FAIL) has
  // already (the same values after rounding to steps and choices) while they find a new one.
  bool noisy = false;
  // A study of several objectives: the objective values per step, for the schedulers that judge
  // them all (MoAshaScheduler, ScalarizedStopping). Null when the caller gives none.
  const ObjectiveSteps* objective_steps = nullptr;
  // Observations of an earlier study that warm-start this one (StudyOptions::warm_start;
  // docs/samplers.md, "Warm start"): finished trials (COMPLETE, or PRUNED with their
  // intermediate values) numbered 0, 1, ... in their own order (prior[i].number == i), their
  // values in this study's directions, their params in this study's distributions where it has a
  // space. They are not trials of this study: samplers that model the history (TPE, the GP, the
  // AutoSampler) learn from them as from finished trials that came first, and count them toward
  // their startup trials; nothing else does (a proposal may repeat a prior point; budgets, best
  // trials and schedulers never see them). Default: none.
  std::span<const FrozenTrial> prior;

  StudyDirection direction() const { return directions.front(); }
};

}  // namespace tuner

#endif  // TUNER_SEARCH_HISTORY_H_
