// History: what samplers and schedulers see of a study.
//
// A borrowed view, valid for the duration of one call. Samplers and schedulers keep no state that
// cannot be rebuilt from it, which is what makes a resumed study decide as it would have decided
// without the interruption.
#ifndef TUNER_SEARCH_HISTORY_H_
#define TUNER_SEARCH_HISTORY_H_

#include <span>

#include "trials/frozen_trial.h"
#include "trials/trial_state.h"

namespace tuner {

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

  StudyDirection direction() const { return directions.front(); }
};

}  // namespace tuner

#endif  // TUNER_SEARCH_HISTORY_H_
