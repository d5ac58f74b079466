// FailurePolicy: when a sweep's failed trials stop it (budget.max_failures,
// docs/sweep_file.md). Trials that failed the same way again and again do not burn the rest of
// the budget in silence: the sweep stops and says why, with the last failure's reason.
//
//   - budget.max_failures N >= 1: stop once N trials of this run have failed;
//   - unset (the default): stop when the run's first 3 finished trials all failed with the same
//     reason (a broken script or command line);
//   - 0 (or null in the file): no limit.
// Whatever the limit, a trial that ended well without the objective metric stops the sweep at
// once while no trial of the study has had it (a misspelt objective.metric), with a
// did-you-mean over the metrics the program printed. Trials the sweep itself stopped
// ("abandoned: ...") and trials whose executor was stopped under them ("preempted: ...") are not
// counted.
//
// Thread safety: thread-compatible; the sweep calls it from the coordinator's thread.
#ifndef TUNER_SWEEP_FAILURE_POLICY_H_
#define TUNER_SWEEP_FAILURE_POLICY_H_

#include <optional>
#include <string>
#include <vector>

#include "trials/frozen_trial.h"

namespace tuner {

// How many first trials of a run, all failing with one reason, stop it by default.
inline constexpr int kDefaultSameFailures = 3;

// A FAIL because the program ended well but without the objective metric.
struct MissingMetric {
  std::string metric;                // the objective metric it lacked
  std::vector<std::string> printed;  // the metrics it printed
};
// The missing metric of a FAIL trial that ended well without an objective metric (its
// kMissingMetricAttr; the metrics it printed are its user attributes); nullopt otherwise.
std::optional<MissingMetric> missing_objective_metric(const FrozenTrial& trial);

class FailurePolicy {
 public:
  // `max_failures`: as Budget::max_failures (nullopt: the default rule; 0: no limit).
  // `metric_seen`: a trial of the study has completed with its objective metric(s).
  FailurePolicy(std::optional<int> max_failures, bool metric_seen);

  // Counts a finished trial of this run. Returns why the sweep must stop ("3 trials failed
  // (budget.max_failures 3); the last, trial 7: exited with code 1"), once; nullopt otherwise.
  std::optional<std::string> add(const FrozenTrial& trial);

  int failed() const { return failed_; }
  // Why the sweep must stop, once add() said so; nullopt before.
  const std::optional<std::string>& stop_reason() const { return stop_reason_; }

 private:
  // Constant after construction.
  const std::optional<int> max_failures_;

  bool metric_seen_;
  std::optional<std::string> stop_reason_;
  int finished_ = 0;  // trials of this run counted
  int failed_ = 0;    // of which FAIL
  std::string first_reason_;
  bool all_same_ = true;  // every counted trial so far failed with first_reason_
};

}  // namespace tuner

#endif  // TUNER_SWEEP_FAILURE_POLICY_H_
