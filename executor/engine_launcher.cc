#include "executor/engine_launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>

#include "executor/child_process.h"
#include "executor/node_store.h"
#include "training/distributed/communicator.h"
#include "training/distributed/nccl_communicator.h"
#include "trials/error.h"
#include "trials/params_json.h"

extern char** environ;

namespace tuner {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// How long rank 0, having failed, waits for a dead peer to be noticed, so that the error names
// the rank that died first rather than rank 0's failed collective.
constexpr auto kFailureSettle = std::chrono::seconds(1);
// How often the monitor looks at the ranks when nothing wakes it.
constexpr int kPollMs = 50;

// A fresh directory, removed (with what the ranks wrote there) when this goes away.
class TempDir {
 public:
  TempDir(const std::string& parent, const std::string& where) {
    const fs::path base = parent.empty() ? fs::temp_directory_path() : fs::path(parent);
    std::string pattern = (base / "tuner-rendezvous-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw Error(ErrorCode::kUnavailable, where + ": cannot make a rendezvous directory in " +
                                               base.string() + ": " + std::strerror(errno));
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Ranks 1..N-1 as child processes, watched by a thread of their own that forwards their output
// and notices the first that fails.
// Thread safety: kill(), failure() and the waits may be called from any thread.
class RankProcesses {
 public:
  // children[i] is rank first_rank + i. on_failure is called once, on the monitor thread, when a
  // rank fails (after the others were told to die).
  RankProcesses(std::vector<ChildProcess> children, int first_rank, int world,
                std::function<void(const std::string&)> log, std::function<void()> on_failure)
      : children_(std::move(children)),
        first_rank_(first_rank),
        world_(world),
        log_(std::move(log)),
        on_failure_(std::move(on_failure)),
        running_(static_cast<int>(children_.size())),
        ended_(children_.size(), false) {
    thread_ = std::jthread([this] { monitor(); });
  }
  // Kills what still runs and waits for the monitor.
  ~RankProcesses() {
    kill();
    thread_.join();
  }
  RankProcesses(const RankProcesses&) = delete;
  RankProcesses& operator=(const RankProcesses&) = delete;

  // SIGKILL to every rank still running; their ends are not failures.
  void kill() { kill_requested_ = true; }

  // "rank 1 of 2 exited with code 3" for the first rank that failed, if any, followed by its
  // reason when its stderr gave one ("...: trial 3: job.data: ...").
  std::optional<std::string> failure() const {
    std::lock_guard lock(mutex_);
    return failure_;
  }

  // Waits until a rank failed or every rank ended, at most `timeout`.
  void wait_for_failure(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, timeout, [&] { return failure_ || running_ == 0; });
  }

  // Waits until every rank ended, at most `timeout`; then kills the rest (a failure naming the
  // first that had to be killed) and waits for them.
  void wait_all(std::chrono::milliseconds timeout, const std::string& why_late) {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, timeout, [&] { return running_ == 0; })) {
      if (!failure_ && !kill_requested_) {
        for (size_t i = 0; i < ended_.size(); ++i) {
          if (ended_[i]) continue;
          failure_ = "rank " + std::to_string(first_rank_ + static_cast<int>(i)) + " of " +
                     std::to_string(world_) + " " + why_late;
          break;
        }
      }
      kill_requested_ = true;
      changed_.wait(lock, [&] { return running_ == 0; });
    }
  }

 private:
  struct Output {
    std::string partial;     // a line not yet ended
    std::string last_error;  // the message of its last "error: " line (`tuner trial`'s failure)
  };

  // Forwards one line of rank `rank`'s output, keeping the message of an "error: " line.
  void forward(int rank, Output& out, std::string line) {
    constexpr std::string_view kError = "error: ";
    if (line.starts_with(kError)) out.last_error = line.substr(kError.size());
    log_("rank " + std::to_string(rank) + ": " + line);
  }

  // Forwards what `fd` holds (until it would block); false at end of file.
  bool drain(UniqueFd& fd, int rank, Output& out) {
    char buffer[4096];
    while (true) {
      const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
      if (n > 0) {
        out.partial.append(buffer, static_cast<size_t>(n));
        size_t at = 0, end;
        while ((end = out.partial.find('\n', at)) != std::string::npos) {
          forward(rank, out, out.partial.substr(at, end - at));
          at = end + 1;
        }
        out.partial.erase(0, at);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      if (!out.partial.empty()) forward(rank, out, out.partial);
      out.partial.clear();
      fd.reset();
      return false;
    }
  }

  void monitor() {
    const size_t n = children_.size();
    std::vector<Output> outputs(2 * n);
    bool killed = false;
    int left = static_cast<int>(n);
    while (left > 0) {
      std::vector<pollfd> fds;
      for (ChildProcess& c : children_) {
        if (c.reaped()) continue;
        for (UniqueFd* fd : {&c.stdout_fd(), &c.stderr_fd()}) {
          if (fd->valid()) fds.push_back({fd->get(), POLLIN, 0});
        }
        if (c.exit_fd().valid()) fds.push_back({c.exit_fd().get(), POLLIN, 0});
      }
      ::poll(fds.data(), fds.size(), kPollMs);
      if (kill_requested_ && !killed) {
        for (ChildProcess& c : children_) c.signal_group(SIGKILL);
        killed = true;
      }
      for (size_t i = 0; i < n; ++i) {
        ChildProcess& c = children_[i];
        const int rank = first_rank_ + static_cast<int>(i);
        if (c.reaped()) continue;
        if (c.stdout_fd().valid()) drain(c.stdout_fd(), rank, outputs[2 * i]);
        if (c.stderr_fd().valid()) drain(c.stderr_fd(), rank, outputs[2 * i + 1]);
        const std::optional<ExitStatus> status = c.try_wait();
        if (!status) continue;
        // Its last words: the pipes hold all it wrote.
        if (c.stdout_fd().valid()) drain(c.stdout_fd(), rank, outputs[2 * i]);
        if (c.stderr_fd().valid()) drain(c.stderr_fd(), rank, outputs[2 * i + 1]);
        --left;
        bool failed = false;
        {
          std::lock_guard lock(mutex_);
          --running_;
          ended_[i] = true;
          if (status->exit_code != 0 && !kill_requested_ && !failure_) {
            // The rank's own reason, when it gave one (a `tuner trial` rank's "error: ...").
            const std::string& why = outputs[2 * i + 1].last_error;
            failure_ = "rank " + std::to_string(rank) + " of " + std::to_string(world_) + " " +
                       status->describe() + (why.empty() ? std::string() : ": " + why);
            kill_requested_ = true;
            failed = true;
          }
        }
        changed_.notify_all();
        if (failed) on_failure_();
      }
    }
  }

  // Constant after construction.
  std::vector<ChildProcess> children_;  // used by the monitor thread only
  const int first_rank_;
  const int world_;
  const std::function<void(const std::string&)> log_;
  const std::function<void()> on_failure_;
  std::atomic<bool> kill_requested_{false};

  // State below is protected by mutex_.
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int running_;
  std::optional<std::string> failure_;
  std::vector<bool> ended_;  // by rank - first_rank_

  std::jthread thread_;  // last: it starts after the members above
};

// `base` with each of `vars` set (replacing a namesake).
std::vector<std::string> with_vars(const std::vector<std::string>& base,
                                   const std::map<std::string, std::string>& vars) {
  std::vector<std::string> env;
  for (const std::string& entry : base) {
    const std::string name = entry.substr(0, entry.find('='));
    if (!vars.contains(name)) env.push_back(entry);
  }
  for (const auto& [name, value] : vars) env.push_back(name + "=" + value);
  return env;
}

// The run's NCCL id: made here on node 0 (this process stays up as rank 0) and, with several
// nodes, published in the node store for the others; read from the node store on other nodes.
std::string node_nccl_id(const EngineJobSpec& spec, const EngineLaunchOptions& options,
                         const std::string& where, std::stop_token stop) {
  if (options.node == 0) {
    std::string id;
    try {
      id = training::nccl_new_unique_id();
    } catch (const training::CommunicatorError& e) {
      throw Error(ErrorCode::kUnavailable,
                  where + ".ranks: cannot make the NCCL id of the run: " + e.what());
    }
    if (spec.nodes > 1) write_node_store_key(options.node_store_dir, kNcclIdKey, id);
    return id;
  }
  const auto timeout = std::chrono::milliseconds(
      static_cast<int64_t>(std::llround(spec.collective_timeout_s * 1000.0)));
  const auto deadline = Clock::now() + timeout;
  while (!stop.stop_requested()) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    std::optional<std::string> id = wait_node_store_key(
        options.node_store_dir, kNcclIdKey,
        std::clamp(left, std::chrono::milliseconds(0), std::chrono::milliseconds(kPollMs)));
    if (id) return *id;
    if (Clock::now() >= deadline) break;
  }
  throw Error(ErrorCode::kUnavailable,
              where + ".nodes: node " + std::to_string(options.node) +
                  ": the NCCL id of rank 0 (node 0) did not come through the coordinator" +
                  (stop.stop_requested() ? " before the trial was stopped"
                                         : " within collective_timeout_s (" +
                                               std::to_string(timeout.count()) + " ms)"));
}

std::vector<std::string> own_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

}  // namespace

EngineOutcome launch_engine_trial(const EngineJobSpec& spec, const EngineTrial& trial,
                                  const EngineLaunchOptions& options,
                                  const EngineReportCallback& on_report, std::stop_token stop) {
  const std::string where =
      trial.number >= 0 ? "trial " + std::to_string(trial.number) + ": job" : std::string("job");
  const std::vector<int> gpus = engine_rank_gpus(spec, options.gpus, where);
  const int node_ranks = spec.ranks / spec.nodes;
  const int first_rank = options.node * node_ranks;  // this process's rank
  if (spec.nodes > 1 &&
      (options.node < 0 || options.node >= spec.nodes || options.node_store_dir.empty())) {
    throw Error(ErrorCode::kInvalidArgument,
                where + ".nodes: node " + std::to_string(options.node) + " of " +
                    std::to_string(spec.nodes) +
                    " needs 0 <= node < nodes and the node's store directory (TUNER_NODE, "
                    "TUNER_NODE_STORE: the executor sets them)");
  }
  EngineTrial rank0 = trial;
  rank0.rank = first_rank;
  rank0.world = spec.ranks;
  if (!gpus.empty()) rank0.gpu = gpus[0];
  if (spec.ranks == 1) return run_engine_trial(spec, rank0, on_report, stop);

  // A trial whose values do not fit fails here, before any rank starts.
  resolve_engine_job(spec, trial.params, where);
  const int world = spec.ranks;
  std::optional<TempDir> rendezvous;
  std::map<std::string, std::string> vars = {{"TUNER_PARAMS", params_to_json(trial.params)},
                                             {"TUNER_LAUNCHER_PID", std::to_string(::getpid())}};
  if (trial.number >= 0) vars["TUNER_TRIAL_NUMBER"] = std::to_string(trial.number);
  if (trial.checkpoint_path) vars["TUNER_CHECKPOINT_PATH"] = *trial.checkpoint_path;
  if (spec.backend == "cuda") {
    std::string list;
    for (int g : gpus) list += (list.empty() ? "" : ",") + std::to_string(g);
    vars["TUNER_GPUS"] = list;
    rank0.nccl_id = node_nccl_id(spec, options, where, stop);
    vars["TUNER_NCCL_ID"] = rank0.nccl_id;
  } else if (spec.nodes > 1) {
    rank0.node_store_dir = options.node_store_dir;
    rank0.rank_host = options.rank_host;
    vars["TUNER_RANK_HOST"] = options.rank_host;
  } else {
    rendezvous.emplace(options.rendezvous_parent, where + ".ranks");
    rank0.rendezvous_dir = rendezvous->path();
  }

  std::string tuner_path = options.tuner_path;
  if (tuner_path.empty()) {
    std::error_code ec;
    tuner_path = fs::read_symlink("/proc/self/exe", ec).string();
    if (ec) {
      throw Error(
          ErrorCode::kUnavailable,
          where + ".ranks: cannot resolve /proc/self/exe to launch the ranks: " + ec.message());
    }
  }
  const std::vector<std::string> env =
      with_vars(options.env ? *options.env : own_environment(), vars);
  std::vector<ChildProcess> children;
  for (int r = first_rank + 1; r < first_rank + node_ranks; ++r) {
    SpawnOptions spawn;
    spawn.argv = {tuner_path, "trial",           "--engine-job", spec.json,
                  "--rank",   std::to_string(r), "--world",      std::to_string(world)};
    if (rendezvous) {
      spawn.argv.push_back("--rendezvous");
      spawn.argv.push_back(rendezvous->path());
    } else if (!rank0.node_store_dir.empty()) {
      spawn.argv.push_back("--node-store");
      spawn.argv.push_back(rank0.node_store_dir);
    }
    spawn.env = env;
    try {
      children.push_back(ChildProcess::spawn(spawn));
    } catch (const Error& e) {
      // The ranks started so far die with `children`.
      throw Error(ErrorCode::kUnavailable,
                  where + ": cannot start rank " + std::to_string(r) + ": " + e.what());
    }
  }

  std::stop_source rank0_stop;
  auto log =
      options.log ? options.log : [](const std::string& line) { std::cerr << line << std::endl; };
  RankProcesses ranks(std::move(children), first_rank + 1, world, log,
                      [&] { rank0_stop.request_stop(); });
  std::stop_callback on_stop(stop, [&] {
    ranks.kill();
    rank0_stop.request_stop();
  });

  EngineOutcome outcome;
  std::exception_ptr rank0_error;
  std::string rank0_what;
  try {
    outcome = run_engine_trial(spec, rank0, on_report, rank0_stop.get_token());
  } catch (const std::exception& e) {
    rank0_error = std::current_exception();
    rank0_what = e.what();
  }
  if (rank0_error) ranks.wait_for_failure(kFailureSettle);
  if (rank0_error || outcome.end_reason == "interrupted") ranks.kill();
  // Ranks that completed end with rank 0 (their last collective is rank 0's); give a slow one
  // the collective timeout.
  const auto timeout = std::chrono::milliseconds(
      static_cast<int64_t>(std::llround(spec.collective_timeout_s * 1000.0)));
  ranks.wait_all(
      timeout, "did not end within collective_timeout_s after rank " + std::to_string(first_rank));
  const std::optional<std::string> failure = ranks.failure();
  if (failure && !stop.stop_requested()) {
    throw Error(ErrorCode::kUnavailable,
                where + ": " + *failure + "; the other ranks were stopped" +
                    (rank0_error ? " (rank " + std::to_string(first_rank) + ": " + rank0_what + ")"
                                 : std::string()));
  }
  if (rank0_error) std::rethrow_exception(rank0_error);
  return outcome;
}

}  // namespace tuner
