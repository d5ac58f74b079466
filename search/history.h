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

  StudyDirection direction() const { return directions.front(); }
};

}  // namespace tuner

#endif  // TUNER_SEARCH_HISTORY_H_
