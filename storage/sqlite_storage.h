// SqliteStorage: a Storage in one SQLite file, in Optuna's RDB schema.
//
// A study written here is read exactly by `optuna.load_study(study_name=...,
// storage="sqlite:///FILE")` and by optuna-dashboard; a study Optuna 3.x to 5.x wrote is loaded
// and continued here. docs/storage.md maps every table and column.
//
// The file:
// - Optuna's tables (studies, study_directions, study_{user,system}_attributes, trials,
//   trial_params, trial_values, trial_intermediate_values, trial_{user,system}_attributes,
//   trial_heartbeats, version_info with schema_version 12, alembic_version), stamped with the
//   alembic revision of SqliteStorageOptions::revision when the file is new. An existing file
//   keeps its revision (v3.0.0.d or v3.2.0.a); older revisions need `optuna storage upgrade`
//   first, newer ones a newer tuner.
// - The project's own tables, prefixed tuner_ (Optuna ignores them): tuner_meta (the project's
//   schema version), tuner_trial_params and tuner_trial_step_metrics (every metric of a trial's
//   steps: trial_id, step, name, value, NULL for NaN, and the datetime it was stored). A file
//   that lacks some of them (Optuna's, an older tuner's) gets them when opened for writing.
// - A parameter with a NormalDistribution, which Optuna has no counterpart for, is kept exactly
//   in tuner_trial_params (its value and the distribution as {"name": "NormalDistribution",
//   "attributes": {"mu", "sigma", "log", "q"}}) and not in trial_params, since any Optuna
//   distribution would misstate its domain. So that Optuna users still see the value, it is
//   mirrored in the trial system attribute "tuner:param:NAME" (a JSON number); get_trial()
//   hides those attributes and returns the parameter with its exact distribution.
// - Trial datetimes are naive UTC with microseconds, as Optuna's RDB storage writes them.
//
// Opening checks the file before changing anything: a file that is not a SQLite database, or a
// database of another program (tables that are not Optuna's), fails with Error(kDataLoss); a
// schema revision or tuner_meta version newer than this build knows fails with
// Error(kFailedPrecondition). In these cases the file is left byte for byte as it was. Every
// message names the file.
//
// Concurrency: WAL mode; every method is one transaction (a savepoint inside run_batch's one)
// (writes take the write lock with BEGIN IMMEDIATE, reads run in one snapshot), so several
// processes and several SqliteStorage objects can use one file at once. A lock held by another
// connection longer than the busy timeout fails with Error(kUnavailable) and changes nothing.
// Checkpoints run on a thread of the storage, not in the committing call
// (storage/sqlite/checkpointer.h). A new file gets 1 KiB pages. Durability: a committed change
// survives a killed process. With synchronous_full it also survives a power cut or OS crash;
// without it (synchronous=NORMAL, the default), a power cut may lose the last transactions
// committed before it, but never corrupts the file.
//
// Thread safety: every method may be called from several threads at once (one mutex around the
// connection). As for any SQLite connection, a storage must not be used or destroyed in a process
// forked after it was opened.
#ifndef TUNER_STORAGE_SQLITE_STORAGE_H_
#define TUNER_STORAGE_SQLITE_STORAGE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "storage/storage.h"
#include "trials/clock.h"

namespace tuner {

namespace sqlite {
class Connection;
}  // namespace sqlite

// The alembic revision of Optuna's schema that a new file is stamped with.
enum class OptunaRevision {
  kV3_2_0_a,  // Optuna 3.2 to 5.x and today's optuna-dashboard (the current head)
  kV3_0_0_d,  // Optuna 3.0 and 3.1 (Debian 12's python3-optuna)
};

struct SqliteStorageOptions {
  // How long a call waits for a lock another connection holds before failing with
  // Error(kUnavailable). Default 5 s.
  std::chrono::milliseconds busy_timeout{5000};
  // The revision a new file gets; an existing file keeps its own. Default v3.2.0.a.
  OptunaRevision revision = OptunaRevision::kV3_2_0_a;
  // PRAGMA synchronous=FULL (survives a power cut) instead of NORMAL. Default false.
  bool synchronous_full = false;
  // Stamps trial datetimes (start, completion). Default: the system clock.
  std::shared_ptr<Clock> clock;
  // Open for reading only (a dashboard, `tuner status`, a file on read-only media): every write
  // fails with Error(kFailedPrecondition) naming the file. The file must exist with its schema.
  // Default false.
  bool read_only = false;
};

class SqliteStorage final : public Storage {
 public:
  // Opens `path`, creating the file and the schema when it does not exist or is empty.
  // Throws Error (see the file comment) naming `path`.
  explicit SqliteStorage(std::string path, SqliteStorageOptions options = {});
  ~SqliteStorage() override;

  const std::string& path() const { return path_; }

  // Whether the file at path() is still the one this storage opened (the same device and inode,
  // as stat(2) saw them when it was opened): nullopt when it is; otherwise what became of it
  // ("... was deleted", "... was replaced by another file"), naming the path. Writes meanwhile
  // went to the file that was opened, which this storage still holds: backup_to() saves them.
  // Costs one stat(2). Always nullopt for a storage whose file could not be stat'ed when opened.
  std::optional<std::string> file_replaced() const;
  // Writes a consistent copy of the open database (SQLite's online backup) to `destination`,
  // which must not exist; works also when the file at path() was deleted or replaced. Throws
  // Error naming `destination` when it exists or cannot be written.
  void backup_to(const std::string& destination);

  StudyRecord create_study(const std::string& name,
                           const std::vector<StudyDirection>& directions) override;
  std::optional<StudyRecord> find_study(const std::string& name) override;
  std::vector<StudyRecord> list_studies() override;
  void delete_study(int64_t study_id) override;
  void set_study_user_attr(int64_t study_id, const std::string& key,
                           const std::string& json) override;
  void set_study_system_attr(int64_t study_id, const std::string& key,
                             const std::string& json) override;

  FrozenTrial create_trial(int64_t study_id, TrialState state = TrialState::kRunning,
                           const FrozenTrial* from = nullptr) override;
  bool claim_waiting_trial(int64_t trial_id) override;
  void set_trial_param(int64_t trial_id, const std::string& name, const Distribution& distribution,
                       const ParamValue& value) override;
  void set_trial_params(int64_t trial_id, const std::vector<NewParam>& params) override;
  void set_trial_intermediate_value(int64_t trial_id, int64_t step, double value) override;
  void set_trial_step_metrics(int64_t trial_id, int64_t step, const StepValues& metrics) override;
  void set_trial_user_attr(int64_t trial_id, const std::string& key,
                           const std::string& json) override;
  void set_trial_system_attr(int64_t trial_id, const std::string& key,
                             const std::string& json) override;
  FrozenTrial finish_trial(int64_t trial_id, TrialState state, const std::vector<double>& values,
                           const Attributes& system_attrs = {},
                           const Attributes& user_attrs = {}) override;
  // Writes Optuna's trial_heartbeats row (one per trial, its time replaced), as Optuna's
  // RDBStorage.record_heartbeat does, so Optuna's fail_stale_trials agrees on what is stale.
  void record_heartbeat(int64_t trial_id, TimePoint time) override;
  std::vector<FrozenTrial> get_stale_trials(int64_t study_id, TimePoint stale_before) override;
  std::optional<StaleTrialOutcome> fail_stale_trial(int64_t trial_id, TimePoint stale_before,
                                                    const Attributes& fail_attrs,
                                                    const FrozenTrial* retry) override;

  FrozenTrial get_trial(int64_t trial_id) override;
  std::optional<FrozenTrial> get_best_trial(int64_t study_id) override;
  std::vector<FrozenTrial> get_trials(int64_t study_id, const TrialFilter& filter = {}) override;
  std::map<int64_t, std::vector<StepMetrics>> get_step_metrics(
      int64_t study_id, const std::vector<int64_t>& trial_ids = {}) override;
  // One write transaction (BEGIN IMMEDIATE ... COMMIT) holding the file's write lock, and this
  // storage's mutex, for as long as `body` runs; each call inside is a savepoint of it. On a
  // read-only storage it just runs `body` (whose writes fail as always).
  void run_batch(const std::function<void()>& body) override;
  // This connection's committed writes, and the file's changes by other connections (SQLite's
  // PRAGMA data_version).
  std::optional<uint64_t> change_count() override;

 private:
  friend class FaultInjectionStorage;  // reaches the connection to cause real SQLite faults
  struct Impl;

  // set_trial_param's checks and write, inside the caller's transaction. REQUIRES: mutex_ held.
  void write_param(int64_t trial_id, const std::string& name, const Distribution& distribution,
                   const ParamValue& value);
  // Runs `f` on the connection, under mutex_.
  void with_connection(const std::function<void(sqlite::Connection&)>& f);

  // Constant after construction.
  const std::string path_;
  // The device and inode of the file opened (file_replaced()).
  std::optional<std::pair<uint64_t, uint64_t>> file_id_;

  // State below is protected by mutex_ (recursive: a batch holds it while its calls take it).
  std::recursive_mutex mutex_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tuner

#endif  // TUNER_STORAGE_SQLITE_STORAGE_H_
