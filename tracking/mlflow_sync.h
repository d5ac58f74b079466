// MlflowSync: logs a study to an MLflow tracking server, sending whatever the server lacks: an
// experiment named after the study (created, or found by name), a parent run for the study, one
// child run per trial (tracking/trial_run.h says what each gets), in runs/log-batch calls within
// MLflow's limits, and each finished trial's files as its run's artifacts. It reads the study from
// storage only, so it can run on its own thread beside a sweep (or after it: `tuner sync-mlflow`),
// and a pass is idempotent: what was sent is recorded in a SyncState (the study database's
// tuner_mlflow_runs), and when that record is lost the runs are found by their tags (tuner.study,
// tuner.trial_number) before any is created.
//
// C++ users track a Study with it on the study's storage (docs/tracking.md):
//   tracking::MlflowSync mlflow(study.storage(), study.name(),
//                               {.tracking_uri = "http://127.0.0.1:5000"});
//   tracking::BackgroundSync background(mlflow);            // a pass every 5 s
//   study.optimize(objective, {.n_trials = 50,
//                              .on_trial_finished = [&](const FrozenTrial&) { background.nudge();
//                              }});
//   background.finish(tracking::RunStatus::kFinished);      // the last pass
//
// Errors: sync() throws the client's Error when the server does not answer or refuses the
// experiment (kUnavailable: try again later; the next pass goes on where this one stopped).
// A trial whose data MLflow refuses (kInvalidArgument) is reported through `warn` once and left
// out; so are a trial's files MLflow refuses, and all of them when the server does not serve
// artifacts (for this object's life); a state table that cannot be written (a read-only file) is
// reported once and replaced by one in memory.
//
// Thread safety: one thread at a time (BackgroundSync's, then its last pass). Other threads and
// processes may write the study meanwhile.
#ifndef TUNER_TRACKING_MLFLOW_SYNC_H_
#define TUNER_TRACKING_MLFLOW_SYNC_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "storage/storage.h"
#include "tracking/mlflow_client.h"
#include "tracking/sync_state.h"
#include "tracking/trial_run.h"
#include "trials/clock.h"

namespace tuner::tracking {

struct MlflowSyncOptions {
  // The server, http://HOST:PORT[/PATH]. Required unless `client` is given.
  std::string tracking_uri;
  // Default: connect_mlflow(tracking_uri). Tests give one over a fake transport.
  std::shared_ptr<MlflowClient> client;
  // The experiment's name. Default: the study's.
  std::string experiment;
  // Where the record of what was sent lives. Default: SqliteSyncState in `state_path`, or in the
  // storage's file when it is a SqliteStorage; else a MemorySyncState.
  std::shared_ptr<SyncState> state;
  std::string state_path;
  // The study's artifacts directory: trial N's files are DIR/trial-N/ (a sweep's
  // job.artifacts_dir). A finished trial's files are logged once as its run's artifacts (at their
  // root, by their paths below the trial's folder), and a finished engine trial's per-epoch
  // metrics and times are read from its metrics.json when storage holds no step metrics for it
  // (a study stored without them). Default: none.
  std::string artifacts_dir;
  // The most bytes of one trial's files logged; files past it are left out, with a warning that
  // names the trial, its files' total and this limit. Default 100 MiB.
  int64_t max_trial_artifact_bytes = int64_t{100} << 20;
  // The objectives' metric names (TrialContext::objective_metrics). Default: the study's
  // "study:metric_names" attribute (Optuna's set_metric_names, which sweeps write), else "value".
  std::vector<std::string> objective_metrics;
  // Names of the constraint values (TrialContext::constraint_names). Default none.
  std::vector<std::string> constraint_names;
  // The parent run's params (a sweep's settings: sampler, scheduler, budget) and its note
  // (mlflow.note.content, shown in MLflow's UI). Default none.
  std::vector<MlflowTag> study_params;
  std::string description;
  // Stamps steps without a measured time. Default: the system clock.
  std::shared_ptr<Clock> clock;
  // Non-fatal problems, one line each. Default: ignored.
  std::function<void(const std::string&)> warn;
};

struct SyncPass {
  // The parent run's status. Default: RUNNING while a trial runs or waits, else FINISHED.
  std::optional<RunStatus> parent_status;
  // Checked between calls: a stop ends the pass early (SyncReport::stopped); what was sent is
  // recorded.
  std::stop_token stop;
};

struct SyncReport {
  int64_t runs_created = 0;
  int64_t runs_updated = 0;  // runs that were sent something (created ones included)
  int64_t metrics = 0, params = 0, tags = 0;
  int64_t calls = 0;                          // log-batch calls
  int64_t artifacts = 0, artifact_bytes = 0;  // trials' files uploaded, and their bytes
  int64_t pending = 0;  // trials run or running whose runs are not complete (left out too)
  bool stopped = false;
};

class MlflowSync {
 public:
  // `storage` is borrowed and must outlive this object. Throws Error(kInvalidArgument) for a
  // tracking URI that is not http://. Connects on the first sync().
  MlflowSync(Storage& storage, std::string study_name, MlflowSyncOptions options);
  ~MlflowSync();
  MlflowSync(const MlflowSync&) = delete;
  MlflowSync& operator=(const MlflowSync&) = delete;

  // One pass. Throws Error(kNotFound) when the storage has no such study, and the client's
  // Error (see the top).
  SyncReport sync(const SyncPass& pass = {});

  // The run of trial `number` (kParentRun: the study's) as the last pass left it; nullopt
  // before it was created.
  std::optional<RunRecord> record(int number) const;
  // The experiment's id; empty before the first pass reached the server.
  const std::string& experiment_id() const { return experiment_id_; }
  const std::string& study_name() const { return study_name_; }
  MlflowClient& client() { return *client_; }

 private:
  void open_state(int64_t study_id);
  void save(const RunRecord& record);
  void find_runs_by_tags();
  std::vector<std::string> objective_metrics(const StudyRecord& study) const;
  // `step_metrics`: this pass's, by trial id; the trial's are moved out.
  TrialContext context_for(const FrozenTrial& trial, const StudyRecord& study,
                           std::map<int64_t, std::vector<StepMetrics>>& step_metrics) const;
  // Logs a finished trial's files once (MlflowSyncOptions::artifacts_dir).
  void sync_artifacts(const FrozenTrial& trial, SyncReport& report);
  // Whether the trial's run has had everything it gets.
  bool complete(const RunRecord& record) const;
  // Sends `update` to `run_id`; false when MLflow refused it (reported, the trial left out).
  bool send(const std::string& run_id, const std::string& what, const TrialUpdate& update,
            SyncReport& report);
  void sync_parent(const StudyRecord& study, const std::vector<FrozenTrial>& trials,
                   const SyncPass& pass, SyncReport& report);
  void warn(const std::string& message) const;

  // Constant after construction.
  Storage& storage_;
  const std::string study_name_;
  MlflowSyncOptions options_;
  std::shared_ptr<MlflowClient> client_;

  // State below is the syncing thread's.
  std::string experiment_id_;
  std::shared_ptr<SyncState> state_;
  std::map<int, RunRecord> records_;
  bool searched_ = false;          // the experiment's runs of this study were looked up by tags
  int low_water_ = 0;              // trials numbered below this have complete runs
  std::vector<int64_t> done_ids_;  // trial ids of the trials with complete runs
  std::set<int> refused_;          // trials MLflow refused, left out for this object's life
  std::set<int> files_refused_;    // trials whose files MLflow refused, likewise
  bool files_off_ = false;         // the server serves no artifacts: no trial's files are sent
  std::optional<RunStatus> parent_status_sent_;
};

}  // namespace tuner::tracking

#endif  // TUNER_TRACKING_MLFLOW_SYNC_H_
