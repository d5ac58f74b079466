// Scale by simulation: the real coordinator (Coordinator on a SqliteStorage file, the random
// sampler) against many simulated executors that speak the real protocol over ZeroMQ
// (simulated_executors.h: many executors per process, one event loop each), with executors lost
// and preempted at a stated rate. How many trials per second one coordinator dispatches, how
// long a trial waits to start and an outcome for its ACK, what the coordinator costs (CPU,
// memory, database), and which limit saturates first.
//
// This process is the coordinator: its loop runs on the main thread, so the loop's CPU is this
// thread's (RUSAGE_THREAD) and the coordinator's memory this process's peak RSS. The simulated
// executors run in --processes child processes (this binary in its "sim" mode).
//
//   scale_sim [--executors E] [--slots S] [--trials N] [--min-s A] [--max-s B]
//             [--report-hz LO-HI|HZ|0] [--lost-per-hour PCT] [--preempted-per-hour PCT]
//             [--time-scale X] [--processes P] [--heartbeat-ms MS] [--lease-timeout-ms MS]
//             [--endpoint tcp|ipc] [--seed N] [--limit-s S] [--work DIR] [--keep] [--table]
//             [--verbose] [--smoke] [--ray]
//
// A trial lasts U(A, B) wall seconds and reports at U(LO, HI) per wall second. Churn rates are
// percent of the executors per simulated hour, and a simulated hour lasts 3600 / X wall seconds
// (X = 60: a wall second stands for a minute, a trial of 0.5-5 s for one of 0.5-5 minutes). A
// lost executor closes its socket without BYE (its leases expire after the lease timeout and
// its trials run again); a preempted one says BYE listing its running leases as preempted (run
// again at once, no retry counted). Each is replaced at once by a new executor.
// --smoke: 50 executors x 8 slots, 2,000 trials of 0.1-0.5 s, 100 ms heartbeats and 1 s leases,
// churn fast enough that some executors are lost and some preempted in a few seconds.
// --ray: Ray Tune's published shape: 10,000 trials of exactly 1 s on 16 slots (2 x 8), no
// reports, no churn; the floor is 625 s and Ray Tune took 715 s (ratio 1.144).
//
// One JSON line on stdout (--table: a summary on stderr). Exit 1 when not every trial completed,
// or a simulated executor got an ERROR other than say_hello.
//   scale_sim sim CONFIG_JSON READY_FD GO_FD STOP_FD OUT_PATH   (internal: one simulator process)
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bench/scale/simulated_executors.h"
#include "bench/scale/timed_storage.h"
#include "coordinator/coordinator.h"
#include "search/samplers/random_sampler.h"
#include "storage/sqlite_storage.h"
#include "trials/error.h"
#include "tuner/study.h"

namespace {

using namespace tuner;
using std::chrono::milliseconds;
using tuner::bench::SimConfig;
using tuner::bench::SimReport;
using Seconds = std::chrono::duration<double>;
using SteadyClock = std::chrono::steady_clock;

// Ray Tune's published figure: 10,000 trials of 1 s on 16 CPUs took 715 s against a 625 s floor.
constexpr double kRayTuneMakespanS = 715.0;
constexpr double kRayTuneFloorS = 625.0;

struct Flags {
  std::string command;  // as given, for the record
  int executors = 1000;
  int slots = 8;
  int trials = 100000;
  double min_s = 0.5;
  double max_s = 5.0;
  double report_hz_lo = 1;
  double report_hz_hi = 10;
  double lost_per_hour = 1.0;
  double preempted_per_hour = 5.0;
  double time_scale = 60.0;
  int processes = 0;  // 0: one per 500 executors
  int heartbeat_ms = 1000;
  int lease_timeout_ms = 5000;
  std::string endpoint = "tcp";
  uint64_t seed = 1;
  double limit_s = 1200;
  std::string work;
  bool keep = false;
  bool table = false;
  bool verbose = false;
  std::string preset;  // "smoke", "ray" or empty
};

[[noreturn]] void usage(const std::string& problem) {
  std::cerr << "scale_sim: " << problem << "\n"
            << "usage: scale_sim [--executors E] [--slots S] [--trials N] [--min-s A] [--max-s B] "
               "[--report-hz LO-HI|HZ|0] [--lost-per-hour PCT] [--preempted-per-hour PCT] "
               "[--time-scale X] [--processes P] [--heartbeat-ms MS] [--lease-timeout-ms MS] "
               "[--endpoint tcp|ipc] [--seed N] [--limit-s S] [--work DIR] [--keep] [--table] "
               "[--verbose] [--smoke] [--ray]\n";
  std::exit(2);
}

double number(const std::string& flag, const std::string& text, double lo, double hi) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(value >= lo && value <= hi)) {
    usage(flag + " needs a number in [" + std::to_string(lo) + ", " + std::to_string(hi) +
          "], got '" + text + "'");
  }
  return value;
}

int integer(const std::string& flag, const std::string& text, int lo, int hi) {
  const double value = number(flag, text, lo, hi);
  if (value != std::floor(value)) usage(flag + " needs an integer, got '" + text + "'");
  return static_cast<int>(value);
}

Flags parse_flags(int argc, char** argv) {
  Flags f;
  f.command = "scale_sim";
  for (int i = 1; i < argc; ++i) f.command += std::string(" ") + argv[i];
  // A preset first, so that flags after it (or before it) override its values.
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--smoke") {
      f.preset = "smoke";
      f.executors = 50;
      f.trials = 2000;
      f.min_s = 0.1;
      f.max_s = 0.5;
      f.heartbeat_ms = 100;
      f.lease_timeout_ms = 1000;
      // 50 executors: about 2 lost and 10 preempted per wall second.
      f.time_scale = 14400;
    } else if (a == "--ray") {
      f.preset = "ray";
      f.executors = 2;
      f.slots = 8;
      f.trials = 10000;
      f.min_s = f.max_s = 1.0;
      f.report_hz_lo = f.report_hz_hi = 0;
      f.lost_per_hour = f.preempted_per_hour = 0;
    }
  }
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--executors") {
      f.executors = integer(a, value(), 1, 100000);
    } else if (a == "--slots") {
      f.slots = integer(a, value(), 1, 1024);
    } else if (a == "--trials") {
      f.trials = integer(a, value(), 1, 100'000'000);
    } else if (a == "--min-s") {
      f.min_s = number(a, value(), 0, 86400);
    } else if (a == "--max-s") {
      f.max_s = number(a, value(), 0, 86400);
    } else if (a == "--report-hz") {
      const std::string v = value();
      const size_t dash = v.find('-');
      if (dash == std::string::npos) {
        f.report_hz_lo = f.report_hz_hi = number(a, v, 0, 1000);
      } else {
        f.report_hz_lo = number(a, v.substr(0, dash), 0, 1000);
        f.report_hz_hi = number(a, v.substr(dash + 1), 0, 1000);
      }
    } else if (a == "--lost-per-hour") {
      f.lost_per_hour = number(a, value(), 0, 1e6);
    } else if (a == "--preempted-per-hour") {
      f.preempted_per_hour = number(a, value(), 0, 1e6);
    } else if (a == "--time-scale") {
      f.time_scale = number(a, value(), 1e-3, 1e9);
    } else if (a == "--processes") {
      f.processes = integer(a, value(), 1, 256);
    } else if (a == "--heartbeat-ms") {
      f.heartbeat_ms = integer(a, value(), 10, 600000);
    } else if (a == "--lease-timeout-ms") {
      f.lease_timeout_ms = integer(a, value(), 20, 3600000);
    } else if (a == "--endpoint") {
      f.endpoint = value();
      if (f.endpoint != "tcp" && f.endpoint != "ipc") usage("--endpoint must be tcp or ipc");
    } else if (a == "--seed") {
      f.seed = static_cast<uint64_t>(integer(a, value(), 0, 1'000'000'000));
    } else if (a == "--limit-s") {
      f.limit_s = number(a, value(), 1, 1e6);
    } else if (a == "--work") {
      f.work = value();
    } else if (a == "--keep") {
      f.keep = true;
    } else if (a == "--table") {
      f.table = true;
    } else if (a == "--verbose") {
      f.verbose = true;
    } else if (a != "--smoke" && a != "--ray") {
      usage("unknown argument '" + a + "'");
    }
  }
  if (f.max_s < f.min_s) usage("--max-s must be >= --min-s");
  if (f.report_hz_hi < f.report_hz_lo) usage("--report-hz LO-HI needs LO <= HI");
  if (f.report_hz_lo == 0 && f.report_hz_hi > 0) usage("--report-hz: a range must start above 0");
  if (f.lease_timeout_ms <= f.heartbeat_ms) usage("--lease-timeout-ms must exceed --heartbeat-ms");
  if (f.processes == 0) f.processes = std::max(1, (f.executors + 499) / 500);
  f.processes = std::min(f.processes, f.executors);
  return f;
}

int64_t unix_us(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

double seconds_of(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
}

struct Usage {
  double cpu_s = 0;
  long max_rss_kib = 0;
};

Usage usage_of(int who) {
  rusage r{};
  getrusage(who, &r);
  return {seconds_of(r.ru_utime) + seconds_of(r.ru_stime), r.ru_maxrss};
}

// This thread's time on a CPU and waiting for one (runnable, not running), in seconds.
std::pair<double, double> thread_schedstat() {
  std::ifstream in("/proc/thread-self/schedstat");
  double on_cpu_ns = 0, waiting_ns = 0;
  in >> on_cpu_ns >> waiting_ns;
  return {on_cpu_ns * 1e-9, waiting_ns * 1e-9};
}

// Bytes this process passed to write() calls (SQLite's writes; sockets use send()).
int64_t written_bytes() {
  std::ifstream in("/proc/self/io");
  std::string key;
  int64_t value = 0;
  while (in >> key >> value) {
    if (key == "wchar:") return value;
  }
  return 0;
}

// This process's resident memory now, in KiB.
long rss_kib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return 0;
}

int64_t size_of(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(size);
}

template <typename T>
double percentile(std::vector<T> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, v.size() - 1);
  return static_cast<double>(v[lo]) +
         static_cast<double>(v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

// A JSON number, or null for NaN.
nlohmann::json num(double value, int digits = 3) {
  if (!std::isfinite(value)) return nullptr;
  const double scale = std::pow(10.0, digits);
  return std::round(value * scale) / scale;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// Every process's CPU time on this machine so far, and the machine's time in all (both in clock
// ticks summed over its cores), from /proc/stat.
std::pair<double, double> machine_cpu_ticks() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  const double busy = user + nice + system + irq + softirq + steal;
  return {busy, busy + idle + iowait};
}

double load_average() {
  std::ifstream in("/proc/loadavg");
  double one = NAN;
  in >> one;
  return one;
}

// --- One simulator process -------------------------------------------------------------------

int sim_main(int argc, char** argv) {
  if (argc != 7) usage("sim mode takes CONFIG_JSON READY_FD GO_FD STOP_FD OUT_PATH");
  const SimConfig config = bench::sim_config_from_json(argv[2]);
  const int ready_fd = std::atoi(argv[3]), go_fd = std::atoi(argv[4]), stop_fd = std::atoi(argv[5]);
  const std::string out_path = argv[6];
  try {
    char byte = 1;
    if (::write(ready_fd, &byte, 1) != 1 || ::read(go_fd, &byte, 1) != 1) return 1;
    ::close(ready_fd);
    ::close(go_fd);
    const SimReport report = bench::run_simulated_executors(config, stop_fd);
    std::ofstream(out_path) << bench::to_json(report);
  } catch (const std::exception& e) {
    std::cerr << "scale_sim: simulator process " << config.process << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}

// --- The coordinator and the run ---------------------------------------------------------------

// `keep`: descriptors the child inherits (the others are close-on-exec).
pid_t spawn(const std::string& self, const std::vector<std::string>& args,
            const std::vector<int>& keep) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(self.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(ErrorCode::kUnavailable, std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    for (int fd : keep) ::fcntl(fd, F_SETFD, 0);
    ::execv(self.c_str(), argv.data());
    std::fprintf(stderr, "scale_sim: cannot exec %s: %s\n", self.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  return pid;
}

// Enough descriptors for a thousand connections (ZeroMQ takes a few per socket).
void raise_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

struct Finished {
  int64_t ask_us = 0;
  int64_t commit_us = 0;
  TrialState state = TrialState::kRunning;
};

int coordinator_main(const Flags& f, const std::string& self) {
  namespace fs = std::filesystem;
  raise_file_limit();
  const double load_at_start = load_average();
  const long rss_at_start_kib = rss_kib();  // the libraries loaded, no coordinator yet
  fs::path work;
  bool made_work = false;
  if (f.work.empty()) {
    std::string pattern = (fs::temp_directory_path() / "tuner-scale.XXXXXX").string();
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
  const fs::path db = work / "scale.db";
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db.string() + suffix);

  auto timed = std::make_shared<bench::TimedStorage>(std::make_shared<SqliteStorage>(db.string()));
  StudyOptions study_options;
  study_options.name = "scale";
  study_options.sampler = std::make_shared<RandomSampler>();
  study_options.seed = f.seed;
  study_options.storage = timed;
  SearchSpace space;  // a typical sweep's five parameters
  space.add_float("x", -10.0, 10.0);
  space.add_float("y", -10.0, 10.0);
  space.add_float("lr", 1e-5, 1e-1, /*log=*/true);
  space.add_int("layers", 1, 8);
  space.add_categorical("optimizer",
                        {ParamValue(std::string("adam")), ParamValue(std::string("sgd")),
                         ParamValue(std::string("adamw"))});
  study_options.space = space;
  Study study = Study::create(study_options);

  std::unordered_map<int64_t, Finished> finished;  // by trial id
  finished.reserve(static_cast<size_t>(f.trials) * 2);
  int64_t log_lines = 0;
  CoordinatorOptions options;
  options.endpoint = f.endpoint == "tcp" ? std::string("tcp://127.0.0.1:*")
                                         : "ipc://" + (work / "coordinator.sock").string();
  options.job_json = R"({"kind": "command", "argv": ["simulated"], "objective_metric": "loss"})";
  options.n_trials = f.trials;
  options.heartbeat_interval = milliseconds(f.heartbeat_ms);
  options.lease_timeout = milliseconds(f.lease_timeout_ms);
  options.log = [&](const std::string& line) {
    ++log_lines;
    if (f.verbose) std::cerr << line << "\n";
  };
  options.on_trial_finished = [&](const FrozenTrial& t) {
    finished[t.trial_id] =
        Finished{.ask_us = t.datetime_start ? unix_us(*t.datetime_start) : 0,
                 .commit_us = t.datetime_complete ? unix_us(*t.datetime_complete) : 0,
                 .state = t.state};
  };
  std::optional<Coordinator> coordinator;
  coordinator.emplace(study, options);

  // The simulator processes build their contexts before the clock starts, and are released
  // together.
  int ready[2], go[2], stop[2];
  // Close-on-exec: a child that held another's stop pipe open would never see it close.
  if (::pipe2(ready, O_CLOEXEC) != 0 || ::pipe2(go, O_CLOEXEC) != 0 ||
      ::pipe2(stop, O_CLOEXEC) != 0) {
    throw Error(ErrorCode::kUnavailable, std::string("pipe: ") + std::strerror(errno));
  }
  std::vector<pid_t> children;
  std::vector<fs::path> outputs;
  for (int p = 0; p < f.processes; ++p) {
    const int first = f.executors * p / f.processes, last = f.executors * (p + 1) / f.processes;
    SimConfig config{.endpoint = coordinator->endpoint(),
                     .process = p,
                     .executors = last - first,
                     .slots = f.slots,
                     .min_s = f.min_s,
                     .max_s = f.max_s,
                     .report_hz_lo = f.report_hz_lo,
                     .report_hz_hi = f.report_hz_hi,
                     .lost_per_hour = f.lost_per_hour,
                     .preempted_per_hour = f.preempted_per_hour,
                     .time_scale = f.time_scale,
                     .seed = f.seed,
                     .heartbeat_ms = f.heartbeat_ms,
                     .coordinator_timeout_ms = f.lease_timeout_ms};
    outputs.push_back(work / ("sim-" + std::to_string(p) + ".json"));
    children.push_back(
        spawn(self,
              {"sim", bench::to_json(config), std::to_string(ready[1]), std::to_string(go[0]),
               std::to_string(stop[0]), outputs.back().string()},
              {ready[1], go[0], stop[0]}));
  }
  ::close(ready[1]);
  ::close(go[0]);
  ::close(stop[0]);
  for (int p = 0; p < f.processes; ++p) {
    char byte;
    if (::read(ready[0], &byte, 1) != 1) {
      for (pid_t pid : children) ::kill(pid, SIGKILL);
      throw Error(ErrorCode::kUnavailable, "a simulator process failed to start");
    }
  }
  ::close(ready[0]);

  const Usage self_before = usage_of(RUSAGE_SELF);
  const Usage thread_before = usage_of(RUSAGE_THREAD);
  const auto [on_cpu_before, waiting_before] = thread_schedstat();
  const int64_t written_before = written_bytes();
  const auto [machine_busy_before, machine_total_before] = machine_cpu_ticks();
  const bench::StorageCounts storage_before = timed->counts();
  const auto start = SteadyClock::now();
  const std::string go_bytes(static_cast<size_t>(f.processes), '1');
  if (::write(go[1], go_bytes.data(), go_bytes.size()) != static_cast<ssize_t>(go_bytes.size())) {
    throw Error(ErrorCode::kUnavailable, "cannot release the simulator processes");
  }
  ::close(go[1]);

  // The loop; once a second, the dispatch rate of that second and whether the children live.
  const auto limit = std::chrono::duration_cast<SteadyClock::duration>(Seconds(f.limit_s));
  auto next_sample = start + std::chrono::seconds(1);
  int64_t dispatched_before = 0;
  int64_t peak_dispatch_per_s = 0;
  std::string abort_reason;
  while (!coordinator->done()) {
    coordinator->poll_once(milliseconds(50));
    if (const auto now = SteadyClock::now(); now >= next_sample) {
      const CoordinatorStats s = coordinator->stats();
      const int64_t dispatched = s.trials_started + s.retries_started;
      peak_dispatch_per_s = std::max(peak_dispatch_per_s, dispatched - dispatched_before);
      dispatched_before = dispatched;
      next_sample += std::chrono::seconds(1);
      if (f.verbose) {
        std::cerr << "scale_sim: " << Seconds(now - start).count() << " s: " << dispatched
                  << " dispatched, " << s.completed << " complete, " << s.active_leases
                  << " leased, " << s.executors << " executors\n";
      }
      if (now - start > limit) {
        abort_reason = "not done after " + std::to_string(f.limit_s) + " s (--limit-s)";
        break;
      }
      int status = 0;
      if (::waitpid(-1, &status, WNOHANG) > 0) {
        abort_reason = "a simulator process ended early";
        break;
      }
    }
  }
  const double makespan = Seconds(SteadyClock::now() - start).count();
  const Usage self_after = usage_of(RUSAGE_SELF);
  const Usage thread_after = usage_of(RUSAGE_THREAD);
  const auto [on_cpu_after, waiting_after] = thread_schedstat();
  const int64_t written = written_bytes() - written_before;
  const auto [machine_busy_after, machine_total_after] = machine_cpu_ticks();
  const double load_at_end = load_average();
  const bench::StorageCounts storage = timed->counts();
  const CoordinatorStats stats = coordinator->stats();

  // Stop the simulators (a byte on the pipe: zmq_poll reports a closed pipe as an error, not as
  // readable); the loop turns meanwhile (their BYEs).
  if (::write(stop[1], go_bytes.data(), go_bytes.size()) < 0) {
    for (pid_t pid : children) ::kill(pid, SIGTERM);
  }
  ::close(stop[1]);
  const auto stop_deadline = SteadyClock::now() + std::chrono::seconds(30);
  for (pid_t pid : children) {
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (SteadyClock::now() > stop_deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        break;
      }
      coordinator->poll_once(milliseconds(10));
    }
  }
  coordinator.reset();
  const int64_t db_bytes = size_of(db), wal_bytes = size_of(db.string() + "-wal");

  // The simulators' figures.
  SimReport sims;
  std::vector<double> sim_busy, sim_cpu;
  for (const fs::path& out : outputs) {
    std::ifstream in(out);
    std::stringstream text;
    text << in.rdbuf();
    if (text.str().empty()) {
      if (abort_reason.empty()) abort_reason = "a simulator process wrote no report";
      continue;
    }
    SimReport r = bench::sim_report_from_json(text.str());
    sim_busy.push_back(r.wall_s > 0 ? 1.0 - r.wait_s / r.wall_s : NAN);
    sim_cpu.push_back(r.wall_s > 0 ? r.cpu_s / r.wall_s : NAN);
    auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
    append(sims.starts, r.starts);
    append(sims.result_to_ack_us, r.result_to_ack_us);
    append(sims.ready_to_trial_us, r.ready_to_trial_us);
    sims.lateness_ms.merge(r.lateness_ms);
    append(sims.error_samples, r.error_samples);
    for (const auto& [name, field] : bench::kSimCounts) sims.*field += r.*field;
    for (const auto& [name, field] : bench::kSimSeconds) sims.*field += r.*field;
  }

  // Ask-to-start: the trial's datetime_start as stored (Study::ask, in the coordinator) to the
  // TRIAL's arrival at its simulated executor, both on this host's system clock.
  std::vector<double> ask_to_start_ms;
  ask_to_start_ms.reserve(sims.starts.size());
  for (const auto& [trial_id, received_us] : sims.starts) {
    if (auto it = finished.find(trial_id); it != finished.end() && it->second.ask_us > 0) {
      ask_to_start_ms.push_back(static_cast<double>(received_us - it->second.ask_us) / 1000.0);
    }
  }
  std::vector<double> result_to_ack_ms, ready_to_trial_ms;
  for (int64_t us : sims.result_to_ack_us)
    result_to_ack_ms.push_back(static_cast<double>(us) / 1e3);
  for (int64_t us : sims.ready_to_trial_us)
    ready_to_trial_ms.push_back(static_cast<double>(us) / 1e3);
  int64_t complete = 0, first_ask = INT64_MAX, last_commit = 0;
  for (const auto& [id, r] : finished) {
    if (r.state == TrialState::kComplete) ++complete;
    if (r.ask_us > 0) first_ask = std::min(first_ask, r.ask_us);
    last_commit = std::max(last_commit, r.commit_us);
  }

  // The floor: the trial time of the completed runs spread over every slot (never less than
  // one trial's longest possible duration).
  const int total_slots = f.executors * f.slots;
  const double floor_s = std::max(f.min_s, sims.work_s / total_slots);
  const double dispatched = static_cast<double>(stats.trials_started + stats.retries_started);
  const double loop_cpu = thread_after.cpu_s - thread_before.cpu_s;
  const double loop_waiting = waiting_after - waiting_before;
  const double loop_busy = loop_cpu / makespan;
  const double loop_busy_with_waiting = (loop_cpu + loop_waiting) / makespan;
  const double storage_s = static_cast<double>(storage.ns - storage_before.ns) * 1e-9;
  const double process_cpu = self_after.cpu_s - self_before.cpu_s;
  const double sim_lateness_p99 = sims.lateness_ms.quantile(0.99);
  const double sim_busy_max =
      sim_busy.empty() ? NAN : *std::max_element(sim_busy.begin(), sim_busy.end());
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const double machine_busy = (process_cpu + sims.cpu_s) / (makespan * cores);
  // The machine's cores busy with anything (other jobs on a shared machine included).
  const double machine_busy_all = machine_total_after > machine_total_before
                                      ? (machine_busy_after - machine_busy_before) /
                                            (machine_total_after - machine_total_before)
                                      : NAN;

  // Which limit saturates first: the one closest to full. The coordinator's loop is one thread
  // (full at 1.0, its waits for a core counted), a simulator's loop likewise (its timers then
  // fire late), and the machine's cores are shared by all of them and by whatever else runs on
  // the machine (a shared machine's other jobs count). A tie goes to the machine: on full cores,
  // a loop's waits and late timers follow from it.
  struct Limit {
    std::string name;
    double use;
  };
  const double machine_use =
      std::isfinite(machine_busy_all) ? std::max(machine_busy, machine_busy_all) : machine_busy;
  const double simulator_use =
      std::max(sim_busy_max,
               std::isfinite(sim_lateness_p99) ? std::min(1.0, sim_lateness_p99 / 100.0) : 0.0);
  std::vector<Limit> limits = {{"machine cores", machine_use},
                               {"coordinator loop", loop_busy_with_waiting},
                               {"simulator", simulator_use}};
  const Limit& top = *std::max_element(
      limits.begin(), limits.end(), [](const Limit& a, const Limit& b) { return a.use < b.use; });
  const std::string saturated = top.use >= 0.9 ? top.name : "none";

  nlohmann::json out = {
      {"bench", "scale"},
      {"command", f.command},
      {"date", utc_now()},
      {"preset", f.preset},
      {"executors", f.executors},
      {"slots", f.slots},
      {"trials", f.trials},
      {"min_s", f.min_s},
      {"max_s", f.max_s},
      {"report_hz", {f.report_hz_lo, f.report_hz_hi}},
      {"lost_per_hour_pct", f.lost_per_hour},
      {"preempted_per_hour_pct", f.preempted_per_hour},
      {"time_scale", f.time_scale},
      {"processes", f.processes},
      {"heartbeat_ms", f.heartbeat_ms},
      {"lease_timeout_ms", f.lease_timeout_ms},
      {"endpoint", f.endpoint},
      {"cpu", cpu_model()},
      {"cores", cores},
      {"load_at_start", num(load_at_start, 2)},
      {"load_at_end", num(load_at_end, 2)},
      {"complete", complete},
      {"failed", stats.failed},
      {"aborted", abort_reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(abort_reason)},
      {"makespan_s", num(makespan)},
      {"first_ask_to_last_commit_s",
       first_ask == INT64_MAX ? nlohmann::json(nullptr)
                              : num(static_cast<double>(last_commit - first_ask) * 1e-6)},
      {"floor_s", num(floor_s)},
      // A run cut short has no floor to compare with.
      {"makespan_over_floor", abort_reason.empty() ? num(makespan / floor_s, 4) : nullptr},
      {"ray_tune_makespan_over_floor", num(kRayTuneMakespanS / kRayTuneFloorS, 4)},
      {"dispatched", stats.trials_started + stats.retries_started},
      {"retries", stats.retries_started},
      {"dispatch_per_s", num(dispatched / makespan, 1)},
      {"dispatch_peak_per_s", peak_dispatch_per_s},
      {"complete_per_s", num(static_cast<double>(complete) / makespan, 1)},
      {"reports", stats.reports},
      {"reports_per_s", num(static_cast<double>(stats.reports) / makespan, 1)},
      {"ask_to_start_p50_ms", num(percentile(ask_to_start_ms, 0.5))},
      {"ask_to_start_p99_ms", num(percentile(ask_to_start_ms, 0.99))},
      {"ready_to_trial_p50_ms", num(percentile(ready_to_trial_ms, 0.5))},
      {"ready_to_trial_p99_ms", num(percentile(ready_to_trial_ms, 0.99))},
      {"result_to_ack_p50_ms", num(percentile(result_to_ack_ms, 0.5))},
      {"result_to_ack_p99_ms", num(percentile(result_to_ack_ms, 0.99))},
      {"coordinator_loop_cpu_s", num(loop_cpu)},
      {"coordinator_process_cpu_s", num(process_cpu)},
      {"coordinator_loop_busy", num(loop_busy)},
      {"coordinator_loop_busy_with_waiting", num(loop_busy_with_waiting)},
      {"coordinator_storage_s", num(storage_s)},
      {"coordinator_storage_share_of_loop_busy", num(storage_s / (loop_cpu + loop_waiting))},
      {"coordinator_peak_rss_mib", num(static_cast<double>(self_after.max_rss_kib) / 1024.0, 1)},
      {"process_rss_before_coordinator_mib",
       num(static_cast<double>(rss_at_start_kib) / 1024.0, 1)},
      {"db_bytes", db_bytes + wal_bytes},
      {"db_bytes_per_trial", num(static_cast<double>(db_bytes + wal_bytes) / f.trials, 1)},
      {"db_written_mib_per_s", num(static_cast<double>(written) / makespan / (1 << 20))},
      {"storage_writes_per_s",
       num(static_cast<double>(storage.writes - storage_before.writes) / makespan, 1)},
      {"storage_batches_per_s",
       num(static_cast<double>(storage.batches - storage_before.batches) / makespan, 1)},
      {"lost_executors", sims.lost},
      {"lost_leases", sims.lost_leases},
      {"preempted_executors", sims.preempted},
      {"preempted_leases", sims.preempted_leases},
      {"leases_expired", stats.leases_expired},
      {"stale_outcomes_refused", stats.stale_outcomes_refused},
      {"sim_cpu_s", num(sims.cpu_s)},
      {"sim_loop_busy_max", num(sim_busy_max)},
      {"sim_timer_lateness_p50_ms", num(sims.lateness_ms.quantile(0.5))},
      {"sim_timer_lateness_p99_ms", num(sim_lateness_p99)},
      {"trials_queued_on_arrival", sims.queued},
      {"sim_errors", sims.errors - sims.say_hello},
      {"sim_say_hello", sims.say_hello},
      {"sim_resent", sims.resent},
      {"sim_dropped", sims.dropped},
      {"machine_busy", num(machine_busy)},
      {"machine_busy_all", num(machine_busy_all)},
      {"limits",
       {{"coordinator_loop", num(loop_busy_with_waiting)},
        {"simulator", num(simulator_use)},
        {"machine_cores", num(machine_use)}}},
      {"saturated", saturated},
      {"coordinator_log_lines", log_lines}};
  std::cout << out.dump() << std::endl;

  if (f.table) {
    std::fprintf(stderr,
                 "scale: %d executors x %d slots, %d trials of %.2f-%.2f s, reports %g-%g Hz, "
                 "%d simulator process(es)%s\n",
                 f.executors, f.slots, f.trials, f.min_s, f.max_s, f.report_hz_lo, f.report_hz_hi,
                 f.processes, abort_reason.empty() ? "" : (" [" + abort_reason + "]").c_str());
    std::fprintf(stderr,
                 "  makespan %.2f s, floor %.2f s: %.4f (Ray Tune's 10,000 x 1 s on 16 CPUs: "
                 "%.4f)\n",
                 makespan, floor_s, makespan / floor_s, kRayTuneMakespanS / kRayTuneFloorS);
    std::fprintf(stderr,
                 "  dispatched %.0f trials/s (peak %lld/s), %lld complete, %lld re-runs; %.0f "
                 "REPORTs/s\n",
                 dispatched / makespan, static_cast<long long>(peak_dispatch_per_s),
                 static_cast<long long>(complete), static_cast<long long>(stats.retries_started),
                 static_cast<double>(stats.reports) / makespan);
    std::fprintf(stderr,
                 "  ask-to-start p50 %.2f ms p99 %.2f ms; READY-to-TRIAL p50 %.2f ms p99 %.2f "
                 "ms; RESULT-to-ACK p50 %.2f ms p99 %.2f ms\n",
                 percentile(ask_to_start_ms, 0.5), percentile(ask_to_start_ms, 0.99),
                 percentile(ready_to_trial_ms, 0.5), percentile(ready_to_trial_ms, 0.99),
                 percentile(result_to_ack_ms, 0.5), percentile(result_to_ack_ms, 0.99));
    std::fprintf(stderr,
                 "  coordinator: loop %.2f CPU s (busy %.2f, %.2f with waits for a core; "
                 "storage %.0f%% of it), process %.2f CPU s, peak RSS %.1f MiB (%.1f before it "
                 "started)\n",
                 loop_cpu, loop_busy, loop_busy_with_waiting,
                 100.0 * storage_s / (loop_cpu + loop_waiting), process_cpu,
                 static_cast<double>(self_after.max_rss_kib) / 1024.0,
                 static_cast<double>(rss_at_start_kib) / 1024.0);
    std::fprintf(stderr,
                 "  database: %.1f MiB (%.0f B/trial), %.2f MiB/s written, %.0f writes/s in "
                 "%.0f batches/s\n",
                 static_cast<double>(db_bytes + wal_bytes) / (1 << 20),
                 static_cast<double>(db_bytes + wal_bytes) / f.trials,
                 static_cast<double>(written) / makespan / (1 << 20),
                 static_cast<double>(storage.writes - storage_before.writes) / makespan,
                 static_cast<double>(storage.batches - storage_before.batches) / makespan);
    std::fprintf(stderr,
                 "  churn: %lld lost (%lld leases, %lld expired), %lld preempted (%lld leases); "
                 "%lld stale outcomes refused\n",
                 static_cast<long long>(sims.lost), static_cast<long long>(sims.lost_leases),
                 static_cast<long long>(stats.leases_expired),
                 static_cast<long long>(sims.preempted),
                 static_cast<long long>(sims.preempted_leases),
                 static_cast<long long>(stats.stale_outcomes_refused));
    std::fprintf(stderr,
                 "  simulators: %.2f CPU s, loop busy max %.2f, timers late p99 %.2f ms; "
                 "machine %.2f of %u cores busy (%.2f with other processes); saturated: %s\n",
                 sims.cpu_s, sim_busy_max, sim_lateness_p99, machine_busy, cores, machine_busy_all,
                 saturated.c_str());
    for (const std::string& e : sims.error_samples) std::fprintf(stderr, "  ERROR %s\n", e.c_str());
  }
  if (made_work && !f.keep) {
    std::error_code ignored;
    fs::remove_all(work, ignored);
  }
  const bool ok = abort_reason.empty() && complete == f.trials && sims.errors == sims.say_hello;
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "sim") == 0) return sim_main(argc, argv);
  const Flags flags = parse_flags(argc, argv);
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) {
    std::cerr << "scale_sim: cannot resolve /proc/self/exe: " << ec.message() << "\n";
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  try {
    return coordinator_main(flags, self);
  } catch (const std::exception& e) {
    std::cerr << "scale_sim: " << e.what() << "\n";
    return 1;
  }
}
