// A trial's metrics at one step: every number one report of its job carried (a command job's
// metrics line, an engine epoch), beyond the one intermediate value per step that Optuna's schema
// keeps. Stored with Storage::set_trial_step_metrics, read with Storage::get_step_metrics.
#ifndef TUNER_TRIALS_STEP_METRICS_H_
#define TUNER_TRIALS_STEP_METRICS_H_

#include <cstdint>
#include <map>
#include <string>

#include "trials/frozen_trial.h"

namespace tuner {

// Metric name -> value. NaN and the infinities are kept as they are.
using StepValues = std::map<std::string, double, std::less<>>;

struct StepMetrics {
  int64_t step = 0;
  TimePoint time;  // when the step's last metric was stored
  StepValues metrics;
  bool operator==(const StepMetrics&) const = default;  // false when a metric is NaN
};

}  // namespace tuner

#endif  // TUNER_TRIALS_STEP_METRICS_H_
