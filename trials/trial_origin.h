// Where a trial's params came from, as a Study records it (docs/samplers.md, "Which sampler made
// a trial"): the system attribute "tuner:sampler", a JSON string stored with the trial's outcome:
// the sampler's name ("tpe", "gp", "random", "grid", "nsga2"; Sampler::name()), "enqueued" for
// params given with Study::enqueue_trial (the sampler drew any the queue left out), or "retry"
// for a re-run of a trial whose run was lost.
//
// Thread safety: pure functions.
#ifndef TUNER_TRIALS_TRIAL_ORIGIN_H_
#define TUNER_TRIALS_TRIAL_ORIGIN_H_

#include <string>

#include "trials/frozen_trial.h"

namespace tuner {

inline constexpr char kSamplerAttr[] = "tuner:sampler";

// The recorded origin; empty when there is none (a trial still running, one that Optuna ran, one
// whose process died) or it is not a JSON string.
std::string sampler_of(const FrozenTrial& trial);

}  // namespace tuner

#endif  // TUNER_TRIALS_TRIAL_ORIGIN_H_
