// FaultInjectionStorage: a SqliteStorage that can be made to fail the way files fail, for tests.
//
// It wraps the real thing (STYLE habit 4, as LevelDB's FaultInjectionTestEnv wraps Env): every
// call goes to a real SqliteStorage, and the faults are real SQLite conditions caused on its file
// or its connection, so the errors and the rollbacks are SQLite's own:
//   kBusy      another connection holds the write lock: writes wait out the busy timeout, then
//              fail with SQLITE_BUSY -> Error(kUnavailable);
//   kDiskFull  the file may not grow (PRAGMA max_page_count at its current size): a write that
//              needs a new page fails with SQLITE_FULL -> Error(kFailedPrecondition);
//   kReadOnly  the connection may not write (PRAGMA query_only): SQLITE_READONLY ->
//              Error(kFailedPrecondition);
//   kCommit    every statement of a write runs, then COMMIT fails (a commit hook vetoes it) and
//              the transaction is rolled back: a fault at the last moment of a multi-row write.
// A fault can be armed to start after a number of write calls have passed (to fail, say, the
// third write of a Study::tell), and lasts until heal().
//
// Thread safety: as SqliteStorage; inject() and heal() may be called from any thread.
#ifndef TUNER_STORAGE_FAULT_INJECTION_STORAGE_H_
#define TUNER_STORAGE_FAULT_INJECTION_STORAGE_H_

#include <memory>
#include <mutex>
#include <optional>

#include "storage/sqlite_storage.h"

namespace tuner {

class FaultInjectionStorage final : public Storage {
 public:
  enum class Fault { kBusy, kDiskFull, kReadOnly, kCommit };

  explicit FaultInjectionStorage(std::shared_ptr<SqliteStorage> base);
  ~FaultInjectionStorage() override;

  // The fault starts before the write call that follows `after_writes` more successful write
  // calls (0: the next one). Replaces a fault that was armed and not yet started.
  void inject(Fault fault, int after_writes = 0);
  // Ends the fault: the storage works again.
  void heal();
  // Write calls that reached the storage so far (succeeded or failed).
  int writes();

  SqliteStorage& base() { return *base_; }

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
  // The base's batch, with the faults as they are: kCommit fails the batch's one COMMIT (nothing
  // of it is stored), kDiskFull and kReadOnly fail the calls inside it; kBusy started inside a
  // batch fails the call that starts it (the batch itself holds the write lock).
  void run_batch(const std::function<void()>& body) override;
  std::optional<uint64_t> change_count() override;

 private:
  struct Locker;
  // Counts a write call and starts an armed fault when it is due.
  void before_write();
  // Ends the active fault. REQUIRES: the base's connection and mutex_ held.
  void end_locked(sqlite::Connection& conn);
  void start_on(sqlite::Connection& conn, Fault fault);
  void end_on(sqlite::Connection& conn, Fault fault);

  // Constant after construction.
  const std::shared_ptr<SqliteStorage> base_;

  // State below is protected by mutex_.
  std::mutex mutex_;
  int writes_ = 0;
  std::optional<Fault> armed_;
  int armed_after_ = 0;
  std::optional<Fault> active_;
  std::unique_ptr<Locker> locker_;  // kBusy: the connection that holds the lock
};

}  // namespace tuner

#endif  // TUNER_STORAGE_FAULT_INJECTION_STORAGE_H_
