// The keys of the trial system attributes that Optuna defines and tuner writes the way Optuna
// does, so that either reads what the other stored (docs/storage.md). Defined once here; the
// attributes of tuner's own ("tuner:...") sit beside the code that owns them.
#ifndef TUNER_TRIALS_SYSTEM_ATTRS_H_
#define TUNER_TRIALS_SYSTEM_ATTRS_H_

namespace tuner {

// A FAIL trial's reason, a JSON string (Optuna's Study.tell with state FAIL, its
// RetryFailedTrialCallback).
inline constexpr char kFailReasonAttr[] = "fail_reason";
// The params an enqueued trial is to run with (Optuna's Study.enqueue_trial), a JSON object.
inline constexpr char kFixedParamsAttr[] = "fixed_params";
// A re-run of a lost trial: the number of its chain's first trial, and the numbers of every
// failed attempt as a JSON list (Optuna's RetryFailedTrialCallback).
inline constexpr char kFailedTrialAttr[] = "failed_trial";
inline constexpr char kRetryHistoryAttr[] = "retry_history";
// tuner's own: on such a failed attempt, JSON true: a re-run of it was made, which takes its
// place among the finished trials once it ends.
inline constexpr char kRerunMadeAttr[] = "tuner:rerun_made";
// tuner's own: a FAIL trial whose job ended well without an objective metric, that metric's name
// (a JSON string); the metrics the job did print are the trial's user attributes.
inline constexpr char kMissingMetricAttr[] = "tuner:missing_metric";
// tuner's own: the most GPU memory the trial's processes held, in bytes (a JSON integer), where
// its executor measured it (RESULT/FAIL's gpu_memory_peak_bytes, executor/gpu_memory.h).
inline constexpr char kGpuMemoryPeakAttr[] = "tuner:gpu_memory_peak_bytes";
// tuner's own: a PRUNED trial that its scheduler stopped, the step of the report it was stopped
// at (a JSON integer): for the ASHA family, its first step at or past the rung that ended it.
// Steps the job reported after the decision reached it may follow.
inline constexpr char kStoppedAtStepAttr[] = "tuner:stopped_at_step";

}  // namespace tuner

#endif  // TUNER_TRIALS_SYSTEM_ATTRS_H_
