// FrozenTrial: the immutable record of one trial, as storage holds it.
//
// A snapshot: storages hand out copies, and a finished trial's record never changes again.
// validate() checks the invariants every storage keeps (see its comment).
#ifndef TUNER_TRIALS_FROZEN_TRIAL_H_
#define TUNER_TRIALS_FROZEN_TRIAL_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trials/distribution.h"
#include "trials/param_value.h"
#include "trials/trial_state.h"

namespace tuner {

using TimePoint = std::chrono::system_clock::time_point;

struct FrozenTrial {
  int64_t trial_id = -1;  // unique in its storage
  int number = -1;        // 0, 1, ... within its study, in creation order
  TrialState state = TrialState::kRunning;
  // One per study direction when COMPLETE; the last intermediate value (if any) when PRUNED;
  // empty otherwise.
  std::vector<double> values;
  Params params;
  std::map<std::string, Distribution, std::less<>> distributions;  // one per param
  std::map<int64_t, double> intermediate_values;                   // step -> value
  // Attributes hold JSON text (as Optuna's storages do): "3", "\"adam\"", "{...}".
  std::map<std::string, std::string, std::less<>> user_attrs;
  std::map<std::string, std::string, std::less<>> system_attrs;
  std::optional<TimePoint> datetime_start;
  std::optional<TimePoint> datetime_complete;

  // The single objective value. REQUIRES: values.size() == 1.
  double value() const;

  // Throws Error(kInternal) naming the trial number unless: every param has a distribution that
  // contains it; a COMPLETE trial has `n_objectives` finite values; a non-finished one has none
  // and no completion time; values are never NaN.
  void validate(size_t n_objectives) const;
};

}  // namespace tuner

#endif  // TUNER_TRIALS_FROZEN_TRIAL_H_
