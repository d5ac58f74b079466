#include "sweep/sweep_runner.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "coordinator/coordinator.h"
#include "coordinator/local_executor.h"
#include "executor/executor_service.h"
#include "executor/trial_job.h"
#include "launch/endpoints.h"
#include "launch/ray_launcher.h"
#include "launch/slurm_launcher.h"
#include "storage/sqlite_storage.h"
#include "sweep/failure_policy.h"
#include "sweep/objective_direction.h"
#include "sweep/storage_watch.h"
#include "sweep/sweep_tracking.h"
#include "sweep/trial_logs.h"
#include "trials/constraints.h"
#include "trials/error.h"
#include "trials/json_depth.h"
#include "trials/system_attrs.h"
#include "tuner/study.h"
#include "util/strings.h"

namespace tuner {
namespace {

using SteadyClock = std::chrono::steady_clock;

// A fresh private directory for the coordinator's ipc socket; removed when the sweep ends.
class SocketDir {
 public:
  SocketDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tuner-sweep-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      throw Error(ErrorCode::kUnavailable,
                  "cannot create a directory for the coordinator's "
                  "socket under " +
                      pattern);
    }
    path_ = pattern;
  }
  ~SocketDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string endpoint() const { return "ipc://" + (path_ / "coordinator.sock").string(); }

 private:
  std::filesystem::path path_;
};

// The study's counts and best trial, kept up to date from the coordinator's callbacks.
class Tally {
 public:
  Tally(const std::vector<FrozenTrial>& trials, StudyDirection direction) : direction_(direction) {
    for (const FrozenTrial& t : trials) add(t);
  }

  void add(const FrozenTrial& t) { count_trial(progress_, t, direction_); }

  SweepProgress& progress() { return progress_; }

 private:
  StudyDirection direction_;
  SweepProgress progress_;
};

// Each trial's folder (an engine trial's best model, either kind's TensorBoard scalars) is beside
// the study database unless the file says where.
SweepFile with_artifacts_dir(SweepFile sweep) {
  nlohmann::json job = nlohmann::json::parse(sweep.job_json);
  if (!job.contains("artifacts_dir")) {
    job["artifacts_dir"] =
        (std::filesystem::absolute(sweep.storage_path + ".artifacts") / sweep.name)
            .lexically_normal()
            .string();
    sweep.job_json = job.dump();
  }
  return sweep;
}

}  // namespace

void count_trial(SweepProgress& progress, const FrozenTrial& t, StudyDirection direction) {
  const bool rerun = t.system_attrs.contains(kFailedTrialAttr);  // in a lost attempt's place
  if (t.state == TrialState::kFail && t.system_attrs.contains(kRerunMadeAttr)) {
    // Lost, and run again: its place waits for the re-run (a lost re-run passes its place on).
    if (!rerun) ++progress.awaiting_rerun;
    return;
  }
  switch (t.state) {
    case TrialState::kComplete: {
      ++progress.complete;
      if (!is_feasible(t)) {
        ++progress.infeasible;
        break;
      }
      if (t.values.empty()) break;
      // Ties go to the lower trial number, as the storage's best trial (what is exported).
      const double v = t.values[0];
      if (!progress.best_value || is_better(direction, v, *progress.best_value) ||
          (v == *progress.best_value && t.number < *progress.best_number)) {
        progress.best_value = v;
        progress.best_number = t.number;
      }
      break;
    }
    case TrialState::kPruned:
      ++progress.pruned;
      break;
    case TrialState::kFail:
      ++progress.failed;
      break;
    default:
      return;
  }
  if (rerun) {
    ++progress.reruns;
    // Its lost attempt waited (kRerunMadeAttr) or, stored without that mark, counted FAIL.
    if (progress.awaiting_rerun > 0) {
      --progress.awaiting_rerun;
    } else {
      --progress.failed;
    }
  }
}

std::optional<std::string> trial_model_path(const SweepFile& sweep, int number) {
  if (sweep.job_kind != "engine") return std::nullopt;
  const nlohmann::json job = nlohmann::json::parse(sweep.job_json);
  if (!job.contains("artifacts_dir")) return std::nullopt;
  const std::filesystem::path path =
      std::filesystem::path(job["artifacts_dir"].get<std::string>()) /
      ("trial-" + std::to_string(number)) / "model.ckpt";
  if (!std::filesystem::exists(path)) return std::nullopt;
  return path.string();
}

namespace {

// Where Optuna's study.set_metric_names() keeps the objectives' names (a JSON list).
constexpr char kMetricNamesAttr[] = "study:metric_names";

// The sweep's `field` is `given` where its stored study has `kept`.
[[noreturn]] void refuse_contradiction(const SweepFile& sweep, const std::string& field,
                                       const std::string& given, const std::string& kept) {
  throw Error(ErrorCode::kInvalidArgument,
              (sweep.path.empty() ? "the sweep" : sweep.path) + ": " + field + " is " + given +
                  ", but study '" + sweep.name + "' in " + sweep.storage_path + " has " + kept +
                  "; to start a new study instead, give it another name (\"name\" in the file, "
                  "or --study NAME)");
}

// The objectives' metrics, as Optuna's study.set_metric_names() keeps them.
nlohmann::json metric_names(const SweepFile& sweep) {
  nlohmann::json names = nlohmann::json::array();
  for (const SweepObjective& o : sweep.objectives) names.push_back(o.metric);
  return names;
}

// Throws when the sweep contradicts the study of its name that `storage` holds already: another
// direction would rank trials upside down, another metric would mix two metrics' values. (A seed
// is checked once the study is loaded: one Optuna made takes the sweep's.)
void check_against_stored(const SweepFile& sweep, Storage& storage) {
  const std::optional<StudyRecord> stored = storage.find_study(sweep.name);
  if (!stored) return;
  const std::vector<StudyDirection> directions = make_study_options(sweep).directions;
  if (stored->directions != directions) {
    std::string kept;
    for (StudyDirection d : stored->directions) {
      kept += (kept.empty() ? "" : ", ") + nlohmann::json(std::string(to_string(d))).dump();
    }
    std::string given;
    for (StudyDirection d : directions) {
      given += (given.empty() ? "" : ", ") + nlohmann::json(std::string(to_string(d))).dump();
    }
    refuse_contradiction(sweep, directions.size() == 1 ? "objective.direction" : "objectives",
                         (directions.size() == 1 ? "" : "directions ") + given,
                         (stored->directions.size() == 1 ? "direction " : "directions ") + kept);
  }
  if (auto it = stored->system_attrs.find(kMetricNamesAttr); it != stored->system_attrs.end()) {
    const nlohmann::json names = json_nests_deeper_than(it->second, kMaxJsonDepth)
                                     ? nlohmann::json()
                                     : nlohmann::json::parse(it->second, nullptr, false);
    const nlohmann::json given = metric_names(sweep);
    if (names.is_array() && names != given) {
      refuse_contradiction(
          sweep, given.size() == 1 ? "objective.metric" : "objectives",
          given.size() == 1 ? given[0].dump() : "the metrics " + given.dump(),
          (names.size() == 1 ? "the metric " + names[0].dump() : "the metrics " + names.dump()));
    }
  }
  // A space its earlier trials cannot follow (Study::load refuses it too; here the message names
  // the file's place).
  if (const std::optional<SpaceConflict> c =
          compare_with_stored(*stored, storage, sweep.space).conflict) {
    throw Error(ErrorCode::kInvalidArgument,
                (sweep.path.empty() ? "the sweep" : sweep.path) + ": space.params." + c->name +
                    " is " + to_string(c->after) + ", but study '" + sweep.name + "' in " +
                    sweep.storage_path + " has it as " + to_string(c->before) + ": " + c->reason +
                    ", so the study's earlier trials could no longer be read by its sampler (nor "
                    "by Optuna's); to start a new study with this space, give it another name "
                    "(\"name\" in the file, or --study NAME)");
  }
}

// A sweep that does not name its sampler continues a stored study with the sampler that study was
// created with (the default of new studies may have changed since).
void keep_stored_sampler(SweepFile& sweep, Storage& storage) {
  if (sweep.sampler.type_given) return;
  const std::optional<StudyRecord> stored = storage.find_study(sweep.name);
  if (!stored) return;
  const std::string name = stored_sampler_name(*stored);
  const std::optional<SamplerType> type = sampler_type_named(name);
  if (!type) {
    throw Error(ErrorCode::kInvalidArgument,
                (sweep.path.empty() ? "the sweep" : sweep.path) + ": study '" + sweep.name +
                    "' in " + sweep.storage_path + " was created with the sampler \"" + name +
                    "\", which a sweep file cannot name: give sampler.type to continue it");
  }
  sweep.sampler.type = *type;
}

}  // namespace

OpenedSweep open_sweep(const SweepFile& file, std::shared_ptr<Storage> storage) {
  SweepFile sweep = with_artifacts_dir(file);
  check_against_stored(sweep, *storage);
  keep_stored_sampler(sweep, *storage);
  StudyOptions study_options = make_study_options(sweep);
  study_options.storage = storage;
  Study study = Study::create(std::move(study_options));
  if (sweep.sampler.seed && *sweep.sampler.seed != study.seed()) {
    refuse_contradiction(
        sweep, "sampler.seed", std::to_string(*sweep.sampler.seed),
        "seed " + std::to_string(study.seed()) + " (give it, or none, to continue)");
  }
  const nlohmann::json stored = {{"path", std::filesystem::absolute(sweep.path).string()},
                                 {"file", nlohmann::json::parse(to_json(sweep))}};
  storage->set_study_system_attr(study.id(), kSweepAttr, nlohmann::json(stored.dump()).dump());
  // Where Optuna's study.set_metric_names() keeps them: the report, Optuna's plots and
  // optuna-dashboard name the objective after the metric.
  storage->set_study_system_attr(study.id(), kMetricNamesAttr, metric_names(sweep).dump());
  std::vector<FrozenTrial> existing = study.trials();
  // The trial budget is the study's: trials of earlier runs count (a WAITING one is still to run),
  // re-runs of lost trials do not (they carry "failed_trial": Study::fail_and_retry, the
  // stale-trial policy, Optuna's RetryFailedTrialCallback), as within one run.
  std::optional<int> remaining;
  if (sweep.budget.trials) {
    const auto counted = std::count_if(existing.begin(), existing.end(), [](const FrozenTrial& t) {
      return t.state != TrialState::kWaiting && !t.system_attrs.contains(kFailedTrialAttr);
    });
    remaining = std::max(0, *sweep.budget.trials - static_cast<int>(counted));
  }
  return OpenedSweep{.sweep = sweep,
                     .study = std::move(study),
                     .existing = std::move(existing),
                     .remaining_trials = remaining};
}

namespace {

// StudyRunOptions::objective_metrics: one per objective of a sweep with several, else none.
std::vector<std::string> objective_metrics(const SweepFile& sweep) {
  std::vector<std::string> metrics;
  if (sweep.objectives.size() > 1) {
    for (const SweepObjective& o : sweep.objectives) metrics.push_back(o.metric);
  }
  return metrics;
}

}  // namespace

StudyRunOptions study_run_options(const OpenedSweep& opened) {
  return StudyRunOptions{
      .job_json = opened.sweep.job_json,
      .n_trials = opened.remaining_trials,
      .max_concurrency = opened.sweep.budget.max_concurrent,
      .constraints = opened.sweep.constraints,
      .objective_metrics = objective_metrics(opened.sweep),
      .pbt = std::dynamic_pointer_cast<const PbtScheduler>(make_scheduler(opened.sweep))};
}

namespace {

// Without an endpoint only the sweep's local executor can connect: a sweep it cannot run would
// wait forever, so it is refused before its study is opened.
void refuse_without_endpoint(const SweepFile& sweep) {
  const std::string where = "sweep '" + sweep.name + "'";
  if (sweep.local_executors == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                where +
                    ": no executor could run its trials: 0 local executor slots and no "
                    "endpoint for other executors to connect to (give --endpoint, or "
                    "--executors N > 0)");
  }
  const TrialNeeds needs = parse_trial_job(sweep.job_json)->needs();
  if (const int nodes = needs.nodes; nodes > 1) {
    throw Error(ErrorCode::kInvalidArgument,
                where + ": each trial runs on " + std::to_string(nodes) +
                    " executors (the job's \"nodes\"), and without an endpoint only the "
                    "sweep's local executor can connect: give --endpoint and start `tuner "
                    "executor --connect ENDPOINT` on " +
                    std::to_string(nodes) + " hosts (docs/engine_jobs.md, \"Nodes\")");
  }
  // A trial that needs more GPUs than the local executor has would wait for ever.
  const int gpus_needed = needs.gpu_fraction > 0 ? 1 : needs.gpus_per_node;
  if (gpus_needed > 0) {
    ExecutorOptions local;
    local.gpus = sweep.local_gpus;
    const int local_gpus = static_cast<int>(offered_resources(local).gpus.size());
    if (local_gpus < gpus_needed) {
      throw Error(ErrorCode::kInvalidArgument,
                  where + ": each trial needs " + std::to_string(gpus_needed) +
                      " GPU(s) (job.gpus_per_trial), and the local executor, the only one "
                      "without an endpoint, has " +
                      std::to_string(local_gpus) +
                      (sweep.local_gpus ? " (executors.gpus)" : " (the GPUs found on this host)") +
                      ": lower job.gpus_per_trial, list the GPUs in executors.gpus, or give "
                      "--endpoint and start `tuner executor --connect ENDPOINT --gpus ...` on "
                      "a host with enough");
    }
    if (const uint64_t need = needs.gpu_memory_bytes; need > 0) {
      uint64_t largest = 0;
      int fit = 0;
      for (const GpuInfo& gpu : offered_resources(local).gpus) {
        largest = std::max(largest, gpu.memory_bytes);
        if (gpu.memory_bytes == 0 || gpu.memory_bytes >= need) ++fit;
      }
      if (fit < gpus_needed) {
        throw Error(ErrorCode::kInvalidArgument,
                    where + ": each trial needs " + byte_size_text(need) +
                        " on each of its GPUs (job.gpu_memory_per_trial), and the largest GPU of "
                        "the local executor, the only one without an endpoint, has " +
                        byte_size_text(largest) +
                        ": lower job.gpu_memory_per_trial, or give --endpoint and start `tuner "
                        "executor --connect ENDPOINT` on a host with larger GPUs");
      }
    }
  }
}

// How long the trials still running when the time budget runs out may go on: 5% of the
// budget, at most 30 s.
std::chrono::milliseconds time_up_grace(std::chrono::seconds time) {
  return std::min<std::chrono::milliseconds>(time / 20, std::chrono::seconds(30));
}

// The coordinator's queue as a Slurm or Ray launcher sees it (launch/slurm_launcher.h): every
// executor but the local one has the cluster's executors' slots.
LaunchQueueState launch_queue_state(const Coordinator& coordinator, const OpenedSweep& opened,
                                    bool local_executor) {
  const SweepFile& sweep = opened.sweep;
  const CoordinatorStats stats = coordinator.stats();
  LaunchQueueState state;
  const int remote = std::max(0, stats.executors - (local_executor ? 1 : 0));
  const int64_t slots =
      (local_executor ? sweep.local_executors : 0) +
      static_cast<int64_t>(remote) * (sweep.slurm ? sweep.slurm->slots : sweep.ray->slots);
  state.free_slots = static_cast<int>(std::max<int64_t>(0, slots - stats.active_leases));
  for (const ExecutorInfo& e : coordinator.executors()) {
    state.executors.push_back({.id = e.executor_id, .idle_since = e.idle_since});
  }
  if (!coordinator.draining() && !coordinator.done()) {
    // The budget's new trials not yet started, and the trials already made that wait (the
    // re-runs of a preempted executor's trials, after the budget's last new trial).
    int64_t left = (opened.remaining_trials
                        ? std::max<int64_t>(0, *opened.remaining_trials - stats.trials_started)
                        : int64_t{1} << 20) +
                   stats.waiting;
    if (sweep.budget.max_concurrent > 0) {
      left =
          std::min<int64_t>(left, std::max(0, sweep.budget.max_concurrent - stats.active_leases));
    }
    state.startable_trials = static_cast<int>(left);
  }
  return state;
}

}  // namespace

SweepResult run_sweep(const SweepFile& file, const SweepRunOptions& options) {
  if (options.endpoint.empty() && !file.slurm && !file.ray) refuse_without_endpoint(file);
  const SteadyClock::time_point started = SteadyClock::now();
  SqliteStorageOptions storage_options;
  if (options.busy_timeout) storage_options.busy_timeout = *options.busy_timeout;
  if (options.warn) {
    for (const std::string& line : direction_warnings(file)) options.warn(line);
  }
  const auto storage = std::make_shared<SqliteStorage>(file.storage_path, storage_options);
  OpenedSweep opened = open_sweep(file, storage);
  const SweepFile& sweep = opened.sweep;
  Study& study = opened.study;
  if (options.notice && !study.space_change().empty()) {
    options.notice("space changed: " + study.space_change());
  }
  if (options.notice && !study.warm_start().empty()) {
    options.notice("warm start: " + study.warm_start());
  }
  Tally tally(opened.existing, sweep.direction());
  tally.progress().trial_budget = sweep.budget.trials;
  {
    SweepProgress& p = tally.progress();
    p.done_before = p.complete + p.pruned + p.failed;
  }
  SweepResult result{
      .study_name = study.name(),
      .storage_path = sweep.storage_path,
      .log_dir = options.log_dir.empty() ? default_log_dir(sweep.storage_path) : options.log_dir};
  FailurePolicy failures(sweep.budget.max_failures, tally.progress().complete > 0);
  const std::optional<SteadyClock::time_point> deadline =
      sweep.budget.time ? std::optional(started + *sweep.budget.time) : std::nullopt;

  auto quiet = [](const std::string&) {};
  auto log = options.log ? options.log : std::function<void(const std::string&)>(quiet);
  // Tracking reads the study on its own connection and thread; it ends with the sweep, below.
  SweepTracking tracking(sweep, options.warn ? options.warn : quiet);
  std::optional<SocketDir> socket_dir;
  CoordinatorOptions co;
  if (!options.endpoint.empty()) {
    co.endpoint = options.endpoint;
  } else if (sweep.slurm) {
    // The nodes connect from elsewhere: every interface, on the port of executors.slurm.endpoint
    // or a free one.
    co.endpoint = launcher_bind_endpoint(sweep.slurm->endpoint);
  } else if (sweep.ray) {
    co.endpoint = launcher_bind_endpoint(sweep.ray->endpoint);
  } else {
    socket_dir.emplace();
    co.endpoint = socket_dir->endpoint();
  }
  co.security = options.security;
  // The cluster's executors (Slurm's, Ray's) connect with a key pair made for this run; CURVE
  // keys for the coordinator too, when it was given none.
  std::optional<CurveKeyPair> cluster_keys;
  if (sweep.slurm || sweep.ray) {
    if (!curve_available()) {
      throw Error(ErrorCode::kFailedPrecondition,
                  std::string(sweep.slurm ? "executors.slurm" : "executors.ray") +
                      ": this tuner's ZeroMQ has no CURVE (built without libsodium), which the "
                      "executors on the cluster's nodes need to connect safely");
    }
    if (!co.security.curve_keys) co.security.curve_keys = generate_curve_key_pair();
    cluster_keys = generate_curve_key_pair();
    co.security.executor_keys.push_back(cluster_keys->public_key);
  }
  co.log_dir = result.log_dir;  // where executors on other hosts send their trials' logs
  co.warn = options.warn;
  if (co.security.curve_keys) {
    // The local executor connects with the coordinator's own key pair.
    co.security.executor_keys.push_back(co.security.curve_keys->public_key);
  }
  static_cast<StudyRunOptions&>(co) = study_run_options(opened);
  co.log = log;
  auto progress_now = [&](const Coordinator& c) {
    SweepProgress& p = tally.progress();
    p.running = c.stats().active_leases;
    p.draining = c.draining();
    p.elapsed = std::chrono::duration_cast<std::chrono::seconds>(SteadyClock::now() - started);
    if (deadline) {
      p.time_left = std::max(
          std::chrono::seconds(0),
          std::chrono::duration_cast<std::chrono::seconds>(*deadline - SteadyClock::now()));
    }
    return p;
  };
  Coordinator* coordinator_ptr = nullptr;
  co.on_trial_finished = [&](const FrozenTrial& t) {
    tally.add(t);
    if (std::optional<std::string> stop = failures.add(t); stop && result.stop_reason.empty()) {
      result.stop_reason = *stop;  // the loop below stops the sweep
    }
    if (options.on_trial_finished && coordinator_ptr != nullptr) {
      options.on_trial_finished(t, progress_now(*coordinator_ptr));
    }
  };
  Coordinator coordinator(study, co);
  coordinator_ptr = &coordinator;

  std::optional<LocalExecutor> local_executor;
  if (sweep.local_executors > 0) {
    local_executor.emplace(LocalExecutorOptions{.coordinator = coordinator.endpoint(),
                                                .curve_keys = co.security.curve_keys,
                                                .slots = sweep.local_executors,
                                                .prefetch = sweep.local_prefetch,
                                                .gpus = sweep.local_gpus,
                                                .log_dir = result.log_dir,
                                                .log = log});
  }
  // Declared after the coordinator: its jobs are cancelled before the coordinator goes.
  std::optional<SlurmLauncher> slurm;
  if (sweep.slurm) {
    slurm.emplace(
        SlurmLauncherOptions{.slurm = *sweep.slurm,
                             .connect_endpoint = launcher_connect_endpoint(
                                 sweep.slurm->endpoint, coordinator.endpoint(), "executors.slurm"),
                             .coordinator_public_key = co.security.curve_keys->public_key,
                             .executor_keys = *cluster_keys,
                             .work_dir = slurm_work_dir(sweep.storage_path, study.name()),
                             .name = study.name(),
                             .log = options.notice ? options.notice : log});
  }
  // Likewise: its executors are stopped before the coordinator goes.
  std::optional<RayLauncher> ray;
  if (sweep.ray) {
    ray.emplace(RayLauncherOptions{
        .ray = *sweep.ray,
        .connect_endpoint =
            launcher_connect_endpoint(sweep.ray->endpoint, coordinator.endpoint(), "executors.ray"),
        .coordinator_public_key = co.security.curve_keys->public_key,
        .executor_keys = *cluster_keys,
        .name = study.name(),
        .status_dir = ray_status_dir(sweep.storage_path, study.name()),
        .log = options.notice ? options.notice : log});
  }
  auto local_executor_failed = [&] {
    return local_executor ? local_executor->failure() : std::string();
  };

  // Gives up the running trials (stored FAIL and enqueued where the storage takes it); returns
  // how many were stored so; those it could not store are counted in result.not_stopped.
  auto stop_running = [&](const std::string& why, bool tell_executors) {
    const StoppedTrials stopped = tuner::stop_running(coordinator, why,
                                                      tell_executors && !options.endpoint.empty()
                                                          ? std::optional(co.heartbeat_interval)
                                                          : std::nullopt);
    result.not_stopped += stopped.not_stored;
    return stopped.stored;
  };

  SteadyClock::time_point next_progress = SteadyClock::now();
  while (!coordinator.done()) {
    // The file deleted or replaced, writes that keep failing, or a stop asked while they fail
    // (sweep/storage_watch.h); a replaced file's open copy is saved after the loop.
    const bool stop_asked = options.drain.stop_requested() || options.abort.stop_requested();
    if (std::optional<StorageStop> stop = storage_stop(coordinator, *storage, stop_asked)) {
      const bool replaced = stop->kind == StorageStop::Kind::kFileReplaced;
      stop_running(replaced ? "the study database was deleted or replaced"
                            : "the sweep stopped: its storage refuses writes",
                   true);
      result.end = replaced ? SweepEnd::kFileReplaced : SweepEnd::kStorageFailed;
      result.stop_reason = stop->reason;
      break;
    }
    if (const std::string failed = local_executor_failed(); !failed.empty()) {
      coordinator.abandon("the local executor failed");
      throw Error(ErrorCode::kUnavailable, "the sweep's local executor failed: " + failed +
                                               "; finished trials are stored, resume with "
                                               "'tuner resume'");
    }
    if (options.abort.stop_requested()) {
      stop_running("the sweep was stopped", false);
      result.end = SweepEnd::kAborted;
      break;
    }
    if (!result.stop_reason.empty()) {
      // Too many failures: what still runs would most likely fail the same way.
      stop_running("the sweep stopped on its failures", true);
      result.end = SweepEnd::kFailures;
      break;
    }
    if (!coordinator.draining()) {
      if (options.drain.stop_requested()) {
        coordinator.drain();
        result.end = SweepEnd::kDrained;
      } else if (deadline && SteadyClock::now() >= *deadline) {
        coordinator.drain();
        result.end = SweepEnd::kTimeUp;
      }
    }
    // The time budget is the sweep's wall time: what still runs a grace after it is stopped.
    if (deadline && SteadyClock::now() >= *deadline + time_up_grace(*sweep.budget.time)) {
      result.stopped_at_time_up = stop_running("the sweep's time budget ran out", true);
      if (result.end == SweepEnd::kBudgetSpent) result.end = SweepEnd::kTimeUp;
      break;
    }
    coordinator.poll_once(std::chrono::milliseconds(100));
    if (slurm) {
      try {
        slurm->tick(launch_queue_state(coordinator, opened, local_executor.has_value()));
      } catch (const Error&) {
        coordinator.abandon("the sweep's Slurm executors failed");
        throw;
      }
    }
    if (ray) {
      try {
        ray->tick(launch_queue_state(coordinator, opened, local_executor.has_value()));
      } catch (const Error&) {
        coordinator.abandon("the sweep's Ray executors failed");
        throw;
      }
    }
    if (options.on_progress && SteadyClock::now() >= next_progress) {
      options.on_progress(progress_now(coordinator));
      next_progress += std::chrono::seconds(1);
    }
  }
  local_executor.reset();
  slurm.reset();
  ray.reset();
  // An end reached while writes fail (the time budget, a drain) is the storage's failure: what
  // ran meanwhile is not stored.
  if (coordinator.storage_failing() && result.end != SweepEnd::kStorageFailed &&
      result.end != SweepEnd::kFileReplaced) {
    result.end = SweepEnd::kStorageFailed;
    result.stop_reason = "the study's writes fail: " + coordinator.last_storage_error();
  }
  if (result.end == SweepEnd::kFileReplaced) {
    // This process still holds the file it opened: its copy keeps everything stored.
    result.recovered_path = save_open_copy(*storage, result.stop_reason);
  }
  // The budget's last trial may be the one that reached the limit.
  if (!result.stop_reason.empty() && result.end == SweepEnd::kBudgetSpent) {
    result.end = SweepEnd::kFailures;
  }
  result.progress = progress_now(coordinator);
  if (options.on_progress) options.on_progress(result.progress);
  const std::optional<std::string> failure = coordinator.failure();
  const bool failed_end = result.end == SweepEnd::kFailures ||
                          result.end == SweepEnd::kStorageFailed ||
                          result.end == SweepEnd::kFileReplaced;
  tracking.finish(failure || failed_end ? tracking::RunStatus::kFailed
                  : result.end == SweepEnd::kAborted || result.end == SweepEnd::kDrained
                      ? tracking::RunStatus::kKilled
                      : tracking::RunStatus::kFinished);
  if (failure) {
    // Its asks kept failing: the study stopped on its own, an error and not a spent budget.
    throw Error(ErrorCode::kAborted,
                "sweep '" + study.name() + "': " + *failure +
                    "; the study stopped (each failed attempt is stored as a FAIL trial with "
                    "the reason: tuner trials --study " +
                    study.name() + " --storage " + sweep.storage_path + ")");
  }
  return result;
}

SweepFile stored_sweep(const std::string& study_name, const std::string& storage_path) {
  SqliteStorageOptions read_only;
  read_only.read_only = true;
  SqliteStorage storage(storage_path, read_only);
  std::optional<StudyRecord> study = storage.find_study(study_name);
  if (!study) {
    std::string names;
    for (const StudyRecord& s : storage.list_studies())
      names += (names.empty() ? "" : ", ") + s.name;
    throw Error(ErrorCode::kNotFound, "no study '" + study_name + "' in " + storage_path +
                                          " (its studies: " + (names.empty() ? "none" : names) +
                                          ")");
  }
  auto it = study->system_attrs.find(kSweepAttr);
  if (it == study->system_attrs.end()) {
    throw Error(ErrorCode::kNotFound, "study '" + study_name + "' in " + storage_path +
                                          " was not made by a sweep file (no '" + kSweepAttr +
                                          "' attribute): run it with the API that made it");
  }
  // A JSON string holding the JSON text {"path": ..., "file": ...} (see run_sweep).
  nlohmann::json stored;
  try {
    const std::string text = nlohmann::json::parse(it->second).get<std::string>();
    check_json_depth(text, "study '" + study_name + "': its '" + kSweepAttr + "' attribute",
                     ErrorCode::kDataLoss);
    stored = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
  }
  if (!stored.is_object() || !stored.contains("path") || !stored.contains("file")) {
    throw Error(ErrorCode::kDataLoss, "study '" + study_name + "' in " + storage_path + ": its '" +
                                          kSweepAttr + "' attribute is not a sweep");
  }
  return parse_sweep_file(stored["file"].dump(), stored["path"].get<std::string>());
}

}  // namespace tuner
