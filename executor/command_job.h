// CommandJob: runs any program as a trial (the `command` job kind; docs/command_jobs.md is the
// contract a user's script follows).
//
// Per run, the program gets:
//   argv  the spec's template expanded for the trial (executor/argv_template.h);
//   env   the executor's environment, then the spec's `env`, then
//         TUNER_PARAMS (the parameters as a JSON object, trials/params_json.h), TUNER_TRIAL_ID,
//         TUNER_TRIAL_NUMBER, and TUNER_CHECKPOINT_PATH when the trial has a checkpoint path
//         (TUNER_PAUSE_AT_STEP for a PBT segment);
//   cwd   the spec's working directory (empty: the executor's);
//   stdin /dev/null;
// and runs in its own process group. Its stdout is read line by line (executor/metrics_line.h):
// reports go to the callback in order, a final-metrics line is kept (the last one wins), every
// other line goes to the log; stderr goes to the log. The log is a per-trial file plus its tail.
//
// Ending: the run returns when the program has exited and its output is drained. A callback
// answer of kStop or kPause, a request on the stop token or the time limit sends SIGTERM to the
// process group, then SIGKILL after the grace period. When the program exits, whatever it left
// running in its process group is killed (SIGKILL). No child or zombie outlives run().
//
// Time: grace period and time limit are measured on std::chrono::steady_clock (real time; the
// waits are poll() timeouts, which a fake clock could not drive).
//
// Thread safety: a CommandJob is immutable; run() may be called from several threads at once
// (each run owns its child). The callback is called on the thread that called run().
// Each run reads the executor's environment (environ): do not setenv() while a run starts.
// REQUIRES: the process does not set SIGCHLD to SIG_IGN.
#ifndef TUNER_EXECUTOR_COMMAND_JOB_H_
#define TUNER_EXECUTOR_COMMAND_JOB_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "executor/gpu_memory.h"
#include "trials/param_value.h"
#include "wire/protocol.h"

namespace tuner {

struct CommandSpec {
  std::vector<std::string> argv;           // template, e.g. {"python3", "train.py", "--lr", "{lr}"}
  std::string working_dir;                 // empty: the executor's
  std::map<std::string, std::string> env;  // added to (or replacing) the executor's environment
};

struct CommandJobOptions {
  // After SIGTERM, how long the process group has before SIGKILL. Default 10 s.
  std::chrono::milliseconds stop_grace{10'000};
  // Wall time from the start after which the job is stopped (SIGTERM, grace, SIGKILL).
  // Zero (the default): no limit.
  std::chrono::milliseconds time_limit{0};
  // The per-trial log file, appended to (parent directories are created). Empty (the default):
  // no file, the tail only.
  std::string log_path;
  // The tail kept for FAIL messages: at most this many lines and bytes. Defaults: 50 and 16 KiB.
  size_t log_tail_lines = 50;
  size_t log_tail_bytes = 16 * 1024;
  // A longer stdout/stderr line is cut here (and logged, not parsed). Default 1 MiB.
  size_t max_line_bytes = 1 << 20;
  // When set, sampled every gpu_memory_interval while the program runs, for the peak GPU memory
  // of its process group (CommandOutcome::gpu_memory_peak_bytes). Must outlive run().
  // Default: none.
  GpuMemoryProbe* gpu_memory = nullptr;
  std::chrono::milliseconds gpu_memory_interval = kGpuMemorySampleInterval;
};

// The trial a run is for.
struct CommandTrial {
  int64_t trial_id = -1;
  int number = -1;
  Params params;
  std::optional<std::string> checkpoint_path;  // passed as TUNER_CHECKPOINT_PATH when set
  // A PBT segment's last step (TRIAL's pause_at_step), passed as TUNER_PAUSE_AT_STEP when set.
  std::optional<int64_t> pause_at_step;
};

struct CommandReport {
  int64_t step = 0;
  Metrics metrics;
};

// Called for each report, in order; the answer decides whether the program goes on.
using ReportCallback = std::function<JobDecision(const CommandReport&)>;

struct CommandOutcome {
  std::optional<int> exit_code;    // set when the program exited
  std::optional<int> term_signal;  // set when it was killed by a signal
  // Why it was told to stop, when it was: kStop or kPause from the callback (or kStop from the
  // stop token). Not set for the time limit (see timed_out).
  std::optional<JobDecision> stopped_by;
  bool timed_out = false;
  std::optional<Metrics> final_metrics;      // the last final-metrics line, if any
  std::optional<CommandReport> last_report;  // the last report, if any
  // Of final_metrics and of last_report's metrics: those written as JSON integers.
  std::vector<std::string> final_integers, last_report_integers;
  // The most GPU memory its processes held at a sample (CommandJobOptions::gpu_memory); unset
  // without a probe, or when the probe could never tell.
  std::optional<uint64_t> gpu_memory_peak_bytes;
  int64_t reports = 0;   // reports read
  std::string log_tail;  // the last lines of the log
  std::chrono::milliseconds elapsed{0};

  // Exited with code 0, and was neither stopped nor timed out.
  bool succeeded() const;
  // The trial's metrics: the final-metrics line, or else the last report's metrics, or empty.
  Metrics result_metrics() const;
  // Of result_metrics(): the names written as JSON integers (MetricsLine::integers).
  std::vector<std::string> result_integer_metrics() const;
  // "exited with code 3", "killed by signal 9 (SIGKILL)", "stopped (stop); exited with code 0",
  // "timed out after 5000 ms; killed by signal 15 (SIGTERM)".
  std::string describe() const;
};

class CommandJob {
 public:
  explicit CommandJob(CommandSpec spec, CommandJobOptions options = {});

  // Runs the program for `trial` to its end (see the file comment). `on_report` may be empty
  // (every report continues); `stop` asks for the program to be stopped.
  // Throws Error for what prevents the start, naming it: a bad argv template
  // (kInvalidArgument), a missing program or working directory (kNotFound), a log file that
  // cannot be opened (kUnavailable). Exceptions from the callback propagate after the program has
  // been killed and reaped.
  CommandOutcome run(const CommandTrial& trial, const ReportCallback& on_report = {},
                     std::stop_token stop = {}) const;

  const CommandSpec& spec() const { return spec_; }
  const CommandJobOptions& options() const { return options_; }

 private:
  // Constant after construction.
  const CommandSpec spec_;
  const CommandJobOptions options_;
};

}  // namespace tuner

#endif  // TUNER_EXECUTOR_COMMAND_JOB_H_
