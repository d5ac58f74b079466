// SlurmLauncher: starts a study's executors as Slurm batch jobs and keeps their number fitted to
// the work (docs/clusters.md).
//
// Constructing it writes, in `work_dir` (mode 0700): the executors' key pair (executor.key, mode
// 0600), the coordinator's public key (coordinator.pub) and the batch script (executor.sh,
// slurm_batch.h); the jobs' output goes to slurm-<job id>.out there. The directory must be one
// that the cluster's nodes read (a shared file system).
//
// Each tick() (called from the coordinator's loop with its queue state) hands the state to a
// thread of the launcher's own, which looks at the queue at most every poll_interval (squeue, and
// scontrol for the jobs that left it) and then submits (sbatch --parsable) and cancels (scancel)
// by decide_scaling (launch/scaling.h), so that a slow slurmctld never holds up the coordinator's
// heartbeats. It keeps between
// min_executors and max_executors jobs, more while trials wait for slots, fewer when executors
// stay idle. cancel_all() and the destructor cancel every job still queued or running and remove
// the key files, so a study that ends, fails or is interrupted leaves nothing on the cluster.
// What it last saw of its jobs is in work_dir/jobs.json (launch/slurm_jobs_file.h) while it runs.
//
// The log lines and errors of that thread reach the caller at its next tick(), on its thread.
//
// Errors: a job that Slurm refuses (sbatch's error: a bad partition, an unknown account), that
// waits for a reason that never passes (BadConstraints, InvalidAccount, ...), or that ends within
// a minute of its start before its executor connected (its program failed: a tuner binary
// missing on the node, a bad key) is thrown from tick() as Error(kFailedPrecondition) with
// Slurm's words and the end of the job's output; a job that ends otherwise (its time limit,
// preemption) is said through `log` and replaced as needed, and one that Slurm requeues is said
// and kept (its executor rejoins under the same id).
// squeue failing (slurmctld busy) is said through `log` and tried again.
//
// Thread safety: one thread (the coordinator loop's) calls its methods; its own thread is
// internal.
#ifndef TUNER_LAUNCH_SLURM_LAUNCHER_H_
#define TUNER_LAUNCH_SLURM_LAUNCHER_H_

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "launch/command_runner.h"
#include "launch/scaling.h"
#include "launch/slurm_jobs_file.h"
#include "launch/slurm_options.h"
#include "trials/clock.h"
#include "wire/curve_keys.h"

namespace tuner {

struct SlurmLauncherOptions {
  SlurmOptions slurm;
  // The coordinator's address as the nodes reach it, tcp://HOST:PORT. Required.
  std::string connect_endpoint;
  // The coordinator's CURVE public key and the key pair its executors connect with (one of the
  // coordinator's executor_keys). Required.
  std::string coordinator_public_key;
  CurveKeyPair executor_keys;
  // Where the key files, the script and the jobs' output go; created. Required.
  std::string work_dir;
  // Whom the executors serve, in messages and in the jobs' name ("tuner-<name>-<random>"):
  // the study's name.
  std::string name;
  // sbatch, squeue, scontrol and scancel. Default: system_command_runner().
  std::shared_ptr<CommandRunner> runner;
  // Default: the system clock.
  std::shared_ptr<Clock> clock;
  // The least time between two looks at the queue. Default 2 s.
  std::chrono::milliseconds poll_interval{2000};
  // What the launcher does (jobs submitted, started, cancelled, ended), one line each, called on
  // the thread of tick() and cancel_all(). Default: none.
  std::function<void(const std::string&)> log;
  // Look at the queue, submit and cancel on a thread of the launcher's (true), or within tick()
  // (false: for tests, whose fake commands answer at once). Default true.
  bool background = true;
};

class SlurmLauncher {
 public:
  // Writes the files. Throws Error(kInvalidArgument) for options that cannot work (no endpoint,
  // bounds out of order) and Error(kUnavailable) when a file cannot be written.
  explicit SlurmLauncher(SlurmLauncherOptions options);
  // cancel_all(); never throws.
  ~SlurmLauncher();
  SlurmLauncher(const SlurmLauncher&) = delete;
  SlurmLauncher& operator=(const SlurmLauncher&) = delete;

  // Hands `state` over for the next look at the queue (in the background; within this call
  // without), says the lines logged since the last tick, and throws the error that stopped the
  // launcher, once (see the top).
  void tick(const LaunchQueueState& state);

  // Cancels every job still queued or running (scancel) and removes the key files. Later
  // ticks submit nothing. Never throws: a failure is said through `log`.
  void cancel_all();

  // The jobs in the queue at the last look, oldest first.
  std::vector<SlurmJobStatus> jobs() const;
  // The job name every job of this launcher has (squeue --name).
  const std::string& job_name() const { return job_name_; }
  const std::string& work_dir() const { return options_.work_dir; }

 private:
  struct Job {
    std::string id;
    std::string state = "PENDING";
    std::string reason;
    Clock::SteadyTime submitted;
    std::optional<Clock::SteadyTime> running_since;  // reset when Slurm requeues it
    bool connected = false;  // its executor has been seen connected to the coordinator
  };

  // Looks at the queue when poll_interval has passed since the last look, then submits and
  // cancels. Throws as described at the top.
  void step(const LaunchQueueState& state);
  void run_in_background(std::stop_token stop);
  // Says the lines logged so far.
  void flush_log();
  void write_files();
  void look_at_queue();
  // A job that left the queue without being cancelled here: said, or thrown.
  void job_ended(const Job& job);
  void submit();
  void cancel(const std::vector<std::string>& ids, const std::string& why);
  std::string output_tail(const std::string& id) const;
  void say(const std::string& line);
  // Writes jobs.json when the jobs changed since it was last written.
  void record_jobs();

  // Constant after construction.
  SlurmLauncherOptions options_;
  std::string job_name_;
  std::string script_path_;
  std::string key_file_;
  std::string coordinator_key_file_;

  std::vector<Job> jobs_;                                // oldest first
  std::optional<std::vector<SlurmJobStatus>> recorded_;  // what jobs.json holds
  std::optional<Clock::SteadyTime> next_look_;
  std::optional<Clock::SteadyTime> unconnected_since_;
  bool warned_unconnected_ = false;
  bool submitted_any_ = false;
  bool stopped_ = false;

  // Shared with the background thread: state below is protected by mutex_.
  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  std::optional<LaunchQueueState> latest_;  // the last tick's, not yet looked at
  std::exception_ptr failure_;              // what stopped the background thread
  std::vector<std::string> pending_log_;
  std::vector<SlurmJobStatus> snapshot_;  // jobs() after the last look
  std::jthread worker_;                   // last: it stops first
};

}  // namespace tuner

#endif  // TUNER_LAUNCH_SLURM_LAUNCHER_H_
