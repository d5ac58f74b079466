// MetricConstraint: a bound on one of a job's final metrics, which a trial must keep to be
// feasible (a sweep file's "constraints"; docs/sweep_file.md). The coordinator turns a RESULT's
// metric into the trial's constraint value (Trial::set_constraints), feasible when <= 0:
//   {"metric": "latency_ms", "max": 2.0}  ->  latency_ms - 2.0
//   {"metric": "val_accuracy", "min": 0.8}  ->  0.8 - val_accuracy
//
// Thread safety: a plain value; pure functions.
#ifndef TUNER_COORDINATOR_METRIC_CONSTRAINT_H_
#define TUNER_COORDINATOR_METRIC_CONSTRAINT_H_

#include <string>

namespace tuner {

struct MetricConstraint {
  enum class Bound {
    kMax,  // metric <= limit
    kMin,  // metric >= limit
  };
  std::string metric;  // a name the job reports among its final metrics
  Bound bound = Bound::kMax;
  double limit = 0;  // finite
  bool operator==(const MetricConstraint&) const = default;
};

// The constraint value for the metric's `value`: <= 0 exactly when the bound holds.
double constraint_value(const MetricConstraint& constraint, double value);

// For messages: "latency_ms <= 2", "val_accuracy >= 0.8".
std::string to_string(const MetricConstraint& constraint);

}  // namespace tuner

#endif  // TUNER_COORDINATOR_METRIC_CONSTRAINT_H_
