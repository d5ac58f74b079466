// Scheduler: decides after each reported intermediate value whether a trial goes on.
//
// Ray Tune calls these trial schedulers, Optuna calls them pruners. A decision depends only on its
// arguments (the stored intermediate values of the study), never on hidden state, the clock or
// the order in which reports arrived, so a resumed study makes the same decisions.
// Implementations are thread-safe.
#ifndef TUNER_SEARCH_SCHEDULER_H_
#define TUNER_SEARCH_SCHEDULER_H_

#include <cstdint>
#include <string_view>

#include "search/history.h"
#include "trials/frozen_trial.h"

namespace tuner {

enum class Decision {
  kContinue,
  kStop,   // prune: the trial ends as PRUNED
  kPause,  // checkpoint and wait; the trial may be resumed later (used by the coordinator)
};

std::string_view to_string(Decision decision);

class Scheduler {
 public:
  virtual ~Scheduler() = default;

  // `trial` is RUNNING and its intermediate_values include the value just reported at `step`.
  // `history` holds every trial of the study; its copy of `trial` may lag behind `trial`.
  virtual Decision on_report(const FrozenTrial& trial, int64_t step,
                             const History& history) const = 0;
};

}  // namespace tuner

#endif  // TUNER_SEARCH_SCHEDULER_H_
