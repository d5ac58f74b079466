#include "sweep/serve.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "coordinator/local_executor.h"
#include "launch/endpoints.h"
#include "launch/ray_launcher.h"
#include "launch/slurm_launcher.h"
#include "storage/sqlite_storage.h"
#include "sweep/failure_policy.h"
#include "sweep/storage_watch.h"
#include "sweep/sweep_runner.h"
#include "trials/error.h"
#include "util/json_string.h"

namespace tuner {
namespace {

using SteadyClock = std::chrono::steady_clock;

std::string lock_path(const std::string& storage_path) { return storage_path + ".serve.lock"; }

std::optional<ServeState> parse_state(std::string_view name) {
  for (ServeState s :
       {ServeState::kActive, ServeState::kPaused, ServeState::kStopped, ServeState::kDone}) {
    if (to_string(s) == name) return s;
  }
  return std::nullopt;
}

// The state a study system attribute holds (a JSON string), or nullopt.
std::optional<ServeState> attr_state(const StudyRecord& study, const char* key) {
  auto it = study.system_attrs.find(key);
  if (it == study.system_attrs.end()) return std::nullopt;
  try {
    return parse_state(nlohmann::json::parse(it->second).get<std::string>());
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

std::string state_json(ServeState state) { return nlohmann::json(to_string(state)).dump(); }

// The serve's exclusive lock on its storage, held for its life; the file says who holds it.
class ServeLock {
 public:
  explicit ServeLock(const std::string& storage_path) : path_(lock_path(storage_path)) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      throw Error(ErrorCode::kUnavailable, "cannot open the serve lock '" + path_ + "'");
    }
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      const auto other = running_serve(storage_path);
      throw Error(
          ErrorCode::kFailedPrecondition,
          "a tuner serve already runs on " + storage_path +
              (other ? " (pid " + std::to_string(other->pid) + ", endpoint " + other->endpoint + ")"
                     : std::string()));
    }
  }
  ~ServeLock() {
    if (::ftruncate(fd_, 0) != 0) {
      // Nothing to do: the lock goes with the descriptor, and a stale text is harmless.
    }
    ::close(fd_);
  }
  ServeLock(const ServeLock&) = delete;
  ServeLock& operator=(const ServeLock&) = delete;

  void describe(const std::string& endpoint) {
    const std::string text = std::to_string(::getpid()) + "\n" + endpoint + "\n";
    if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) < 0) {
      throw Error(ErrorCode::kUnavailable, "cannot write the serve lock '" + path_ + "'");
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
};

// A study this serve runs.
struct Served {
  StudyRunId id = 0;
  ServeState applied = ServeState::kActive;
  std::optional<SteadyClock::time_point> deadline;  // of the sweep's time budget
  // Counts the run's failures; shared with its trial callback.
  std::shared_ptr<FailurePolicy> failures;
  std::string stop_reason;  // set once the failures stop it (or its Slurm executors failed)
  bool time_up = false;     // drained: its time budget ran out
  // Its executors on Slurm (its sweep file's executors.slurm); destroyed, it cancels their jobs.
  std::shared_ptr<SlurmLauncher> slurm;
  // Its executors on Ray (executors.ray); destroyed, it stops them.
  std::shared_ptr<RayLauncher> ray;
  std::optional<int> remaining_trials;  // at its start, as OpenedSweep has it
  int max_concurrent = 0;
  int slurm_slots = 1;  // executors.slurm.slots, or executors.ray.slots
};

SqliteStorageOptions storage_options(const ServeOptions& options) {
  SqliteStorageOptions storage;
  if (options.busy_timeout) storage.busy_timeout = *options.busy_timeout;
  return storage;
}

class Server {
 public:
  explicit Server(const ServeOptions& options)
      : options_(options),
        storage_(std::make_shared<SqliteStorage>(options.storage_path, storage_options(options))) {}

  void run() {
    ServeLock lock(options_.storage_path);
    CoordinatorServiceOptions service;
    service.endpoint = options_.endpoint;
    service.security = options_.security;
    service.log_dir = options_.storage_path + ".logs";  // as the local executor's
    if (service.security.curve_keys && options_.local_executors > 0) {
      // The local executor connects with the coordinator's own key pair.
      service.security.executor_keys.push_back(service.security.curve_keys->public_key);
    }
    if (service.security.curve_keys && curve_available()) {
      // The executors that studies start on Slurm or Ray connect with a key pair made for this
      // serve.
      slurm_keys_ = generate_curve_key_pair();
      service.security.executor_keys.push_back(slurm_keys_->public_key);
      coordinator_public_key_ = service.security.curve_keys->public_key;
    }
    service.log = [this](const std::string& line) {
      if (options_.verbose) log(line);
    };
    service.warn = [this](const std::string& line) { log("serve: " + line); };
    coordinator_.emplace(service);
    lock.describe(coordinator_->endpoint());
    has_local_executor_ = options_.local_executors > 0;
    log("serve: listening on " + coordinator_->endpoint() + " for the studies of " +
        options_.storage_path + " (pid " + std::to_string(::getpid()) + ")");
    std::optional<LocalExecutor> local;
    if (options_.local_executors > 0) {
      local.emplace(LocalExecutorOptions{.coordinator = coordinator_->endpoint(),
                                         .curve_keys = service.security.curve_keys,
                                         .slots = options_.local_executors,
                                         .log_dir = service.log_dir,
                                         .log = service.log});
    }

    bool draining = false;
    SteadyClock::time_point next_control = SteadyClock::now();
    while (true) {
      // The file deleted or replaced, or its writes failing past the bound (or when a stop is
      // asked): every study is in it, so the serve stops.
      const bool stop_asked = options_.drain.stop_requested() || options_.abort.stop_requested();
      if (std::optional<StorageStop> stop = storage_stop(*coordinator_, *storage_, stop_asked)) {
        stop_on_storage(std::move(*stop), service.heartbeat_interval);
      }
      if (options_.abort.stop_requested()) {
        coordinator_->abandon("the serve was stopped");
        log("serve: stopped at once; the running trials run again when their studies resume");
        break;
      }
      if (options_.drain.stop_requested() && !draining) {
        draining = true;
        coordinator_->drain();
        log("serve: stopping: no new trials; waiting for " +
            std::to_string(coordinator_->stats().active_leases) + " running trial(s)");
      }
      if (local && !local->failure().empty()) {
        coordinator_->abandon("the local executor failed");
        throw Error(ErrorCode::kUnavailable,
                    "the serve's local executor failed: " + local->failure());
      }
      if (draining && coordinator_->done()) break;
      coordinator_->poll_once(std::chrono::milliseconds(100));
      stop_failing_studies();
      tick_launchers();
      if (SteadyClock::now() >= next_control) {
        control(draining);
        next_control = SteadyClock::now() + options_.control_interval;
      }
    }
    served_.clear();  // cancels the studies' Slurm jobs
    coordinator_.reset();
  }

 private:
  // Lets each study's Slurm launcher submit and cancel; a study whose executors fail is drained
  // with the reason, as one that stops on its failures.
  void tick_launchers() {
    const CoordinatorStats all = coordinator_->stats();
    std::vector<ConnectedExecutor> executors;
    for (const ExecutorInfo& e : coordinator_->executors()) {
      executors.push_back({.id = e.executor_id, .idle_since = e.idle_since});
    }
    for (auto& [name, s] : served_) {
      if (!s.slurm && !s.ray) continue;
      const CoordinatorStats mine = coordinator_->stats(s.id);
      LaunchQueueState state;
      // Executors are shared: every executor but the local one has this study's launcher's
      // slots, free for its trials.
      const int remote = std::max(0, all.executors - (has_local_executor_ ? 1 : 0));
      const int64_t slots = (has_local_executor_ ? options_.local_executors : 0) +
                            static_cast<int64_t>(remote) * s.slurm_slots;
      state.free_slots = static_cast<int>(std::max<int64_t>(0, slots - all.active_leases));
      state.executors = executors;
      if (s.applied == ServeState::kActive && s.stop_reason.empty() && !s.time_up) {
        int64_t left =
            (s.remaining_trials ? std::max<int64_t>(0, *s.remaining_trials - mine.trials_started)
                                : int64_t{1} << 20) +
            mine.waiting;
        if (s.max_concurrent > 0) {
          left = std::min<int64_t>(left, std::max(0, s.max_concurrent - mine.active_leases));
        }
        state.startable_trials = static_cast<int>(left);
      }
      try {
        if (s.slurm) s.slurm->tick(state);
        if (s.ray) s.ray->tick(state);
      } catch (const Error& e) {
        s.stop_reason = e.what();
        coordinator_->drain(s.id);
        s.slurm.reset();
        s.ray.reset();
        log("serve: study '" + name + "' stops: " + e.what() + "; no new trials");
      }
    }
  }

  void log(const std::string& line) {
    if (options_.log) options_.log(line);
  }

  // "study 'NAME' done: 3 complete, 0 pruned, 1 failed in this run", with `failure` as
  // "stopped (FAILURE)".
  std::string summary(const std::string& name, const Served& s,
                      const std::optional<std::string>& failure) const {
    const CoordinatorStats stats = coordinator_->stats(s.id);
    return "study '" + name + "' " +
           (failure ? "stopped (" + *failure + ")" : std::string("done")) + ": " +
           std::to_string(stats.completed) + " complete, " + std::to_string(stats.pruned) +
           " pruned, " + std::to_string(stats.failed + stats.failed_asks) + " failed in this run";
  }

  // The database failed under the serve (`stop`): stops the running trials of every study,
  // says what each study stored, and throws Error(kUnavailable) with the cause, what was kept
  // and how to go on.
  [[noreturn]] void stop_on_storage(StorageStop stop, std::chrono::milliseconds heartbeat) {
    const bool replaced = stop.kind == StorageStop::Kind::kFileReplaced;
    const StoppedTrials stopped =
        stop_running(*coordinator_,
                     replaced ? "the study database was deleted or replaced"
                              : "the serve stopped: its storage refuses writes",
                     heartbeat);
    for (const auto& [name, s] : served_) {
      log("serve: " + summary(name, s, "the storage failed"));
    }
    std::string message = "tuner serve stopped: ";
    if (replaced) {
      const std::string copy = save_open_copy(*storage_, stop.reason);
      message += stop.reason;
      if (!copy.empty()) {
        message +=
            "; its studies as this serve held them (the running trials stopped, to run "
            "first when they go on) are saved in " +
            copy + ": move it back to " + options_.storage_path + " and start tuner serve again";
      }
    } else {
      message +=
          "its storage refuses writes: " + stop.reason + "; everything committed before is kept";
      if (stopped.not_stored > 0) {
        message += "; " + std::to_string(stopped.not_stored) +
                   " running trial(s) could not be stored as stopped (they stay RUNNING and run "
                   "again when their studies go on)";
      }
      message +=
          "; once the cause is fixed (free disk space, make the file writable, end what "
          "holds its lock), start tuner serve again on " +
          options_.storage_path + ": its studies go on";
    }
    served_.clear();  // cancels the studies' Slurm jobs
    throw Error(ErrorCode::kUnavailable, message);
  }

  void set_attr(int64_t study_id, const char* key, ServeState state) {
    storage_->set_study_system_attr(study_id, key, state_json(state));
  }

  // Drains each study whose failures stop it (FailurePolicy), right after the trial that said
  // so: trials that fail at once would otherwise use the slots until the next control().
  void stop_failing_studies() {
    for (auto& [name, s] : served_) {
      if (!s.stop_reason.empty()) continue;
      if (std::optional<std::string> stop = s.failures->stop_reason()) {
        s.stop_reason = *stop;
        coordinator_->drain(s.id);
        log("serve: study '" + name + "' stops on its failures: " + *stop + "; no new trials");
      }
    }
  }

  // Takes up what the studies' "tuner:serve" attributes ask, and ends the runs that are done.
  void control(bool draining) {
    std::vector<StudyRecord> studies;
    try {
      studies = storage_->list_studies();
    } catch (const Error& e) {
      log(std::string("serve: cannot read the studies (trying again): ") + e.what());
      return;
    }
    for (const StudyRecord& study : studies) {
      const std::optional<ServeState> wanted = serve_state(study);
      if (!wanted || *wanted == ServeState::kDone) continue;
      auto it = served_.find(study.name);
      try {
        if (it == served_.end()) {
          if (!draining && *wanted != ServeState::kStopped) start(study, *wanted);
          if (*wanted == ServeState::kStopped) finish(study.study_id, study.name);
        } else if (*wanted != it->second.applied) {
          apply(study, it->second, *wanted);
        }
      } catch (const Error& e) {
        if (refused_.insert(study.name).second) {
          log("serve: study '" + study.name + "': " + e.what());
        }
      }
    }
    for (auto it = served_.begin(); it != served_.end();) {
      Served& s = it->second;
      if (s.deadline && SteadyClock::now() >= *s.deadline) {
        s.deadline.reset();
        s.time_up = true;
        coordinator_->drain(s.id);
        log("serve: study '" + it->first + "': its time budget ran out; no new trials");
      }
      if (!coordinator_->done(s.id)) {
        ++it;
        continue;
      }
      const int64_t study_id = coordinator_->study(s.id).id();
      std::optional<std::string> failure = coordinator_->failure(s.id);
      if (!failure && !s.stop_reason.empty()) failure = s.stop_reason;
      log("serve: " + summary(it->first, s, failure));
      coordinator_->remove_study(s.id);
      // A serve that is stopping leaves its studies active: the next serve takes them up again.
      if (!draining) {
        try {
          finish(study_id, it->first, s.stop_reason);
        } catch (const Error& e) {
          // Still active in the file: the next serve finds its budget spent, or goes on.
          log("serve: study '" + it->first + "': cannot store that it is done: " + e.what());
        }
      }
      it = served_.erase(it);
    }
  }

  void start(const StudyRecord& record, ServeState wanted) {
    SweepFile sweep = stored_sweep(record.name, options_.storage_path);
    sweep.storage_path = options_.storage_path;
    OpenedSweep opened = open_sweep(sweep, storage_);
    StudyRunOptions run = study_run_options(opened);
    const std::string name = record.name;
    Served served;
    served.failures = std::make_shared<FailurePolicy>(
        opened.sweep.budget.max_failures,
        std::any_of(opened.existing.begin(), opened.existing.end(),
                    [](const FrozenTrial& t) { return t.state == TrialState::kComplete; }));
    run.on_trial_finished = [this, name, failures = served.failures](const FrozenTrial& t) {
      std::ostringstream line;
      line << "serve: study '" << name << "': trial " << t.number << " " << to_string(t.state);
      if (t.values.size() == 1) line << ": " << t.values[0];
      log(line.str());
      failures->add(t);
    };
    if (opened.sweep.slurm) {
      if (!slurm_keys_) {
        log("serve: study '" + name +
            "': its executors.slurm is not used: the serve runs without CURVE keys (--key), "
            "which executors on other hosts need");
      } else {
        // Made before the study is added: a launcher that cannot write its files refuses it.
        served.slurm = std::make_shared<SlurmLauncher>(SlurmLauncherOptions{
            .slurm = *opened.sweep.slurm,
            .connect_endpoint = launcher_connect_endpoint(
                opened.sweep.slurm->endpoint, coordinator_->endpoint(), "executors.slurm"),
            .coordinator_public_key = coordinator_public_key_,
            .executor_keys = *slurm_keys_,
            .work_dir = slurm_work_dir(options_.storage_path, name),
            .name = name,
            .log = [this, name](const std::string& line) {
              log("serve: study '" + name + "': " + line);
            }});
        served.slurm_slots = opened.sweep.slurm->slots;
      }
    }
    if (opened.sweep.ray) {
      if (!slurm_keys_) {
        log("serve: study '" + name +
            "': its executors.ray is not used: the serve runs without CURVE keys (--key), "
            "which executors on other hosts need");
      } else {
        served.ray = std::make_shared<RayLauncher>(RayLauncherOptions{
            .ray = *opened.sweep.ray,
            .connect_endpoint = launcher_connect_endpoint(
                opened.sweep.ray->endpoint, coordinator_->endpoint(), "executors.ray"),
            .coordinator_public_key = coordinator_public_key_,
            .executor_keys = *slurm_keys_,  // the cluster executors' key pair
            .name = name,
            .status_dir = ray_status_dir(options_.storage_path, name),
            .log = [this, name](const std::string& line) {
              log("serve: study '" + name + "': " + line);
            }});
        served.slurm_slots = opened.sweep.ray->slots;
      }
    }
    served.remaining_trials = opened.remaining_trials;
    served.max_concurrent = opened.sweep.budget.max_concurrent;
    served.id = coordinator_->add_study(std::move(opened.study), std::move(run));
    if (opened.sweep.budget.time) served.deadline = SteadyClock::now() + *opened.sweep.budget.time;
    refused_.erase(name);
    log("serve: study '" + name + "' started" +
        (opened.remaining_trials
             ? ": " + std::to_string(*opened.remaining_trials) + " new trial(s) to go"
             : std::string()));
    auto [it, inserted] = served_.emplace(name, served);
    apply(record, it->second, wanted);
  }

  void apply(const StudyRecord& record, Served& served, ServeState wanted) {
    switch (wanted) {
      case ServeState::kActive:
        coordinator_->unpause(served.id);
        break;
      case ServeState::kPaused:
        coordinator_->pause(served.id);
        break;
      case ServeState::kStopped:
        coordinator_->drain(served.id);
        break;
      case ServeState::kDone:
        break;
    }
    if (wanted != served.applied)
      log("serve: study '" + record.name + "' " + std::string(to_string(wanted)));
    served.applied = wanted;
    set_attr(record.study_id, kServeAppliedAttr, wanted);
  }

  // The study leaves the serve: its wanted and applied states say done, with `stop_reason` when
  // its failures stopped it.
  void finish(int64_t study_id, const std::string& name, const std::string& stop_reason = "") {
    storage_->set_study_system_attr(study_id, kServeStopReasonAttr,
                                    stop_reason.empty() ? "null" : json_string(stop_reason));
    set_attr(study_id, kServeStateAttr, ServeState::kDone);
    set_attr(study_id, kServeAppliedAttr, ServeState::kDone);
    refused_.erase(name);
  }

  const ServeOptions& options_;
  std::shared_ptr<SqliteStorage> storage_;
  std::optional<Coordinator> coordinator_;
  std::optional<CurveKeyPair> slurm_keys_;  // of the executors studies start on Slurm or Ray
  std::string coordinator_public_key_;
  bool has_local_executor_ = false;
  std::map<std::string, Served> served_;  // by study name
  std::set<std::string> refused_;         // studies whose error was logged
};

}  // namespace

std::string_view to_string(ServeState state) {
  switch (state) {
    case ServeState::kActive:
      return "active";
    case ServeState::kPaused:
      return "paused";
    case ServeState::kStopped:
      return "stopped";
    case ServeState::kDone:
      return "done";
  }
  return "?";
}

void run_serve(const ServeOptions& options) {
  if (options.storage_path.empty() || options.endpoint.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "serve: a storage path and an endpoint are required");
  }
  Server(options).run();
}

std::optional<ServeState> serve_state(const StudyRecord& study) {
  return attr_state(study, kServeStateAttr);
}

std::string serve_stop_reason(const StudyRecord& study) {
  auto it = study.system_attrs.find(kServeStopReasonAttr);
  if (it == study.system_attrs.end()) return "";
  const nlohmann::json reason = nlohmann::json::parse(it->second, nullptr, false);
  return reason.is_string() ? reason.get<std::string>() : "";
}

std::optional<RunningServe> running_serve(const std::string& storage_path) {
  const std::string path = lock_path(storage_path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<RunningServe> serve;
  if (::flock(fd, LOCK_SH | LOCK_NB) == 0) {
    ::flock(fd, LOCK_UN);  // nobody holds it: no serve
  } else if (errno == EWOULDBLOCK) {
    char buffer[512] = {};
    const ssize_t n = ::pread(fd, buffer, sizeof(buffer) - 1, 0);
    std::istringstream text(std::string(buffer, n > 0 ? static_cast<size_t>(n) : 0));
    serve.emplace();
    text >> serve->pid >> serve->endpoint;
  }
  ::close(fd);
  return serve;
}

bool request_serve_state(const std::string& storage_path, const std::string& study,
                         ServeState state, std::chrono::milliseconds wait) {
  if (!running_serve(storage_path)) {
    throw Error(ErrorCode::kFailedPrecondition, "no tuner serve runs on " + storage_path +
                                                    " (start one: tuner serve --storage " +
                                                    storage_path + " --endpoint ...)");
  }
  SqliteStorage storage(storage_path);
  const std::optional<StudyRecord> record = storage.find_study(study);
  if (!record || !record->system_attrs.contains(kSweepAttr)) {
    throw Error(ErrorCode::kNotFound,
                "no study '" + study + "' made from a sweep file in " + storage_path +
                    " (submit one: tuner sweep FILE --storage " + storage_path + " --submit)");
  }
  storage.set_study_system_attr(record->study_id, kServeStateAttr, state_json(state));
  const auto until = SteadyClock::now() + wait;
  while (true) {
    const std::optional<StudyRecord> now = storage.find_study(study);
    const std::optional<ServeState> applied =
        now ? attr_state(*now, kServeAppliedAttr) : std::nullopt;
    // A stopped study that ended at once reads done.
    if (applied == state || (state == ServeState::kStopped && applied == ServeState::kDone)) {
      return true;
    }
    if (SteadyClock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace tuner
