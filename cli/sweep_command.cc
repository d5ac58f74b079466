// tuner sweep FILE and tuner resume: run a study from its sweep file, with a live progress line
// on a terminal (log lines otherwise), a graceful first Ctrl-C and an immediate second one.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "cli/command.h"
#include "cli/coordinator_security.h"
#include "cli/stop_signals.h"
#include "cli/study_view.h"
#include "executor/trial_job.h"
#include "search/pareto.h"
#include "storage/sqlite_storage.h"
#include "sweep/model_export.h"
#include "sweep/serve.h"
#include "sweep/sweep_runner.h"
#include "sweep/sweep_tracking.h"
#include "sweep/trial_logs.h"
#include "tracking/http_transport.h"
#include "trials/constraints.h"
#include "trials/error.h"
#include "trials/param_value.h"
#include "trials/system_attrs.h"
#include "trials/trial_origin.h"
#include "tuner/study.h"

namespace tuner::cli {
namespace {

// The flags that `sweep` and `resume` share.
constexpr Flag kExecutorsFlag = {"--executors", "N",
                                 "local executor slots (0: only executors that connect)"};
constexpr Flag kEndpointFlag = {"--endpoint", "ENDPOINT",
                                "where other executors connect, e.g. tcp://0.0.0.0:5555"};
constexpr Flag kTrialsFlag = {"--trials", "N", "the trial budget (default: the sweep file's)"};
constexpr Flag kRegistryFlag = {"--registry", "DIR",
                                "where the best model goes (the file's \"export\" section)"};
constexpr Flag kTrackingUriFlag = {"--tracking-uri", "URI",
                                   "log the study to that MLflow server as it runs"};
constexpr Flag kVerboseFlag = {"--verbose", "", "log what the coordinator does"};

constexpr Flag kSweepFlags[] = {
    {"--study", "NAME", "the study's name (default: the sweep file's)"},
    {"--storage", "PATH", "the study's SQLite file (default: the sweep file's)"},
    kExecutorsFlag,
    kTrialsFlag,
    kRegistryFlag,
    kEndpointFlag,
    kCoordinatorKeyFlag,
    kExecutorKeysFlag,
    kInsecureFlag,
    kVerboseFlag,
    {"--submit", "", "hand the study to the tuner serve on its storage"},
    kBusyTimeoutFlag,
    kTrackingUriFlag,
};

constexpr Flag kResumeFlags[] = {
    {"--study", "NAME", "the study to continue", kRequired},
    {"--storage", "PATH", "the study's SQLite file", kRequired},
    {"--rerun-failed", "", "run every FAIL trial again with its params"},
    kExecutorsFlag,
    kTrialsFlag,
    kRegistryFlag,
    kEndpointFlag,
    kCoordinatorKeyFlag,
    kExecutorKeysFlag,
    kInsecureFlag,
    kVerboseFlag,
    kBusyTimeoutFlag,
    kTrackingUriFlag,
};

std::string duration_text(std::chrono::seconds s) { return format_duration(s); }

std::string value_text(double v) { return number_text(v, 6); }

std::string counts_text(const SweepProgress& p) {
  const int64_t done = p.complete + p.pruned + p.failed;
  std::string text = std::to_string(done);
  if (p.trial_budget) text += "/" + std::to_string(*p.trial_budget);
  text += " done (" + std::to_string(p.complete) + " complete" +
          (p.infeasible > 0 ? " of which " + std::to_string(p.infeasible) + " infeasible" : "") +
          ", " + std::to_string(p.pruned) + " pruned, " + std::to_string(p.failed) + " failed" +
          (p.reruns > 0 ? "; " + std::to_string(p.reruns) + " lost trial" +
                              (p.reruns == 1 ? "" : "s") + " re-run"
                        : "") +
          "), " + std::to_string(p.running) + " running" +
          (p.awaiting_rerun > 0 ? ", " + std::to_string(p.awaiting_rerun) + " lost and to run again"
                                : "");
  return text;
}

std::string best_text(const SweepProgress& p, const std::string& metric) {
  if (!p.best_value) {
    return p.infeasible > 0 ? "no feasible trial yet" : "no complete trial yet";
  }
  return "best " + metric + " " + value_text(*p.best_value) + " (trial " +
         std::to_string(*p.best_number) + ")";
}

// What is left of the time budget, or the time the rest of the trial budget takes at this run's
// pace so far, whichever is shorter; nullopt before a trial has finished.
std::optional<std::chrono::seconds> time_left(const SweepProgress& p) {
  std::optional<std::chrono::seconds> left = p.time_left;
  const int64_t done = p.complete + p.pruned + p.failed;
  const int64_t done_now = done - p.done_before;
  if (p.draining) return std::nullopt;  // the running trials decide
  if (p.trial_budget && done_now > 0) {
    const int64_t to_go = *p.trial_budget - done;
    if (to_go <= 0) return std::nullopt;
    const auto pace = std::chrono::seconds(p.elapsed.count() * to_go / done_now);
    if (!left || pace < *left) left = pace;
  }
  return left;
}

// The lines of a FAIL's log tail shown under it on the console.
constexpr size_t kFailLines = 5;

// The progress line on a terminal, log lines elsewhere (CI, pipes).
class ProgressPrinter {
 public:
  // `log_dir`: where the trials' logs are (sweep/trial_logs.h).
  ProgressPrinter(std::string study, std::string metric, std::string log_dir)
      : study_(std::move(study)),
        metric_(std::move(metric)),
        log_dir_(std::move(log_dir)),
        tty_(::isatty(STDERR_FILENO)) {}

  void progress(const SweepProgress& p) {
    if (!tty_) return;
    std::string line = "[" + study_ + "] " + counts_text(p) + ", " + best_text(p, metric_) + ", " +
                       duration_text(p.elapsed);
    if (const auto left = time_left(p)) line += ", " + duration_text(*left) + " left";
    if (p.draining) line += ", stopping: waiting for the running trials (Ctrl-C again: stop now)";
    std::cerr << "\r" << line << "\x1b[K" << std::flush;
  }

  void trial(const FrozenTrial& t, const SweepProgress& p) {
    if (tty_) std::cerr << "\r\x1b[K";
    std::string line = "[" + study_ + "] trial " + std::to_string(t.number) + " " +
                       std::string(to_string(t.state));
    if (!t.values.empty()) line += ": " + metric_ + " " + value_text(t.values[0]);
    // Where its params came from, and whether it violates a constraint.
    std::string notes = sampler_of(t);
    if (t.state != TrialState::kFail && !is_feasible(t)) {
      notes += (notes.empty() ? "" : "; ") + std::string("infeasible");
    }
    if (!notes.empty() && t.state != TrialState::kFail) line += " (" + notes + ")";
    if (const std::string reason = fail_reason(t);
        t.state == TrialState::kFail && !reason.empty()) {
      line += ": " + reason;
    }
    line += "; " + counts_text(p) + "; " + best_text(p, metric_);
    if (const auto left = time_left(p)) line += "; " + duration_text(*left) + " left";
    std::cerr << line << "\n";
    if (t.state == TrialState::kFail) explain_failure(t);
    progress(p);
  }

  void finish() {
    if (tty_) std::cerr << "\r\x1b[K" << std::flush;
  }

 private:
  // Under a FAIL: the last lines its program wrote, and where its whole log is.
  void explain_failure(const FrozenTrial& t) {
    for (const std::string& line : program_lines(log_tail(t), kFailLines)) {
      std::cerr << "    | " << line << "\n";
    }
    const std::vector<TrialLogFile> logs = trial_log_files(log_dir_, t.number);
    if (!logs.empty()) std::cerr << "    log: " << logs.back().path.string() << "\n";
  }

  std::string study_, metric_, log_dir_;
  bool tty_;
};

// Read-only: a file that is gone is not created again.
Params trial_params(const SweepResult& result, int number) {
  SqliteStorage storage(result.storage_path, {.read_only = true});
  const std::optional<StudyRecord> study = storage.find_study(result.study_name);
  if (!study) return {};
  const std::vector<FrozenTrial> from = storage.get_trials(study->study_id, {.min_number = number});
  return from.empty() ? Params{} : from.front().params;
}

// The Pareto front of a sweep of several objectives: "Pareto front: 3 of 12 COMPLETE trials (2,
// 5, 9)".
std::string front_text(const SweepResult& result, const std::vector<StudyDirection>& directions) {
  SqliteStorage storage(result.storage_path, {.read_only = true});
  const std::optional<StudyRecord> study = storage.find_study(result.study_name);
  if (!study) return {};
  const std::vector<FrozenTrial> complete =
      storage.get_trials(study->study_id, {.states = std::vector{TrialState::kComplete}});
  const std::vector<FrozenTrial> front = pareto_front_trials(complete, directions);
  std::string numbers;
  for (const FrozenTrial& t : front) {
    numbers += (numbers.empty() ? "" : ", ") + std::to_string(t.number);
  }
  if (front.empty()) return "Pareto front: none yet (no feasible COMPLETE trial)";
  return "Pareto front: " + std::to_string(front.size()) + " of " +
         std::to_string(complete.size()) + " COMPLETE trials (" + numbers +
         "; `tuner best --study " + result.study_name + " --storage " + result.storage_path +
         "` shows them)";
}

std::string params_text(const Params& params) {
  std::string text;
  for (const auto& [name, value] : params) {
    text += (text.empty() ? "" : ", ") + name + "=" + to_string(value);
  }
  return "{" + text + "}";
}

int finish(const SweepFile& sweep, const SweepResult& result);

// The outcomes of this run's trials: a run whose every trial failed (a missing program, a
// missing working directory) did not do what was asked, and says so in its exit code.
class RunOutcomes {
 public:
  void add(const FrozenTrial& t) {
    if (t.state == TrialState::kComplete || t.state == TrialState::kPruned) ++succeeded_;
    if (t.state != TrialState::kFail) return;
    ++failed_;
    const std::string reason = fail_reason(t);
    last_failure_ = "trial " + std::to_string(t.number) + (reason.empty() ? "" : ": " + reason);
  }
  // Throws when trials ran and every one failed.
  void check(const SweepResult& result) const {
    if (failed_ == 0 || succeeded_ > 0 || result.end == SweepEnd::kAborted ||
        result.end == SweepEnd::kFailures || result.end == SweepEnd::kStorageFailed ||
        result.end == SweepEnd::kFileReplaced) {
      return;
    }
    throw Error(ErrorCode::kInvalidArgument,
                "sweep '" + result.study_name + "': every trial of this run failed (" +
                    std::to_string(failed_) + "); the last, " + last_failure_);
  }

 private:
  int64_t succeeded_ = 0, failed_ = 0;
  std::string last_failure_;
};

int run(const SweepFile& sweep, const Flags& flags) {
  StopSignals signals;
  // Said at once: the running trials may take long to end.
  const std::stop_callback say_stopping(signals.first(), [&sweep] {
    std::cerr << ("[" + sweep.name +
                  "] stopping: no new trial starts; the running ones finish and are stored "
                  "(Ctrl-C again: stop them now, to run first on resume)\n");
  });
  ProgressPrinter printer(sweep.name, sweep.objective_metric(),
                          default_log_dir(sweep.storage_path));
  RunOutcomes outcomes;
  SweepRunOptions options;
  options.endpoint = flags.get("--endpoint");
  options.security = coordinator_security(flags);
  options.busy_timeout = flags.busy_timeout();
  options.drain = signals.first();
  options.abort = signals.second();
  options.on_progress = [&](const SweepProgress& p) { printer.progress(p); };
  options.on_trial_finished = [&](const FrozenTrial& t, const SweepProgress& p) {
    outcomes.add(t);
    printer.trial(t, p);
  };
  if (flags.has("--verbose")) {
    options.log = [&](const std::string& line) {
      printer.finish();
      std::cerr << line << "\n";
    };
  }
  std::mutex warn_mutex;  // tracking warns from its own thread
  options.warn = [&](const std::string& line) {
    std::lock_guard lock(warn_mutex);
    printer.finish();
    std::cerr << "[" << sweep.name << "] warning: " << line << "\n";
  };
  options.notice = [&](const std::string& line) {
    std::cerr << "[" << sweep.name << "] " << line << "\n";
  };
  std::cerr << "[" << sweep.name << "] study in " << sweep.storage_path << ", "
            << sweep.local_executors << " local executor slot"
            << (sweep.local_executors == 1 ? "" : "s") << "\n";
  if (const int nodes = parse_trial_job(sweep.job_json)->needs().nodes;
      nodes > 1 && !options.endpoint.empty()) {
    std::cerr << "[" << sweep.name << "] each trial runs on " << nodes
              << " executors at once: it starts when " << nodes << " executors connected to "
              << options.endpoint << " have a free slot\n";
  }
  const SweepResult result = run_sweep(sweep, options);
  printer.finish();
  const int code = finish(sweep, result);
  outcomes.check(result);
  return code;
}

// What every end of a sweep prints: the counts, the best trial, the export, how to go on.
int finish(const SweepFile& sweep, const SweepResult& result) {
  const SweepProgress& p = result.progress;
  std::cout << "sweep '" << result.study_name << "': " << counts_text(p) << " in "
            << duration_text(p.elapsed) << "\n";
  const std::string resume =
      "tuner resume --study " + result.study_name + " --storage " + result.storage_path;
  if (result.end == SweepEnd::kFileReplaced) {
    // The path holds another file, or none: nothing more is read from it, or created there.
    std::cerr << "sweep '" << result.study_name << "' stopped: " << result.stop_reason << "\n";
    if (!result.recovered_path.empty()) {
      std::cerr << "the study as this sweep held it (every trial finished so far; the running "
                   "ones stopped, to run first on resume) is saved in "
                << result.recovered_path << "; to go on: tuner resume --study " << result.study_name
                << " --storage " << result.recovered_path << " (or move it back to "
                << result.storage_path << " first)\n";
    }
    return kExitInvalidInput;
  }
  if (result.end == SweepEnd::kStorageFailed) {
    std::cerr << "sweep '" << result.study_name
              << "' stopped: its storage refuses writes: " << result.stop_reason
              << "\nstored: the trials counted above as done (everything committed before the "
                 "failure is kept)";
    if (result.not_stopped > 0) {
      std::cerr << "; not stored: the outcomes of " << result.not_stopped
                << " trial(s) that were running or had just finished (they stay RUNNING in "
                   "the file and run again on resume)";
    }
    std::cerr << "\nonce the cause is fixed (free disk space, make the file writable, end what "
                 "holds its lock), go on with: "
              << resume << "\n";
    return kExitInvalidInput;
  }
  if (sweep.objectives.size() > 1) {
    std::cout << front_text(result, make_study_options(sweep).directions) << "\n";
  } else if (p.best_number) {
    std::cout << best_text(p, sweep.objective_metric()) << " with "
              << params_text(trial_params(result, *p.best_number)) << "\n";
  }
  if (result.end != SweepEnd::kAborted && result.end != SweepEnd::kFailures &&
      sweep.export_config) {
    // The best trial's model goes to the registry the sweep file names (docs/registry.md).
    if (const auto e = export_best_of_sweep(sweep)) {
      std::cout << "exported trial " << e->version.lineage.trial << " as " << e->model_name << "/"
                << e->version.version << (e->alias_summary.empty() ? "" : " @" + e->alias_summary)
                << " at " << e->dir.string() << "\n";
      if (const auto& m = e->mlflow) {
        std::cout << "registered in MLflow at " << m->tracking_uri << " as " << m->model_name
                  << " version " << m->version;
        for (size_t i = 0; i < m->aliases.size(); ++i)
          std::cout << (i ? ", @" : " @") << m->aliases[i];
        std::cout << " (run " << m->run_id << ")\n";
      }
      // MLflow's registry is a mirror: its failure leaves the sweep's outcome as it is.
      if (!e->mlflow_error.empty()) {
        std::cerr << "[" << sweep.name << "] warning: MLflow's registry: " << e->mlflow_error
                  << "; to register the version later: tuner sync-mlflow --study "
                  << result.study_name << " --storage " << result.storage_path << " --tracking-uri "
                  << sweep.export_mlflow_uri() << " --registry "
                  << sweep.export_config->registry_path << "\n";
      }
    }
  }
  switch (result.end) {
    case SweepEnd::kBudgetSpent:
      return kExitOk;
    case SweepEnd::kTimeUp:
      std::cout << "the time budget ran out"
                << (result.stopped_at_time_up > 0
                        ? " (" + std::to_string(result.stopped_at_time_up) +
                              " running trial(s) stopped: FAIL, and run first on resume)"
                        : std::string())
                << (result.not_stopped > 0
                        ? "; " + std::to_string(result.not_stopped) +
                              " running trial(s) could not be stored as stopped (still RUNNING; "
                              "run again on resume)"
                        : std::string())
                << "; to go on: " << resume << "\n";
      return result.not_stopped > 0 ? kExitInvalidInput : kExitOk;
    case SweepEnd::kDrained:
    case SweepEnd::kAborted:
      std::cout << "stopped; everything finished is stored. To go on: " << resume << "\n";
      return kExitInterrupted;
    case SweepEnd::kStorageFailed:
    case SweepEnd::kFileReplaced:
      return kExitInvalidInput;  // said above
    case SweepEnd::kFailures:
      // On stderr with the other errors; the trials' own lines above show their logs.
      std::cerr << "sweep '" << result.study_name << "' stopped: " << result.stop_reason
                << "\nthe trials' logs: tuner logs --study " << result.study_name << " --storage "
                << result.storage_path << " --trial N (or " << result.log_dir
                << "/); once fixed, go on with: " << resume << "\n";
      return kExitInvalidInput;
  }
  return kExitOk;
}

// The study's counts and best trial, from storage.
SweepProgress stored_progress(const SweepFile& sweep, const std::vector<FrozenTrial>& trials) {
  SweepProgress p;
  p.trial_budget = sweep.budget.trials;
  for (const FrozenTrial& t : trials) {
    count_trial(p, t, sweep.direction());
    if (t.state == TrialState::kRunning) ++p.running;
  }
  return p;
}

// --submit: the study goes to the tuner serve that runs on its storage; this command follows it
// until it is done. Ctrl-C leaves it running there.
int submit(const SweepFile& sweep) {
  const std::optional<RunningServe> serve = running_serve(sweep.storage_path);
  if (!serve) {
    throw Error(ErrorCode::kFailedPrecondition, "--submit: no tuner serve runs on " +
                                                    sweep.storage_path +
                                                    " (start one: tuner serve --storage " +
                                                    sweep.storage_path + " --endpoint ENDPOINT)");
  }
  StopSignals signals;
  const OpenedSweep opened = open_sweep(sweep, std::make_shared<SqliteStorage>(sweep.storage_path));
  const std::string name = opened.study.name();
  if (!opened.study.space_change().empty()) {
    std::cerr << "[" << name << "] space changed: " << opened.study.space_change() << "\n";
  }
  const bool taken =
      request_serve_state(sweep.storage_path, name, ServeState::kActive, std::chrono::seconds(10));
  std::cerr << "[" << name << "] submitted to tuner serve (pid " << serve->pid
            << "; executors connect to " << serve->endpoint << ")"
            << (taken ? "" : "; it has not taken the study up yet") << "\n";
  ProgressPrinter printer(name, sweep.objective_metric(), default_log_dir(sweep.storage_path));
  // The sweep file's tracking runs here, in the command that follows the study: tuner serve
  // does not track (a study nobody follows is caught up by tuner sync-mlflow).
  std::mutex warn_mutex;
  SweepTracking tracking(sweep, [&](const std::string& line) {
    std::lock_guard lock(warn_mutex);
    printer.finish();
    std::cerr << "[" << name << "] warning: " << line << "\n";
  });
  const auto started = std::chrono::steady_clock::now();
  std::set<int> shown;
  SqliteStorage storage(sweep.storage_path, {.read_only = true});
  const int64_t study_id = storage.find_study(name)->study_id;
  while (true) {
    const std::vector<FrozenTrial> trials = storage.get_trials(study_id);
    SweepProgress p = stored_progress(sweep, trials);
    p.elapsed = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                                 started);
    for (const FrozenTrial& t : trials) {
      if (is_finished(t.state) && shown.insert(t.number).second) printer.trial(t, p);
    }
    printer.progress(p);
    const std::optional<StudyRecord> record = storage.find_study(name);
    if (record && serve_state(*record) == ServeState::kDone) {
      printer.finish();
      const std::string stop_reason = serve_stop_reason(*record);
      tracking.finish(stop_reason.empty() ? tracking::RunStatus::kFinished
                                          : tracking::RunStatus::kFailed);
      return finish(sweep, SweepResult{.end = stop_reason.empty() ? SweepEnd::kBudgetSpent
                                                                  : SweepEnd::kFailures,
                                       .progress = p,
                                       .study_name = name,
                                       .storage_path = sweep.storage_path,
                                       .stop_reason = stop_reason,
                                       .log_dir = default_log_dir(sweep.storage_path)});
    }
    if (signals.first().stop_requested()) {
      tracking.finish(tracking::RunStatus::kRunning);  // it goes on in tuner serve
      printer.finish();
      std::cout << "detached: the study goes on in tuner serve (pid " << serve->pid
                << "); to stop it: tuner stop --study " << name << " --storage "
                << sweep.storage_path << "\n";
      return kExitInterrupted;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

void apply_overrides(SweepFile& sweep, const Flags& flags) {
  if (flags.has("--registry")) {
    if (!sweep.export_config)
      throw UsageError("--registry: the sweep file has no \"export\" section");
    sweep.export_config->registry_path = flags.get("--registry");
  }
  if (flags.has("--tracking-uri")) {
    // MLflow tracking on (or to another server), and the export's MLflow registry with it when
    // the file gives that none of its own.
    const std::string uri = flags.get("--tracking-uri");
    try {
      tracking::parse_http_url(uri);
    } catch (const Error& e) {
      throw UsageError(std::string("--tracking-uri: ") + e.what());
    }
    if (!sweep.tracking) sweep.tracking.emplace();
    sweep.tracking->mlflow_uri = uri;
  }
  if (flags.has("--executors")) sweep.local_executors = flags.get_int("--executors", 1);
  if (sweep.local_executors < 0) throw UsageError("--executors must be >= 0");
  if (flags.has("--trials")) sweep.budget.trials = flags.get_int("--trials", 0);
}

}  // namespace

int run_sweep_command(const std::vector<std::string>& args) {
  Flags flags(args, kSweepFlags, "sweep", Positional::kAccepted);
  const std::vector<std::string>& files = flags.positional();
  if (files.size() != 1) throw UsageError("usage: tuner sweep FILE [flags]; see 'tuner help'");
  SweepFile sweep = load_sweep_file(files[0]);
  if (flags.has("--study")) sweep.name = flags.get("--study");
  if (flags.has("--storage")) sweep.storage_path = flags.get("--storage");
  apply_overrides(sweep, flags);
  if (flags.has("--submit")) {
    for (const char* flag : {"--executors", "--endpoint", "--key", "--executor-keys"}) {
      if (flags.has(flag)) {
        throw UsageError(std::string(flag) + " belongs to tuner serve, not to a --submit");
      }
    }
    return submit(sweep);
  }
  return run(sweep, flags);
}

int run_resume_command(const std::vector<std::string>& args) {
  Flags flags(args, kResumeFlags, "resume");
  const std::string study = flags.require("--study");
  const std::string storage = flags.require("--storage");
  open_read_only(storage);  // "no study database at ..." as `tuner status` says, not SQLite's error
  SweepFile sweep = stored_sweep(study, storage);
  sweep.name = study;
  sweep.storage_path = storage;
  apply_overrides(sweep, flags);
  if (flags.has("--rerun-failed")) {
    // Each FAIL trial runs again with its params (a new trial; the failed one stays as it was),
    // on top of the trial budget.
    StudyOptions open = make_study_options(sweep);
    open.storage = std::make_shared<SqliteStorage>(storage);
    Study s = Study::load(open);
    int reruns = 0;
    for (const FrozenTrial& t : s.trials({.states = std::vector{TrialState::kFail}})) {
      s.enqueue_trial(t.params);
      ++reruns;
    }
    if (sweep.budget.trials) *sweep.budget.trials += reruns;
    std::cerr << "[" << study << "] " << reruns << " failed trial" << (reruns == 1 ? "" : "s")
              << " enqueued to run again\n";
  }
  return run(sweep, flags);
}

extern const Command kSweepCommand = {
    .name = "sweep",
    .synopsis =
        "sweep FILE [--study NAME] [--storage PATH] [--executors N] [--trials N]\n"
        "      [--registry DIR] [--endpoint ENDPOINT] [--key FILE --executor-keys PATH]\n"
        "      [--insecure] [--verbose] [--submit] [--busy-timeout MS] [--tracking-uri URI]",
    .description =
        "run the study a sweep file describes (docs/sweep_file.md);\n"
        "continues the study when it exists. An ENDPOINT other\n"
        "hosts can reach needs CURVE (--key, --executor-keys) or\n"
        "--insecure. --submit: follow it on tuner serve (Ctrl-C\n"
        "leaves it running there). Ctrl-C: finish the running\n"
        "trials and stop; twice: stop now. With an \"export\"\n"
        "section, the best model goes to the registry\n"
        "(docs/registry.md); MLflow tracking: docs/tracking.md",
    .flags = kSweepFlags,
    .run = &run_sweep_command,
};

extern const Command kResumeCommand = {
    .name = "resume",
    .synopsis =
        "resume --study NAME --storage PATH [--rerun-failed] [--executors N] [--trials N]\n"
        "       [--registry DIR] [--endpoint ENDPOINT] [--key FILE --executor-keys PATH]\n"
        "       [--insecure] [--verbose] [--busy-timeout MS] [--tracking-uri URI]",
    .description = "continue a sweep's study from its SQLite file alone",
    .flags = kResumeFlags,
    .run = &run_resume_command,
};

}  // namespace tuner::cli
