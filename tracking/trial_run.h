// What a trial's MLflow run gets, from the trial as storage holds it and what its run has had
// already (RunRecord): the pure half of the syncer (mlflow_sync.h), so that the mapping is tested
// without a server. docs/tracking.md is the contract:
//   run name "trial-N"; tags mlflow.parentRunId, tuner.study, tuner.trial_number, tuner.state,
//   tuner.sampler, tuner.fail_reason (a FAIL), tuner.feasible (with constraints), and every user
//   attribute that is not a number as tuner.attr.KEY;
//   params: the trial's params (strings as they are, other values as tuner prints them);
//   metrics at each step: every metric the trial's job reported at that step (its stored step
//   metrics, trials/step_metrics.h) with the time it was stored, and the intermediate values
//   under the objective's metric name;
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
#include "trials/step_metrics.h"

namespace tuner::tracking {

struct TrialContext {
  std::string study;
  // The metric names of the trial's values, in order; the first names the intermediate values.
  // Default (empty): "value" for one objective, "value_0", "value_1", ... for several.
  std::vector<std::string> objective_metrics;
  // Every metric the job reported at each step, with when it was measured, by step (the
  // trial's stored step metrics; for a study stored without them, an engine trial's epochs from
  // its metrics.json). A metric of the objective's name here wins over the intermediate value.
  // Default none.
  std::vector<StepMetrics> steps;
  // What stands for the time of a step that has only an intermediate value: the trial's
  // completion time when it is finished, else this (the time the syncer saw it), in ms since
  // the epoch.
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

// What the trial's run still lacks, given `record`. Steps go in step order, each whole. While
// the trial runs, its steps past its last intermediate value wait for a later pass (the
// objective's value of a step is stored after the step's metrics): read the trial before its
// step metrics so that each step sent is complete.
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
