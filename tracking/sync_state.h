// SyncState: what a study has sent to one tracking server, so that a resumed sweep or a second
// `tuner sync-mlflow` sends only what is missing. One record per run: the study's parent run
// (trial -1) and each trial's run.
//
// SqliteSyncState keeps the records in the study database's table tuner_mlflow_runs (keyed by
// tracking URI, study id and trial number; docs/tracking.md), written through
// storage/extra_tables.h; MemorySyncState keeps them for the life of the object (a storage that
// is not a file). Either may be lost: the syncer then finds its runs by their tags.
//
// Thread safety: one owner, one thread.
#ifndef TUNER_TRACKING_SYNC_STATE_H_
#define TUNER_TRACKING_SYNC_STATE_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tuner::tracking {

// The version of tuner_mlflow_runs this code reads and writes; a newer one is refused.
// A version 1 table (without artifacts_sent) gets the column, 0, when opened.
inline constexpr int kSyncStateVersion = 2;
// The trial number of a study's parent run.
inline constexpr int kParentRun = -1;

struct RunRecord {
  int trial = kParentRun;
  std::string experiment_id;
  std::string run_id;
  // Params logged (a define-by-run trial may add more while it runs).
  int64_t params_sent = 0;
  // The highest step whose metrics are logged; nullopt: none. The parent run: the number of
  // finished trials its study metrics were logged for.
  std::optional<int64_t> step_sent;
  // The trial's end (state, final metrics, status) is logged.
  bool finished = false;
  // The trial's files are logged as the run's artifacts, or it had none to log
  // (MlflowSyncOptions::artifacts_dir). The parent run: unused.
  bool artifacts_sent = false;
  bool operator==(const RunRecord&) const = default;
};

class SyncState {
 public:
  virtual ~SyncState() = default;
  // Every record of the study on the server, by trial number.
  virtual std::map<int, RunRecord> load() = 0;
  // Writes `records` (replacing those of the same trials) in one step.
  virtual void save(const std::vector<RunRecord>& records) = 0;
};

class MemorySyncState final : public SyncState {
 public:
  std::map<int, RunRecord> load() override { return records_; }
  void save(const std::vector<RunRecord>& records) override {
    for (const RunRecord& r : records) records_[r.trial] = r;
  }

 private:
  std::map<int, RunRecord> records_;
};

// The records of study `study_id` for `tracking_uri` in the study database at `path`. Throws
// Error as ExtraTablesTransaction does (kNotFound: no file; kUnavailable: locked past
// `busy_timeout`; kFailedPrecondition: read-only, or a table of a newer tuner).
class SqliteSyncState final : public SyncState {
 public:
  SqliteSyncState(std::string path, std::string tracking_uri, int64_t study_id,
                  std::chrono::milliseconds busy_timeout = std::chrono::milliseconds(5000));
  std::map<int, RunRecord> load() override;
  void save(const std::vector<RunRecord>& records) override;

 private:
  // Constant after construction.
  const std::string path_;
  const std::string tracking_uri_;
  const int64_t study_id_;
  const std::chrono::milliseconds busy_timeout_;
};

}  // namespace tuner::tracking

#endif  // TUNER_TRACKING_SYNC_STATE_H_
