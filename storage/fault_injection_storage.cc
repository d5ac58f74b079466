#include "storage/fault_injection_storage.h"

#include "storage/sqlite/connection.h"
#include "trials/error.h"

namespace tuner {

namespace {
int veto_commit(void*) { return 1; }  // a commit hook that turns COMMIT into ROLLBACK
}  // namespace

// Another connection to the file, holding its write lock.
struct FaultInjectionStorage::Locker {
  explicit Locker(const std::string& path) : conn(path) { conn.exec("BEGIN IMMEDIATE"); }
  ~Locker() { sqlite3_exec(conn.get(), "ROLLBACK", nullptr, nullptr, nullptr); }
  sqlite::Connection conn;
};

FaultInjectionStorage::FaultInjectionStorage(std::shared_ptr<SqliteStorage> base)
    : base_(std::move(base)) {}

FaultInjectionStorage::~FaultInjectionStorage() { heal(); }

void FaultInjectionStorage::inject(Fault fault, int after_writes) {
  std::lock_guard lock(mutex_);
  armed_ = fault;
  armed_after_ = after_writes;
}

// Lock order, everywhere: the base storage's connection, then mutex_, as a write call inside the
// base's batch takes them.
void FaultInjectionStorage::heal() {
  base_->with_connection([&](sqlite::Connection& conn) {
    std::lock_guard lock(mutex_);
    armed_.reset();
    end_locked(conn);
  });
}

int FaultInjectionStorage::writes() {
  std::lock_guard lock(mutex_);
  return writes_;
}

void FaultInjectionStorage::before_write() {
  base_->with_connection([&](sqlite::Connection& conn) {
    std::lock_guard lock(mutex_);
    ++writes_;
    if (armed_ && armed_after_-- <= 0) {
      Fault fault = *armed_;
      armed_.reset();
      end_locked(conn);
      start_on(conn, fault);
      active_ = fault;
    }
  });
}

void FaultInjectionStorage::start_on(sqlite::Connection& conn, Fault fault) {
  switch (fault) {
    case Fault::kBusy:
      locker_ = std::make_unique<Locker>(base_->path());
      break;
    case Fault::kDiskFull: {
      auto q = conn.query("PRAGMA page_count");
      q.step();
      const int64_t pages = q.int64(0);
      q.run();
      conn.exec("PRAGMA max_page_count = " + std::to_string(pages));
      break;
    }
    case Fault::kReadOnly:
      conn.exec("PRAGMA query_only = 1");
      break;
    case Fault::kCommit:
      sqlite3_commit_hook(conn.get(), veto_commit, nullptr);
      break;
  }
}

void FaultInjectionStorage::end_locked(sqlite::Connection& conn) {
  if (!active_) return;
  end_on(conn, *active_);
  active_.reset();
}

void FaultInjectionStorage::end_on(sqlite::Connection& conn, Fault fault) {
  switch (fault) {
    case Fault::kBusy:
      locker_.reset();
      break;
    case Fault::kDiskFull:
      conn.exec("PRAGMA max_page_count = 4294967294");
      break;
    case Fault::kReadOnly:
      conn.exec("PRAGMA query_only = 0");
      break;
    case Fault::kCommit:
      sqlite3_commit_hook(conn.get(), nullptr, nullptr);
      break;
  }
}

StudyRecord FaultInjectionStorage::create_study(const std::string& name,
                                                const std::vector<StudyDirection>& directions) {
  before_write();
  return base_->create_study(name, directions);
}
std::optional<StudyRecord> FaultInjectionStorage::find_study(const std::string& name) {
  return base_->find_study(name);
}
std::vector<StudyRecord> FaultInjectionStorage::list_studies() { return base_->list_studies(); }
void FaultInjectionStorage::delete_study(int64_t study_id) {
  before_write();
  base_->delete_study(study_id);
}
void FaultInjectionStorage::set_study_user_attr(int64_t study_id, const std::string& key,
                                                const std::string& json) {
  before_write();
  base_->set_study_user_attr(study_id, key, json);
}
void FaultInjectionStorage::set_study_system_attr(int64_t study_id, const std::string& key,
                                                  const std::string& json) {
  before_write();
  base_->set_study_system_attr(study_id, key, json);
}
FrozenTrial FaultInjectionStorage::create_trial(int64_t study_id, TrialState state,
                                                const FrozenTrial* from) {
  before_write();
  return base_->create_trial(study_id, state, from);
}
bool FaultInjectionStorage::claim_waiting_trial(int64_t trial_id) {
  before_write();
  return base_->claim_waiting_trial(trial_id);
}
void FaultInjectionStorage::set_trial_param(int64_t trial_id, const std::string& name,
                                            const Distribution& distribution,
                                            const ParamValue& value) {
  before_write();
  base_->set_trial_param(trial_id, name, distribution, value);
}
void FaultInjectionStorage::set_trial_params(int64_t trial_id,
                                             const std::vector<NewParam>& params) {
  before_write();
  base_->set_trial_params(trial_id, params);
}
void FaultInjectionStorage::set_trial_intermediate_value(int64_t trial_id, int64_t step,
                                                         double value) {
  before_write();
  base_->set_trial_intermediate_value(trial_id, step, value);
}
void FaultInjectionStorage::set_trial_step_metrics(int64_t trial_id, int64_t step,
                                                   const StepValues& metrics) {
  before_write();
  base_->set_trial_step_metrics(trial_id, step, metrics);
}
void FaultInjectionStorage::set_trial_user_attr(int64_t trial_id, const std::string& key,
                                                const std::string& json) {
  before_write();
  base_->set_trial_user_attr(trial_id, key, json);
}
void FaultInjectionStorage::set_trial_system_attr(int64_t trial_id, const std::string& key,
                                                  const std::string& json) {
  before_write();
  base_->set_trial_system_attr(trial_id, key, json);
}
FrozenTrial FaultInjectionStorage::finish_trial(int64_t trial_id, TrialState state,
                                                const std::vector<double>& values,
                                                const Attributes& system_attrs,
                                                const Attributes& user_attrs) {
  before_write();
  return base_->finish_trial(trial_id, state, values, system_attrs, user_attrs);
}
void FaultInjectionStorage::record_heartbeat(int64_t trial_id, TimePoint time) {
  before_write();
  base_->record_heartbeat(trial_id, time);
}
std::vector<FrozenTrial> FaultInjectionStorage::get_stale_trials(int64_t study_id,
                                                                 TimePoint stale_before) {
  return base_->get_stale_trials(study_id, stale_before);
}
std::optional<Storage::StaleTrialOutcome> FaultInjectionStorage::fail_stale_trial(
    int64_t trial_id, TimePoint stale_before, const Attributes& fail_attrs,
    const FrozenTrial* retry) {
  before_write();
  return base_->fail_stale_trial(trial_id, stale_before, fail_attrs, retry);
}
FrozenTrial FaultInjectionStorage::get_trial(int64_t trial_id) {
  return base_->get_trial(trial_id);
}
std::optional<FrozenTrial> FaultInjectionStorage::get_best_trial(int64_t study_id) {
  return base_->get_best_trial(study_id);
}
std::vector<FrozenTrial> FaultInjectionStorage::get_trials(int64_t study_id,
                                                           const TrialFilter& filter) {
  return base_->get_trials(study_id, filter);
}

std::map<int64_t, std::vector<StepMetrics>> FaultInjectionStorage::get_step_metrics(
    int64_t study_id, const std::vector<int64_t>& trial_ids) {
  return base_->get_step_metrics(study_id, trial_ids);
}

void FaultInjectionStorage::run_batch(const std::function<void()>& body) { base_->run_batch(body); }

std::optional<uint64_t> FaultInjectionStorage::change_count() { return base_->change_count(); }

}  // namespace tuner
