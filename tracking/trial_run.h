// What a trial's MLflow run gets, from the trial as storage holds it and what its run has had
// already (RunRecord): the pure half of the syncer (mlflow_sync.h), so that the mapping is tested
// without a server. docs/tracking.md is the contract:
//   run name "trial-N"; tags mlflow.parentRunId, tuner.study, tuner.trial_number, tuner.state,
//   tuner.sampler, tuner.fail_reason (a FAIL), tuner.feasible (with constraints), and every user
//   attribute that is not a number as tuner.attr.KEY;
//   params: the trial's params (strings as they are, other values as tuner prints them);
//   metrics at each step: the intermediate values under the objective's metric name, and an
//   engine trial's per-epoch metrics (its artifacts' metrics.json) with their wall times;
//   final metrics, at the last step with the completion time: the trial's values under the
//   objectives' names, its numeric user attributes (a job's final metrics), its constraint
//   values as constraint/NAME;
//   status FINISHED (COMPLETE), KILLED (PRUNED), FAILED (FAIL), RUNNING otherwise.
//
// Thread safety: pure functions.
#ifndef TUNER_TRACKING_TRIAL_RUN_H_
#define TUNER_TRACKING_TRIAL_RUN_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tracking/mlflow_client.h"
#include "tracking/sync_state.h"
#include "trials/frozen_trial.h"

namespace tuner::tracking {

// One step's metrics with the wall time they were measured at, when known.
struct StepMetrics {
  int64_t step = 0;
  std::map<std::string, double> metrics;
  std::optional<int64_t> time_ms;
};

struct TrialContext {
  std::string study;
  // The metric names of the trial's values, in order; the first names the intermediate values.
  // Default (empty): "value" for one objective, "value_0", "value_1", ... for several.
  std::vector<std::string> objective_metrics;
  // Per-step metrics measured by the job (an engine trial's epochs), by step. Default none.
  std::vector<StepMetrics> steps;
  // What stands for a step's time when none was measured: the trial's completion time when it
  // is finished, else this (the time the syncer saw it), in ms since the epoch.
  int64_t now_ms = 0;
  // Names of the constraint values "0", "1", ... (the sweep's constraints, e.g.
  // "epoch_seconds<=30"); others keep their own. Default none.
  std::vector<std::string> constraint_names;
};

struct TrialUpdate {
  std::vector<MlflowMetric> metrics;
  std::vector<MlflowTag> params;
  std::vector<MlflowTag> tags;
  // Set when the run's status is to change (the trial finished).
  std::optional<RunStatus> status;
  std::optional<int64_t> end_time_ms;
  RunRecord after;  // `record` once all of this is logged
  bool empty() const { return metrics.empty() && params.empty() && tags.empty() && !status; }
};

// The run's name and the tags it is created with (with its parent's id).
std::string trial_run_name(const FrozenTrial& trial);
std::vector<MlflowTag> trial_creation_tags(const FrozenTrial& trial, const TrialContext& context,
                                           const std::string& parent_run_id);

// What the trial's run still lacks, given `record`.
TrialUpdate plan_trial_update(const FrozenTrial& trial, const RunRecord& record,
                              const TrialContext& context);

// MLflow's run status for a trial state.
RunStatus run_status(TrialState state);

// `key` as MLflow accepts a metric, param or tag key: characters other than letters, digits,
// '_', '-', '.', ' ', ':' and '/' become '_', at most kMaxKeyLength of them.
std::string mlflow_key(const std::string& key);

// Milliseconds since the Unix epoch.
int64_t to_ms(TimePoint time);

}  // namespace tuner::tracking

#endif  // TUNER_TRACKING_TRIAL_RUN_H_
