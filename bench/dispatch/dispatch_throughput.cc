// Dispatch throughput and overhead: how fast the coordinator farms trials out to
// executors over ZeroMQ and commits their outcomes, with nothing else in the way.
//
// One Study (random sampler, the space x, y in [-10, 10]) on a SqliteStorage file, one
// Coordinator on ipc://, and E executors, each a separate process (this binary in its
// "executor" mode: a real ExecutorService on a DEALER) with S slots. A trial's work is chosen by
// --runner:
//   noop     in-process (ExecutorOptions::job_runner): returns loss = x^2 + y^2 at once;
//   sleep    in-process: sleeps --sleep-ms (waking early on the stop token), then returns it;
//   command  a real command job: `sh -c 'sleep SECONDS; echo {"loss": ...}'`, a process per trial.
//
// Figures (one JSON line; --table adds a human summary on stderr):
//   seconds             from the executors being released (their processes started, their
//                       services built, not yet connected) until every trial is committed;
//   executor_startup_s  spawning the executor processes until all are ready (not in `seconds`);
//   trials_per_s        trials / seconds;
//   first_ask_to_last_commit_s  the first trial's datetime_start to the last one's
//                       datetime_complete, as stored (start-up excluded);
//   latency_*_ms        ask-to-commit latency of each trial, datetime_complete - datetime_start
//                       as stored (the same definition as Optuna's trials in the peer): from the
//                       coordinator creating the trial (Study::ask) to its outcome being written;
//   ideal_s, overhead_pct   for sleeping runners: trials x sleep / (E x S) (at least one
//                       sleep), and how far the makespan (`seconds`) is above it
//                       (ideal_waves_s: ceil(trials / (E x S)) x sleep, the least that whole
//                       waves of trials can take).
// With --start-times the runners also return the wall time they started at ("started_unix_us",
// stored as a user attribute: one more write per trial), and the latency is split into
// ask-to-start and start-to-commit.
//
//   dispatch_throughput [--runner noop|sleep|command] [--trials N] [--executors E] [--slots S]
//                       [--sleep-ms MS] [--work DIR] [--keep] [--start-times] [--table]
//                       [--verbose] [--experiment-trials-index] [--prefetch P]
// --verbose passes the coordinator's and the executors' log lines on to stderr.
// --experiment-trials-index adds an index on trials (study_id, number) to the new file before the
// run: an experiment that shows what Study::ask's reload of unfinished trials costs without it.
// --prefetch P: each executor takes P trials ahead, beyond its free slots (ExecutorOptions::
// prefetch), to start the moment a slot frees instead of a round trip to the coordinator later.
// Default 0. (P must not exceed --slots.)
//   dispatch_throughput executor ENDPOINT ID SLOTS RUNNER SLEEP_MS START_TIMES READY_FD GO_FD
//                       PREFETCH (internal: one executor process)
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "coordinator/coordinator.h"
#include "executor/executor_service.h"
#include "search/samplers/random_sampler.h"
#include "storage/sqlite/connection.h"
#include "storage/sqlite_storage.h"
#include "trials/error.h"
#include "tuner/study.h"

namespace {

using namespace tuner;
using std::chrono::milliseconds;
using Seconds = std::chrono::duration<double>;
using SteadyClock = std::chrono::steady_clock;

struct Flags {
  std::string runner = "noop";
  int trials = 20000;
  int executors = 4;
  int slots = 8;
  int sleep_ms = 100;
  std::string work;
  bool keep = false;
  bool start_times = false;
  bool table = false;
  bool verbose = false;
  bool trials_index = false;
  int prefetch = 0;
};

[[noreturn]] void usage(const std::string& problem) {
  std::cerr << "dispatch_throughput: " << problem << "\n"
            << "usage: dispatch_throughput [--runner noop|sleep|command] [--trials N] "
               "[--executors E] [--slots S] [--sleep-ms MS] [--work DIR] [--keep] "
               "[--start-times] [--table] [--verbose] [--experiment-trials-index] [--prefetch P]\n";
  std::exit(2);
}

int positive(const char* flag, const char* text) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || value < 1 || value > 100'000'000) {
    usage(std::string(flag) + " needs a positive integer, got '" + text + "'");
  }
  return static_cast<int>(value);
}

Flags parse_flags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--runner") {
      f.runner = value();
      if (f.runner != "noop" && f.runner != "sleep" && f.runner != "command") {
        usage("--runner must be noop, sleep or command, got '" + f.runner + "'");
      }
    } else if (a == "--trials") {
      f.trials = positive("--trials", value());
    } else if (a == "--executors") {
      f.executors = positive("--executors", value());
    } else if (a == "--slots") {
      f.slots = positive("--slots", value());
    } else if (a == "--sleep-ms") {
      f.sleep_ms = positive("--sleep-ms", value());
    } else if (a == "--work") {
      f.work = value();
    } else if (a == "--keep") {
      f.keep = true;
    } else if (a == "--start-times") {
      f.start_times = true;
    } else if (a == "--table") {
      f.table = true;
    } else if (a == "--verbose") {
      f.verbose = true;
    } else if (a == "--prefetch") {
      f.prefetch = std::atoi(value());
      if (f.prefetch < 0 || f.prefetch > f.slots) usage("--prefetch must be in [0, --slots]");
    } else if (a == "--experiment-trials-index") {
      f.trials_index = true;
    } else {
      usage("unknown argument '" + a + "'");
    }
  }
  return f;
}

int64_t unix_us(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

double objective(const Params& params) {
  const double x = as_double(params.at("x")), y = as_double(params.at("y"));
  return x * x + y * y;
}

// --- The executor process ----------------------------------------------------------------------

// The in-process trial of --runner noop (sleep = 0) or sleep.
JobRunner make_runner(milliseconds sleep, bool start_times) {
  return [sleep, start_times](const CommandTrial& trial, const ReportCallback&,
                              std::stop_token stop) {
    const auto started = std::chrono::system_clock::now();
    CommandOutcome outcome;
    if (sleep.count() > 0) {
      std::mutex mutex;
      std::condition_variable_any wake;  // never notified: only the stop token ends the wait early
      std::unique_lock lock(mutex);
      wake.wait_for(lock, stop, sleep, [] { return false; });
      if (stop.stop_requested()) outcome.stopped_by = JobDecision::kStop;
    }
    outcome.exit_code = 0;
    Metrics metrics{{"loss", objective(trial.params)}};
    if (start_times) metrics["started_unix_us"] = static_cast<double>(unix_us(started));
    outcome.final_metrics = std::move(metrics);
    return outcome;
  };
}

// The executor process: builds its ExecutorService (loading libraries, looking for GPUs), writes
// a byte to READY_FD, waits for a byte on GO_FD, and serves until SIGTERM.
int executor_main(int argc, char** argv) {
  if (argc != 11) {
    usage(
        "executor mode takes ENDPOINT ID SLOTS RUNNER SLEEP_MS START_TIMES READY_FD GO_FD "
        "PREFETCH");
  }
  // SIGTERM from the parent ends run(); it is taken by a thread of its own (sigwait), so the
  // stop request is not made from a signal handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::stop_source stop;
  std::thread([signals, stop]() mutable {
    int signal = 0;
    sigwait(&signals, &signal);
    stop.request_stop();
  }).detach();

  ExecutorOptions options;
  options.coordinator = argv[2];
  options.executor_id = argv[3];
  options.slots = positive("SLOTS", argv[4]);
  options.prefetch = std::atoi(argv[10]);
  options.gpus = std::vector<int>{};
  const std::string runner = argv[5];
  const milliseconds sleep(std::atoi(argv[6]));
  const bool start_times = std::strcmp(argv[7], "1") == 0;
  if (runner == "noop") {
    options.job_runner = make_runner(milliseconds(0), start_times);
  } else if (runner == "sleep") {
    options.job_runner = make_runner(sleep, start_times);
  }  // command: the job's own command runs
  options.log = [verbose = std::getenv("DISPATCH_VERBOSE") != nullptr](const std::string& line) {
    if (verbose) std::cerr << line << "\n";
  };
  try {
    ExecutorService service(options);
    const int ready_fd = std::atoi(argv[8]), go_fd = std::atoi(argv[9]);
    char byte = 1;
    if (::write(ready_fd, &byte, 1) != 1 || ::read(go_fd, &byte, 1) != 1) return 1;
    ::close(ready_fd);
    ::close(go_fd);
    service.run(stop.get_token());
  } catch (const std::exception& e) {
    std::cerr << "executor " << options.executor_id << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}

// --- The coordinator process -------------------------------------------------------------------

// Spawns this binary as an executor process; returns its pid.
pid_t spawn_executor(const std::string& self, const std::vector<std::string>& args) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(self.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(ErrorCode::kUnavailable, std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::execv(self.c_str(), argv.data());
    std::fprintf(stderr, "dispatch_throughput: cannot exec %s: %s\n", self.c_str(),
                 std::strerror(errno));
    ::_exit(127);
  }
  return pid;
}

std::string job_json(const Flags& f) {
  nlohmann::json job = {{"kind", "command"}, {"objective_metric", "loss"}};
  if (f.runner == "command") {
    // "{{" and "}}" are literal braces in an argv template; $1 is the trial's x.
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.3f", f.sleep_ms / 1000.0);
    job["argv"] = {"/bin/sh", "-c",
                   std::string("sleep ") + seconds + "; echo \"{{\\\"loss\\\": $1}}\"",
                   "sleep-trial", "{x}"};
  } else {
    // Never run: the executors' job_runner takes every trial.
    job["argv"] = {"in-process"};
  }
  return job.dump();
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

int coordinator_main(const Flags& f, const std::string& self) {
  namespace fs = std::filesystem;
  fs::path work;
  bool made_work = false;
  if (f.work.empty()) {
    std::string pattern = (fs::temp_directory_path() / "tuner-dispatch.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw Error(ErrorCode::kUnavailable,
                  "cannot create a work directory: " + std::string(std::strerror(errno)));
    }
    work = pattern;
    made_work = true;
  } else {
    work = f.work;
    fs::create_directories(work);
  }
  const fs::path db = work / ("dispatch-" + f.runner + ".db");
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db.string() + suffix);

  if (f.trials_index) {
    // An experiment, not tuner's schema: Study::ask() reloads the trials numbered from the first
    // unfinished one (SqliteStorage::get_trials with min_number), and with Optuna's indexes alone
    // that query visits every trial of the study; an index on (study_id, number) bounds it.
    SqliteStorage create_schema(db.string());
    sqlite::Connection(db.string())
        .exec("CREATE INDEX IF NOT EXISTS bench_trials_study_number ON trials (study_id, number)");
  }
  StudyOptions study_options;
  study_options.name = "dispatch";
  study_options.sampler = std::make_shared<RandomSampler>();
  study_options.seed = 1;
  study_options.storage = std::make_shared<SqliteStorage>(db.string());
  SearchSpace space;
  space.add_float("x", -10.0, 10.0);
  space.add_float("y", -10.0, 10.0);
  study_options.space = space;
  Study study = Study::create(study_options);

  struct Finished {
    int64_t ask_us, commit_us, started_us;
    TrialState state;
  };
  std::vector<Finished> finished;
  finished.reserve(static_cast<size_t>(f.trials));
  int64_t log_lines = 0;
  CoordinatorOptions options;
  options.endpoint = "ipc://" + (work / "coordinator.sock").string();
  options.job_json = job_json(f);
  options.n_trials = f.trials;
  options.log = [&](const std::string& line) {
    ++log_lines;
    if (f.verbose) std::cerr << line << "\n";
  };
  options.on_trial_finished = [&](const FrozenTrial& t) {
    Finished r{.ask_us = t.datetime_start ? unix_us(*t.datetime_start) : 0,
               .commit_us = t.datetime_complete ? unix_us(*t.datetime_complete) : 0,
               .started_us = 0,
               .state = t.state};
    if (auto it = t.user_attrs.find("started_unix_us"); it != t.user_attrs.end()) {
      r.started_us = static_cast<int64_t>(std::stod(it->second));
    }
    finished.push_back(r);
  };
  std::optional<Coordinator> coordinator;
  coordinator.emplace(study, options);

  // The executors start (exec, libraries, GPU inventory) before the clock does, and are then
  // released at once: the figures cover connecting, the protocol and the trials, not process
  // start-up (Optuna's peer likewise starts its clock after its imports).
  int ready[2], go[2];
  if (::pipe(ready) != 0 || ::pipe(go) != 0) {
    throw Error(ErrorCode::kUnavailable, std::string("pipe: ") + std::strerror(errno));
  }
  if (f.verbose) ::setenv("DISPATCH_VERBOSE", "1", 1);  // the executors log too
  std::vector<pid_t> children;
  const auto spawned = SteadyClock::now();
  for (int e = 0; e < f.executors; ++e) {
    children.push_back(spawn_executor(
        self,
        {"executor", coordinator->endpoint(), "bench-executor-" + std::to_string(e),
         std::to_string(f.slots), f.runner, std::to_string(f.sleep_ms), f.start_times ? "1" : "0",
         std::to_string(ready[1]), std::to_string(go[0]), std::to_string(f.prefetch)}));
  }
  ::close(ready[1]);
  ::close(go[0]);
  for (int e = 0; e < f.executors; ++e) {
    char byte;
    if (::read(ready[0], &byte, 1) != 1) {
      for (pid_t pid : children) ::kill(pid, SIGTERM);
      throw Error(ErrorCode::kUnavailable, "an executor process failed to start");
    }
  }
  const double startup = Seconds(SteadyClock::now() - spawned).count();
  const auto start = SteadyClock::now();
  const std::string go_bytes(static_cast<size_t>(f.executors), '1');
  if (::write(go[1], go_bytes.data(), go_bytes.size()) != static_cast<ssize_t>(go_bytes.size())) {
    throw Error(ErrorCode::kUnavailable, "cannot release the executors");
  }
  ::close(ready[0]);
  ::close(go[1]);
  // A run that cannot finish (an executor that died at start) ends after a generous limit.
  const auto limit =
      std::chrono::seconds(60) + milliseconds(static_cast<int64_t>(f.trials) * (f.sleep_ms + 50));
  auto next_check = start;
  while (!coordinator->done()) {
    coordinator->poll_once(milliseconds(50));
    if (const auto now = SteadyClock::now(); now >= next_check) {
      if (now - start > limit) {
        std::cerr << "dispatch_throughput: not done after " << Seconds(now - start).count()
                  << " s; giving up\n";
        break;
      }
      int status = 0;
      if (::waitpid(-1, &status, WNOHANG) > 0) {
        std::cerr << "dispatch_throughput: an executor process ended early\n";
        break;
      }
      next_check = now + milliseconds(200);
    }
  }
  const double seconds = Seconds(SteadyClock::now() - start).count();
  const CoordinatorStats stats = coordinator->stats();

  for (pid_t pid : children) ::kill(pid, SIGTERM);
  // Keep the coordinator's loop turning while the executors say BYE.
  for (pid_t pid : children) {
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) coordinator->poll_once(milliseconds(10));
  }
  coordinator.reset();

  std::vector<double> latency_ms, ask_to_start_ms, start_to_commit_ms;
  int64_t first_ask = INT64_MAX, last_commit = 0, complete = 0;
  for (const Finished& r : finished) {
    if (r.state == TrialState::kComplete) ++complete;
    first_ask = std::min(first_ask, r.ask_us);
    last_commit = std::max(last_commit, r.commit_us);
    latency_ms.push_back((r.commit_us - r.ask_us) / 1000.0);
    if (r.started_us > 0) {
      ask_to_start_ms.push_back((r.started_us - r.ask_us) / 1000.0);
      start_to_commit_ms.push_back((r.commit_us - r.started_us) / 1000.0);
    }
  }
  const int concurrency = f.executors * f.slots;
  // The work spread evenly over every slot (and never less than one trial's sleep); whole waves
  // of trials take a little longer (ceil(trials / slots) x sleep) when the trials do not fill the
  // last wave.
  const double ideal = std::max(f.sleep_ms / 1000.0,
                                static_cast<double>(f.trials) * f.sleep_ms / 1000.0 / concurrency);
  const double ideal_waves =
      std::ceil(static_cast<double>(f.trials) / concurrency) * f.sleep_ms / 1000.0;
  nlohmann::json out = {
      {"impl", "tuner"},
      {"runner", f.runner},
      {"trials", f.trials},
      {"complete", complete},
      {"failed", stats.failed},
      {"executors", f.executors},
      {"slots", f.slots},
      {"prefetch", f.prefetch},
      {"seconds", seconds},
      {"executor_startup_s", startup},
      {"trials_per_s", complete / seconds},
      {"first_ask_to_last_commit_s", finished.empty() ? 0.0 : (last_commit - first_ask) / 1e6},
      {"latency_median_ms", percentile(latency_ms, 0.5)},
      {"latency_p90_ms", percentile(latency_ms, 0.9)},
      {"latency_mean_ms",
       latency_ms.empty()
           ? 0.0
           : std::accumulate(latency_ms.begin(), latency_ms.end(), 0.0) / latency_ms.size()},
      {"coordinator_log_lines", log_lines}};
  if (f.runner != "noop") {
    out["sleep_ms"] = f.sleep_ms;
    out["ideal_s"] = ideal;
    out["ideal_waves_s"] = ideal_waves;
    out["overhead_pct"] = 100.0 * (seconds / ideal - 1.0);
    out["overhead_from_first_ask_pct"] = 100.0 * ((last_commit - first_ask) / 1e6 / ideal - 1.0);
  }
  if (!ask_to_start_ms.empty()) {
    out["ask_to_start_median_ms"] = percentile(ask_to_start_ms, 0.5);
    out["start_to_commit_median_ms"] = percentile(start_to_commit_ms, 0.5);
  }
  std::cout << out.dump() << std::endl;
  if (f.table) {
    std::fprintf(stderr,
                 "%s: %d trials (%lld complete) on %d executors x %d slots in %.3f s: %.0f "
                 "trials/s; ask-to-commit median %.3f ms, p90 %.3f ms\n",
                 f.runner.c_str(), f.trials, static_cast<long long>(complete), f.executors, f.slots,
                 seconds, complete / seconds, percentile(latency_ms, 0.5),
                 percentile(latency_ms, 0.9));
    if (f.runner != "noop") {
      std::fprintf(stderr, "  ideal %.3f s, makespan %.3f s: %+.2f%%\n", ideal, seconds,
                   100.0 * (seconds / ideal - 1.0));
    }
  }
  if (made_work && !f.keep) {
    std::error_code ignored;
    fs::remove_all(work, ignored);
  }
  return complete == f.trials ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "executor") == 0) return executor_main(argc, argv);
  const Flags flags = parse_flags(argc, argv);
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) {
    std::cerr << "dispatch_throughput: cannot resolve /proc/self/exe: " << ec.message() << "\n";
    return 1;
  }
  try {
    return coordinator_main(flags, self);
  } catch (const std::exception& e) {
    std::cerr << "dispatch_throughput: " << e.what() << "\n";
    return 1;
  }
}
