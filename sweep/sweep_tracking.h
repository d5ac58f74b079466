// A sweep's MLflow tracking (docs/tracking.md): the syncer's options from the sweep file, and
// SweepTracking, the background syncer run_sweep keeps beside its coordinator: its passes read
// the study database on their own connection and thread, so a tracking server that is slow or
// down never slows or fails the sweep; the last pass at the end marks the study's run and logs
// the best trial's model among its run's artifacts.
//
// Thread safety: SweepTracking is owned by run_sweep's thread; its passes run on a thread of
// their own.
#ifndef TUNER_SWEEP_SWEEP_TRACKING_H_
#define TUNER_SWEEP_SWEEP_TRACKING_H_

#include <functional>
#include <memory>
#include <string>

#include "storage/sqlite_storage.h"
#include "sweep/sweep_file.h"
#include "tracking/background_sync.h"
#include "tracking/mlflow_sync.h"

namespace tuner {

// The syncer's options for the study of `sweep` on the server at `tracking_uri`: the experiment
// (tracking.mlflow.experiment, else the study's name), the objectives' metric names, the
// constraints' names (METRIC.max, METRIC.min), the job's artifacts directory (the trials' files,
// and an engine trial's metrics.json), the study run's params (the sweep's settings) and note
// (its description).
tracking::MlflowSyncOptions mlflow_sync_options(const SweepFile& sweep,
                                                const std::string& tracking_uri);

// "tuner sync-mlflow --study NAME --storage PATH --tracking-uri URI": how to catch up later.
std::string sync_mlflow_command(const SweepFile& sweep, const std::string& tracking_uri);

class SweepTracking {
 public:
  // Starts the background passes of `sweep`'s tracking section (nothing without one), `sweep`
  // being the opened sweep (its study stored). Problems go to `warn`, one line each; none is
  // thrown (a bad URI was refused when the file was read).
  SweepTracking(const SweepFile& sweep, std::function<void(const std::string&)> warn);
  // finish(kFailed) when finish() was not called (the sweep ended with an error).
  ~SweepTracking();
  SweepTracking(const SweepTracking&) = delete;
  SweepTracking& operator=(const SweepTracking&) = delete;

  bool enabled() const { return sync_ != nullptr; }

  // The last pass, the study's run set to `status`; then, with tracking.mlflow.log_model, the best
  // trial's model (an engine job's, one objective, when the export does not register it in MLflow
  // itself) uploaded among its run's artifacts under model/. Never throws. Idempotent.
  void finish(tracking::RunStatus status);

 private:
  void log_best_model();

  // Constant after construction.
  const SweepFile sweep_;
  const std::function<void(const std::string&)> warn_;

  std::unique_ptr<SqliteStorage> storage_;  // the passes' own connection, read-only
  std::unique_ptr<tracking::MlflowSync> sync_;
  std::unique_ptr<tracking::BackgroundSync> background_;
  bool finished_ = false;
};

}  // namespace tuner

#endif  // TUNER_SWEEP_SWEEP_TRACKING_H_
