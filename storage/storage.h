// Storage: where studies and their trials live.
//
// The interface every backend implements (InMemoryStorage, SqliteStorage), with Optuna's
// model: a study has a name, one direction per objective and attributes; a trial is created
// RUNNING (or WAITING), gets parameters, intermediate values and attributes while it runs, and is
// finished once with a state and its values. Beside Optuna's one intermediate value per step, a
// trial keeps every metric its job reported at each step (trials/step_metrics.h). Each method is
// one atomic state change.
//
// Heartbeats (for resuming a study whose process died): a process that runs a trial records a
// heartbeat now and then; a RUNNING trial whose last heartbeat, or whose start when it has none,
// is older than a grace period is stale, and fail_stale_trial() finishes it (and creates its retry)
// in one step, so that of several processes that find it stale only one handles it.
//
// Thread safety: every method may be called from several threads at once.
// Errors: Error(kNotFound) for an unknown study or trial, Error(kAlreadyExists) for a taken study
// name, Error(kFailedPrecondition) for any write to a finished trial (finished trials are never
// rewritten), Error(kInvalidArgument) for a value outside its distribution or a NaN.
#ifndef TUNER_STORAGE_STORAGE_H_
#define TUNER_STORAGE_STORAGE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trials/distribution.h"
#include "trials/frozen_trial.h"
#include "trials/step_metrics.h"
#include "trials/trial_state.h"

namespace tuner {

// Attributes as stored: key -> JSON text.
using Attributes = std::map<std::string, std::string, std::less<>>;

struct StudyRecord {
  int64_t study_id = -1;
  std::string name;
  std::vector<StudyDirection> directions;
  Attributes user_attrs;
  Attributes system_attrs;
};

// Which trials get_trials() returns.
struct TrialFilter {
  std::optional<std::vector<TrialState>> states;  // default: every state
  int min_number = 0;                             // only trials numbered >= this
  // These trials (by trial_id) come without their intermediate values, which are not read: for
  // a cache that has them already (a study's live trials, however many steps they reported).
  // Default: none.
  std::vector<int64_t> without_intermediate_values;
};

class Storage {
 public:
  virtual ~Storage() = default;

  // REQUIRES: directions not empty.
  virtual StudyRecord create_study(const std::string& name,
                                   const std::vector<StudyDirection>& directions) = 0;
  virtual std::optional<StudyRecord> find_study(const std::string& name) = 0;
  virtual std::vector<StudyRecord> list_studies() = 0;
  virtual void delete_study(int64_t study_id) = 0;
  virtual void set_study_user_attr(int64_t study_id, const std::string& key,
                                   const std::string& json) = 0;
  virtual void set_study_system_attr(int64_t study_id, const std::string& key,
                                     const std::string& json) = 0;

  // A new trial numbered after the study's last one. With `from`, it starts with that trial's
  // params, distributions and attributes (how enqueued and retried trials are made);
  // REQUIRES: state is RUNNING or WAITING.
  virtual FrozenTrial create_trial(int64_t study_id, TrialState state = TrialState::kRunning,
                                   const FrozenTrial* from = nullptr) = 0;
  // Moves a WAITING trial to RUNNING; false if another worker took it first.
  virtual bool claim_waiting_trial(int64_t trial_id) = 0;
  virtual void set_trial_param(int64_t trial_id, const std::string& name,
                               const Distribution& distribution, const ParamValue& value) = 0;
  // Several params in one atomic step (all or none), each as set_trial_param() sets it: a
  // define-and-run trial's whole space. The default sets them one by one (not atomic; the
  // project's storages override it).
  struct NewParam {
    std::string name;
    Distribution distribution;
    ParamValue value;
  };
  virtual void set_trial_params(int64_t trial_id, const std::vector<NewParam>& params);
  virtual void set_trial_intermediate_value(int64_t trial_id, int64_t step, double value) = 0;
  // Stores `metrics` at `step` of a trial that is not finished, in one atomic step: a metric
  // already stored at that step is replaced, the step's others are kept. Empty: checks the
  // trial, stores nothing.
  virtual void set_trial_step_metrics(int64_t trial_id, int64_t step,
                                      const StepValues& metrics) = 0;
  virtual void set_trial_user_attr(int64_t trial_id, const std::string& key,
                                   const std::string& json) = 0;
  virtual void set_trial_system_attr(int64_t trial_id, const std::string& key,
                                     const std::string& json) = 0;
  // Finishes the trial and sets `system_attrs` (e.g. Optuna's "fail_reason" of a FAIL trial)
  // and `user_attrs` (e.g. a job's final metrics) on it in the same atomic step, and returns
  // the finished record. REQUIRES: is_finished(state); values as FrozenTrial documents them.
  virtual FrozenTrial finish_trial(int64_t trial_id, TrialState state,
                                   const std::vector<double>& values,
                                   const Attributes& system_attrs = {},
                                   const Attributes& user_attrs = {}) = 0;

  // Records that the RUNNING trial is alive at `time` (replacing its previous heartbeat).
  // Throws Error(kFailedPrecondition) when the trial is not RUNNING (finished meanwhile, e.g.
  // failed as stale by another process).
  virtual void record_heartbeat(int64_t trial_id, TimePoint time) = 0;
  // The study's RUNNING trials whose last heartbeat, or start when they have none, is earlier
  // than `stale_before` (now minus the grace period). Ordered by number.
  virtual std::vector<FrozenTrial> get_stale_trials(int64_t study_id, TimePoint stale_before) = 0;
  // In one atomic step, when trial `trial_id` is still RUNNING and stale as get_stale_trials()
  // defines it: finishes it as FAIL with `fail_attrs` set as system attributes and, when `retry`
  // is given, creates a WAITING trial from *retry as create_trial(study, kWaiting, retry) does.
  // Returns the failed record and the retry, or nullopt when the trial is no longer stale (it
  // finished, got a fresh heartbeat, or another process handled it first).
  // stale_before = TimePoint::max() takes the trial whatever its heartbeat, when it is RUNNING:
  // how a coordinator fails a trial whose run it lost and makes its re-run in one step.
  struct StaleTrialOutcome {
    FrozenTrial failed;
    std::optional<FrozenTrial> retry;
  };
  virtual std::optional<StaleTrialOutcome> fail_stale_trial(int64_t trial_id,
                                                            TimePoint stale_before,
                                                            const Attributes& fail_attrs,
                                                            const FrozenTrial* retry) = 0;

  virtual FrozenTrial get_trial(int64_t trial_id) = 0;
  // The COMPLETE trial with the best first value in the study's first direction (the lowest
  // number among equals), or nullopt when there is none. Fast on large studies.
  virtual std::optional<FrozenTrial> get_best_trial(int64_t study_id) = 0;
  // Ordered by number.
  virtual std::vector<FrozenTrial> get_trials(int64_t study_id, const TrialFilter& filter = {}) = 0;
  // trial_id -> the trial's step metrics in step order, for the study's trials that have any
  // (with `trial_ids`, only those of them). Error(kNotFound) for an unknown study.
  virtual std::map<int64_t, std::vector<StepMetrics>> get_step_metrics(
      int64_t study_id, const std::vector<int64_t>& trial_ids = {}) = 0;

  // Group commit: runs `body`, and the calling thread's calls on this storage inside it become
  // durable together when it returns, in one commit (a coordinator commits every outcome and
  // new trial of a poll round at once). Each call inside is still one atomic change, seen by
  // the calls after it: one that throws changes nothing and the batch goes on. Calls of other
  // threads wait until the batch ends; a batch opened inside a batch joins it.
  // When run_batch throws (the commit failed, e.g. Error(kUnavailable)), nothing of the batch is
  // stored. When `body` throws, the exception passes through and the writes made before it are
  // rolled back where the storage has transactions (SqliteStorage) and kept where its writes
  // cannot fail at commit (InMemoryStorage): a caller that needs all or none catches inside.
  // `body` runs exactly once: a batch that cannot start (SqliteStorage: the write lock is busy
  // past the busy timeout) runs it with every call committing on its own. The default runs `body`
  // with every call committing on its own.
  virtual void run_batch(const std::function<void()>& body);

  // For caches: a number that differs from an earlier one whenever anything stored may have
  // changed since: each write call through this object counts (as one, when it succeeds; a
  // storage may count failed ones too), as does any change by others (another process on the
  // same file) and a batch that was rolled back. Equal numbers mean nothing changed. nullopt
  // when the storage cannot tell (a cache must then re-read). The default: nullopt.
  virtual std::optional<uint64_t> change_count();
};

}  // namespace tuner

#endif  // TUNER_STORAGE_STORAGE_H_
