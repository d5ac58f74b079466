// JobSpec: what an executor runs for each trial of a study, as the coordinator sends it (the
// job_json of a TRIAL message) and as a sweep file holds it.
//
// The JSON form of a command job (docs/command_jobs.md, "The job's JSON form"):
//   {"kind": "command",
//    "argv": ["python3", "train.py", "--lr", "{lr}"],   required, non-empty, strings
//    "env": {"OMP_NUM_THREADS": "1"},                   optional, string values
//    "working_dir": "/src",                             optional
//    "objective_metric": "val_loss",                    required: the metric that is the value
//    "timeout_s": 3600,                                 optional: seconds, in (0, 31536000]
//    "stop_grace_s": 30}                                optional: seconds, in [0, 3600]
// Members not listed are refused (a misspelt "evn" would otherwise be silently ignored).
//
// An "engine" job trains one of the engine's own models (executor/engine_job.h,
// docs/engine_jobs.md): {"kind": "engine", "model": {...}, "data": {...}, "training": {...},
// "threads": 1, "backend": "cpu", "artifacts_dir": "...", "objective_metric": "val_accuracy"},
// with the same optional "timeout_s" and "stop_grace_s".
// An executor runs it as a command job (engine_job_command(): `tuner trial --engine-job JSON`).
//
// Time limit (either kind): an executor stops a run still going `timeout_s` after it started
// (SIGTERM to its process group, SIGKILL `stop_grace_s` later) and sends FAIL "timed out after
// ... (the job's timeout_s)"; `stop_grace_s` is the grace of every stop of the job (the time
// limit, a pruning decision, a lease given up, the executor shutting down).
//
// Thread safety: pure functions.
#ifndef TUNER_EXECUTOR_JOB_SPEC_H_
#define TUNER_EXECUTOR_JOB_SPEC_H_

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "executor/command_job.h"
#include "executor/engine_job.h"

namespace tuner {

enum class JobKind {
  kCommand,  // any program (executor/command_job.h)
  kEngine,   // the engine's own training (executor/engine_job.h)
};

struct JobSpec {
  JobKind kind = JobKind::kCommand;
  CommandSpec command;           // kind == kCommand
  EngineJobSpec engine;          // kind == kEngine
  std::string objective_metric;  // the metric whose final value is the trial's objective value
  // "timeout_s": a run's wall-time limit, at least 1 ms. Default: unset, no limit.
  std::optional<std::chrono::milliseconds> timeout;
  // "stop_grace_s": SIGTERM to SIGKILL when the job is stopped. Default: unset, the executor's
  // (ExecutorOptions::stop_grace).
  std::optional<std::chrono::milliseconds> stop_grace;
};

// The longest "timeout_s" (a year) and "stop_grace_s" (an hour), in seconds.
inline constexpr double kMaxJobTimeoutSeconds = 31'536'000;
inline constexpr double kMaxJobStopGraceSeconds = 3'600;

// A duration as a job's messages state it, in seconds: "30 s", "1.5 s", "0.25 s".
std::string seconds_text(std::chrono::milliseconds duration);

// Parses and validates a job. Errors are Error(kInvalidArgument) whose message starts with
// `where` and names the JSON path and what is expected, e.g.
// "job.argv[2]: expected a string, got number" or "job.objective_metric: missing"; an engine
// job's errors are parse_engine_job's.
JobSpec parse_job_spec(std::string_view json, const std::string& where = "job");

// The JSON text of `spec` (parse_job_spec reads it back to an equal spec).
std::string job_spec_to_json(const JobSpec& spec);

}  // namespace tuner

#endif  // TUNER_EXECUTOR_JOB_SPEC_H_
