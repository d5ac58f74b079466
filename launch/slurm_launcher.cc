#include "launch/slurm_launcher.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "launch/slurm_batch.h"
#include "trials/error.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;

// A job that ends this soon after it started (or before it started) failed to start its
// executor: an error to show, not a job to replace again and again.
constexpr std::chrono::seconds kFailFast{60};
// Running jobs whose executors have not connected after this long are said once.
constexpr std::chrono::seconds kConnectWarning{60};
// The lines of a failed job's output an error shows.
constexpr size_t kOutputLines = 10;

// Pending reasons that no wait cures (squeue's %r); the job is cancelled and the reason shown.
const std::set<std::string, std::less<>> kHopelessReasons = {
    "BadConstraints",     "InvalidAccount",     "InvalidQOS",
    "PartitionTimeLimit", "PartitionNodeLimit", "AccountNotAllowed",
    "QOSNotAllowed",      "PartitionConfig",    "DependencyNeverSatisfied"};

void write_private_file(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0 || ::fchmod(fd, mode) != 0 ||
      ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw Error(ErrorCode::kUnavailable, "cannot write " + path + ": " + why);
  }
  ::close(fd);
}

std::string random_suffix() {
  std::random_device device;
  std::uniform_int_distribution<int> digit(0, 35);
  std::string s;
  for (int i = 0; i < 6; ++i) s += "0123456789abcdefghijklmnopqrstuvwxyz"[digit(device)];
  return s;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
}

// The lines of `text`, trimmed, without empty ones, joined with "; ".
std::string one_line(const std::string& text) {
  std::istringstream in(text);
  std::string joined;
  for (std::string line; std::getline(in, line);) {
    line = trim(line);
    if (!line.empty()) joined += (joined.empty() ? "" : "; ") + line;
  }
  return joined;
}

// "KEY=value" of scontrol's one-line form (values without spaces, as JobState, Reason, ExitCode
// and RunTime are).
std::string scontrol_field(const std::string& line, const std::string& key) {
  const std::string needle = key + "=";
  size_t at = 0;
  while ((at = line.find(needle, at)) != std::string::npos) {
    if (at == 0 || line[at - 1] == ' ') {
      const size_t start = at + needle.size();
      const size_t end = line.find(' ', start);
      return line.substr(start, end == std::string::npos ? std::string::npos : end - start);
    }
    at += needle.size();
  }
  return "";
}

// Slurm's run time "[D-]HH:MM:SS" or "MM:SS" in seconds; nullopt when it is not that.
std::optional<std::chrono::seconds> slurm_duration(const std::string& text) {
  int64_t days = 0;
  std::string rest = text;
  if (const size_t dash = rest.find('-'); dash != std::string::npos) {
    try {
      days = std::stoll(rest.substr(0, dash));
    } catch (const std::exception&) {
      return std::nullopt;
    }
    rest = rest.substr(dash + 1);
  }
  int64_t total = 0;
  std::istringstream in(rest);
  int parts = 0;
  for (std::string part; std::getline(in, part, ':'); ++parts) {
    try {
      total = total * 60 + std::stoll(part);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  if (parts < 2) return std::nullopt;
  return std::chrono::seconds(days * 86400 + total);
}

}  // namespace

SlurmLauncher::SlurmLauncher(SlurmLauncherOptions options) : options_(std::move(options)) {
  const SlurmOptions& s = options_.slurm;
  if (options_.connect_endpoint.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "SlurmLauncher: no endpoint for the executors");
  }
  check_scaling_bounds(s.min_executors, s.max_executors, s.slots, "SlurmLauncher");
  if (!options_.runner) options_.runner = system_command_runner();
  if (!options_.clock) options_.clock = system_clock();
  job_name_ = "tuner-" + options_.name + "-" + random_suffix();
  write_files();
  if (options_.background) {
    worker_ = std::jthread([this](std::stop_token stop) { run_in_background(stop); });
  }
}

SlurmLauncher::~SlurmLauncher() { cancel_all(); }

void SlurmLauncher::write_files() {
  const fs::path dir = fs::absolute(options_.work_dir);
  options_.work_dir = dir.string();
  std::error_code error;
  fs::create_directories(dir, error);
  if (error || ::chmod(dir.c_str(), 0700) != 0) {
    throw Error(ErrorCode::kUnavailable,
                "cannot make the directory of the Slurm jobs' files " + dir.string() + ": " +
                    (error ? error.message() : std::string(std::strerror(errno))));
  }
  key_file_ = (dir / "executor.key").string();
  coordinator_key_file_ = (dir / "coordinator.pub").string();
  script_path_ = (dir / "executor.sh").string();
  const CurveKeyPair& keys = options_.executor_keys;
  write_private_file(key_file_,
                     "# tuner CURVE key pair of the sweep's Slurm executors: keep it secret\n"
                     "public-key = \"" +
                         keys.public_key + "\"\nsecret-key = \"" + keys.secret_key + "\"\n",
                     0600);
  write_private_file(coordinator_key_file_,
                     "public-key = \"" + options_.coordinator_public_key + "\"\n", 0644);
  std::string tuner_path = options_.slurm.tuner_path;
  if (tuner_path.empty()) tuner_path = fs::read_symlink("/proc/self/exe", error).string();
  if (tuner_path.empty()) {
    throw Error(ErrorCode::kUnavailable,
                "cannot find the path of this tuner binary for the Slurm jobs; give "
                "executors.slurm.tuner");
  }
  write_private_file(script_path_,
                     slurm_batch_script({.tuner_path = tuner_path,
                                         .connect_endpoint = options_.connect_endpoint,
                                         .slots = options_.slurm.slots,
                                         .key_file = key_file_,
                                         .coordinator_key_file = coordinator_key_file_,
                                         .description = "sweep '" + options_.name + "'"}),
                     0700);
}

void SlurmLauncher::say(const std::string& line) {
  std::lock_guard lock(mutex_);
  pending_log_.push_back("slurm: " + line);
}

void SlurmLauncher::flush_log() {
  std::vector<std::string> lines;
  {
    std::lock_guard lock(mutex_);
    lines.swap(pending_log_);
  }
  if (!options_.log) return;
  for (const std::string& line : lines) options_.log(line);
}

void SlurmLauncher::run_in_background(std::stop_token stop) {
  while (!stop.stop_requested()) {
    LaunchQueueState state;
    {
      std::unique_lock lock(mutex_);
      if (!wake_.wait(lock, stop, [&] { return latest_.has_value(); })) return;
      state = *latest_;
      latest_.reset();
    }
    try {
      step(state);
    } catch (...) {
      std::lock_guard lock(mutex_);
      failure_ = std::current_exception();
      return;
    }
    options_.clock->sleep_until(options_.clock->steady_now() + options_.poll_interval, stop);
  }
}

void SlurmLauncher::tick(const LaunchQueueState& state) {
  if (!options_.background) {
    try {
      step(state);
    } catch (...) {
      flush_log();
      throw;
    }
    flush_log();
    return;
  }
  std::exception_ptr failure;
  {
    std::lock_guard lock(mutex_);
    latest_ = state;
    failure = std::exchange(failure_, nullptr);
  }
  wake_.notify_all();
  flush_log();
  if (failure) std::rethrow_exception(failure);
}

std::string SlurmLauncher::output_tail(const std::string& id) const {
  std::ifstream in(fs::path(options_.work_dir) / ("slurm-" + id + ".out"));
  if (!in) return "";
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!trim(line).empty()) lines.push_back(line);
  }
  const size_t from = lines.size() > kOutputLines ? lines.size() - kOutputLines : 0;
  std::string tail;
  for (size_t i = from; i < lines.size(); ++i) tail += "\n    | " + lines[i];
  return tail;
}

void SlurmLauncher::step(const LaunchQueueState& state) {
  if (stopped_) return;
  const Clock::SteadyTime now = options_.clock->steady_now();
  if (next_look_ && now < *next_look_) return;
  next_look_ = now + options_.poll_interval;
  look_at_queue();

  // A running job's executor is connected when the coordinator knows its id; idle since when
  // it says.
  ScalingInput input{.min_executors = options_.slurm.min_executors,
                     .max_executors = options_.slurm.max_executors,
                     .slots_per_executor = options_.slurm.slots,
                     .idle_grace = options_.slurm.idle_grace,
                     .startable_trials = state.startable_trials,
                     .free_slots = state.free_slots};
  int starting = 0;
  for (Job& job : jobs_) {
    LaunchedJob& launched = input.jobs.emplace_back(LaunchedJob{.id = job.id});
    if (!job.running_since) continue;
    const std::string executor_id = slurm_executor_id(job.id);
    auto executor = std::find_if(state.executors.begin(), state.executors.end(),
                                 [&](const ConnectedExecutor& e) { return e.id == executor_id; });
    if (executor == state.executors.end()) {
      launched.state = LaunchedJob::State::kStarting;
      ++starting;
      continue;
    }
    launched.state = LaunchedJob::State::kRunning;
    job.connected = true;
    if (executor->idle_since) {
      launched.idle_for = std::chrono::duration_cast<std::chrono::seconds>(
          std::max(now - *executor->idle_since, Clock::SteadyTime::duration::zero()));
    }
  }
  if (starting > 0) {
    if (!unconnected_since_) unconnected_since_ = now;
    if (!warned_unconnected_ && now - *unconnected_since_ >= kConnectWarning) {
      warned_unconnected_ = true;
      say(std::to_string(starting) + " running job(s) have not connected to " +
          options_.connect_endpoint + " after " + std::to_string(kConnectWarning.count()) +
          " s: can the nodes reach it? (their output: " + options_.work_dir + "/slurm-*.out)");
    }
  } else {
    unconnected_since_.reset();
  }
  const ScalingDecision decision = decide_scaling(input);
  if (!decision.cancel.empty()) cancel(decision.cancel, "not needed now");
  for (int i = 0; i < decision.submit; ++i) submit();
  record_jobs();
}

void SlurmLauncher::record_jobs() {
  std::vector<SlurmJobStatus> now;
  for (const Job& job : jobs_) now.push_back({job.id, job.state, job.reason});
  {
    std::lock_guard lock(mutex_);
    snapshot_ = now;
  }
  if (recorded_ && now == *recorded_) return;
  try {
    write_slurm_jobs_file(options_.work_dir, {.pid = ::getpid(),
                                              .job_name = job_name_,
                                              .endpoint = options_.connect_endpoint,
                                              .jobs = now});
    recorded_ = std::move(now);
  } catch (const Error& e) {
    say(e.what());  // only tuner status reads it
  }
}

void SlurmLauncher::submit() {
  submitted_any_ = true;
  const std::vector<std::string> argv =
      sbatch_argv(options_.slurm, job_name_, options_.work_dir + "/slurm-%j.out", script_path_);
  CommandOutput out;
  try {
    out = options_.runner->run(argv);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotFound) throw;
    throw Error(ErrorCode::kFailedPrecondition,
                "executors.slurm: cannot run sbatch (" + std::string(e.what()) +
                    "): run the sweep on a host with Slurm's commands (a login node)");
  }
  // --parsable prints "ID" or "ID;CLUSTER".
  const std::string id = trim(out.out.substr(0, out.out.find(';')));
  if (!out.ok() || id.empty() ||
      !std::all_of(id.begin(), id.end(), [](char c) { return std::isdigit(c) || c == '_'; })) {
    const std::string said = one_line(out.err + "\n" + out.out);
    throw Error(ErrorCode::kFailedPrecondition,
                "executors.slurm: Slurm refused the executor job of sweep '" + options_.name +
                    "': " + (said.empty() ? out.status.describe() : said) + " (" +
                    command_text(argv) + ")");
  }
  jobs_.push_back({.id = id, .submitted = options_.clock->steady_now()});
  say("submitted job " + id + " (" + job_name_ + ")");
}

void SlurmLauncher::look_at_queue() {
  if (jobs_.empty()) return;
  const CommandOutput out =
      options_.runner->run({"squeue", "--noheader", "--name=" + job_name_, "--format=%i|%T|%r"});
  if (!out.ok()) {
    say("squeue failed (" + one_line(out.err) + "); trying again");
    return;
  }
  std::vector<std::array<std::string, 3>> listed;
  std::istringstream in(out.out);
  for (std::string line; std::getline(in, line);) {
    line = trim(line);
    const size_t a = line.find('|');
    const size_t b = a == std::string::npos ? a : line.find('|', a + 1);
    if (b == std::string::npos) continue;
    listed.push_back({line.substr(0, a), line.substr(a + 1, b - a - 1), line.substr(b + 1)});
  }
  const Clock::SteadyTime now = options_.clock->steady_now();
  std::vector<Job> kept;
  std::vector<Job> ended;
  for (Job& job : jobs_) {
    auto it = std::find_if(listed.begin(), listed.end(),
                           [&](const auto& row) { return row[0] == job.id; });
    if (it == listed.end()) {
      ended.push_back(job);
      continue;
    }
    job.state = (*it)[1];
    job.reason = (*it)[2];
    const bool running = job.state == "RUNNING" || job.state == "COMPLETING" ||
                         job.state == "SUSPENDED" || job.state == "STOPPED";
    if (running && !job.running_since) {
      job.running_since = now;
      say("job " + job.id + " started");
    } else if (job.state == "PENDING" && job.running_since) {
      // Requeued (preemption, `scontrol requeue`, a node failure): it keeps its id, and its
      // executor rejoins under the same one when the job runs again.
      job.running_since.reset();
      say("job " + job.id + " requeued by Slurm" +
          (job.reason.empty() || job.reason == "None" ? "" : " (" + job.reason + ")") +
          "; it rejoins when it runs");
    }
    kept.push_back(job);
  }
  jobs_ = std::move(kept);
  for (const Job& job : jobs_) {
    if (job.state == "PENDING" && kHopelessReasons.contains(job.reason)) {
      const std::string id = job.id, reason = job.reason;
      cancel({id}, "it cannot start");
      throw Error(ErrorCode::kFailedPrecondition,
                  "executors.slurm: Slurm will not start the executor job " + id + " of sweep '" +
                      options_.name + "': it is pending for reason " + reason +
                      " (squeue); fix executors.slurm (partition, account, time, resources)");
    }
  }
  for (const Job& job : ended) job_ended(job);
}

void SlurmLauncher::job_ended(const Job& job) {
  const CommandOutput out = options_.runner->run({"scontrol", "--oneliner", "show", "job", job.id});
  const std::string line = out.ok() ? one_line(out.out) : "";
  const std::string state = line.empty() ? "ended" : scontrol_field(line, "JobState");
  const std::string reason = scontrol_field(line, "Reason");
  const std::string exit_code = scontrol_field(line, "ExitCode");
  std::optional<std::chrono::seconds> ran = slurm_duration(scontrol_field(line, "RunTime"));
  if (!ran && job.running_since) {
    ran = std::chrono::duration_cast<std::chrono::seconds>(options_.clock->steady_now() -
                                                           *job.running_since);
  }
  // "FAILED (exit code 127:0), reason NonZeroExitCode"
  std::string how = state;
  if (!exit_code.empty() && exit_code != "0:0") how += " (exit code " + exit_code + ")";
  if (!reason.empty() && reason != "None") how += ", reason " + reason;
  // Ending soon after its start is a failure to start only for a job whose executor never
  // connected: a connected one may have been preempted, or stopped, at any time.
  if (!job.connected && (!ran || *ran < kFailFast)) {
    const std::string tail = output_tail(job.id);
    throw Error(ErrorCode::kFailedPrecondition,
                "executors.slurm: the executor job " + job.id + " of sweep '" + options_.name +
                    "' ended " +
                    (ran ? "after " + std::to_string(ran->count()) + " s" : "at once") + ": " +
                    how + "; its output, " + options_.work_dir + "/slurm-" + job.id +
                    ".out:" + (tail.empty() ? " (none)" : tail));
  }
  say("job " + job.id + " ended " + how + "; a new job is submitted when trials wait");
}

void SlurmLauncher::cancel(const std::vector<std::string>& ids, const std::string& why) {
  if (ids.empty()) return;
  std::vector<std::string> argv = {"scancel"};
  argv.insert(argv.end(), ids.begin(), ids.end());
  std::string list;
  for (const std::string& id : ids) list += (list.empty() ? "" : ", ") + id;
  try {
    const CommandOutput out = options_.runner->run(argv);
    if (!out.ok()) say("scancel " + list + " failed: " + one_line(out.err));
  } catch (const Error& e) {
    say("scancel " + list + " failed: " + e.what());
  }
  say("cancelled job" + std::string(ids.size() == 1 ? " " : "s ") + list + " (" + why + ")");
  std::erase_if(jobs_, [&](const Job& job) {
    return std::find(ids.begin(), ids.end(), job.id) != ids.end();
  });
}

void SlurmLauncher::cancel_all() {
  if (worker_.joinable()) {
    worker_.request_stop();
    worker_.join();  // after the command it runs, if any
  }
  if (stopped_) {
    flush_log();
    return;
  }
  stopped_ = true;
  try {
    if (submitted_any_) {
      // By name: every job of this launcher, also one whose sbatch answer was not understood.
      const CommandOutput out = options_.runner->run({"scancel", "--name=" + job_name_});
      std::string list;
      for (const Job& job : jobs_) list += (list.empty() ? "" : ", ") + job.id;
      if (!out.ok()) {
        say("scancel --name=" + job_name_ + " failed: " + one_line(out.err));
      } else if (!list.empty()) {
        say("cancelled job" + std::string(jobs_.size() == 1 ? " " : "s ") + list +
            " (the study's run ended)");
      }
    }
  } catch (const std::exception& e) {
    say(std::string("scancel --name=") + job_name_ + " failed: " + e.what());
  }
  jobs_.clear();
  {
    std::lock_guard lock(mutex_);
    snapshot_.clear();
  }
  remove_slurm_jobs_file(options_.work_dir);
  std::error_code ignored;
  if (!key_file_.empty()) fs::remove(key_file_, ignored);
  flush_log();
}

std::vector<SlurmJobStatus> SlurmLauncher::jobs() const {
  std::lock_guard lock(mutex_);
  return snapshot_;
}

}  // namespace tuner
