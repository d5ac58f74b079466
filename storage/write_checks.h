// The checks every Storage makes before a write, so that every backend refuses the same things
// with the same messages.
#ifndef TUNER_STORAGE_WRITE_CHECKS_H_
#define TUNER_STORAGE_WRITE_CHECKS_H_

#include <string>
#include <vector>

#include "trials/distribution.h"
#include "trials/frozen_trial.h"

namespace tuner {

// Throws Error(kFailedPrecondition) when `trial` is finished: finished trials are never rewritten.
void check_writable(const FrozenTrial& trial, const std::string& what);

// Throws Error(kInvalidArgument) when `value` is not in `distribution`, or when `trial` already
// holds `name` with another distribution or value.
void check_param(const FrozenTrial& trial, const std::string& name,
                 const Distribution& distribution, const ParamValue& value);

// Throws Error(kInvalidArgument) when `value` is NaN (infinities are kept, as Optuna keeps them).
void check_intermediate_value(const FrozenTrial& trial, int64_t step, double value);

// Throws Error(kFailedPrecondition) unless `trial` is RUNNING (only a running trial has a
// heartbeat).
void check_heartbeat(const FrozenTrial& trial);

// Throws Error(kInvalidArgument) unless `state` is finished and `values` fit it and the study's
// number of objectives (see FrozenTrial).
void check_finish(const FrozenTrial& trial, TrialState state, const std::vector<double>& values,
                  size_t n_objectives);

}  // namespace tuner

#endif  // TUNER_STORAGE_WRITE_CHECKS_H_
