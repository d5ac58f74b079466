// JobSpec: what an executor runs for each trial of a study, as the coordinator sends it (the
// job_json of a TRIAL message) and as a sweep file holds it.
//
// The JSON form of a command job (docs/command_jobs.md, "The job's JSON form"):
//   {"kind": "command",
//    "argv": ["python3", "train.py", "--lr", "{lr}"],   required, non-empty, strings
//    "env": {"OMP_NUM_THREADS": "1"},                   optional, string values
//    "working_dir": "/src",                             optional
//    "objective_metric": "val_loss"}                    required: the metric that is the value
// Members not listed are refused (a misspelt "evn" would otherwise be silently ignored).
//
// An "engine" job trains one of the engine's own models (executor/engine_job.h,
// docs/engine_jobs.md): {"kind": "engine", "model": {...}, "data": {...}, "training": {...},
// "threads": 1, "backend": "cpu", "artifacts_dir": "...", "objective_metric": "val_accuracy"}.
// An executor runs it as a command job (engine_job_command(): `tuner trial --engine-job JSON`).
//
// Thread safety: pure functions.
#ifndef TUNER_EXECUTOR_JOB_SPEC_H_
#define TUNER_EXECUTOR_JOB_SPEC_H_

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
};

// Parses and validates a job. Errors are Error(kInvalidArgument) whose message starts with
// `where` and names the JSON path and what is expected, e.g.
// "job.argv[2]: expected a string, got number" or "job.objective_metric: missing"; an engine
// job's errors are parse_engine_job's.
JobSpec parse_job_spec(std::string_view json, const std::string& where = "job");

// The JSON text of `spec` (parse_job_spec reads it back to an equal spec).
std::string job_spec_to_json(const JobSpec& spec);

}  // namespace tuner

#endif  // TUNER_EXECUTOR_JOB_SPEC_H_
