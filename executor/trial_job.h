// TrialJob: what an executor runs for each trial of a study, as the coordinator sends it (the
// job_json of a TRIAL message) and as a sweep file holds it. One implementation per job kind:
// CommandTrialJob runs any program (executor/command_job.h, docs/command_jobs.md), EngineTrialJob
// trains one of the engine's own models (executor/engine_job.h, docs/engine_jobs.md). Nobody
// outside this file branches on the kind: the coordinator asks a job what placing a trial takes
// (needs()) and where a trial's checkpoint lives (checkpoint_path()), the executor asks it for the
// process of one trial (command()) and why a failed one failed (failure_reason()).
//
// The JSON form of a command job (docs/command_jobs.md, "The job's JSON form"):
//   {"kind": "command",
//    "argv": ["python3", "train.py", "--lr", "{lr}"],   required, non-empty, strings
//    "env": {"OMP_NUM_THREADS": "1"},                   optional, string values
//    "working_dir": "/src",                             optional
//    "objective_metric": "val_loss",                    required: the metric that is the value
//    "timeout_s": 3600,                                 optional: seconds, in (0, 31536000]
//    "stop_grace_s": 30,                                optional: seconds, in [0, 3600]
//    "artifacts_dir": "/runs/study",                    optional: trial-N/ is the trial's folder
//    "gpus_per_trial": 0.5,                             optional: GPUs per trial (below)
//    "gpu_memory_per_trial": "20G"}                     optional: its memory on each (below)
// Members not listed are refused (a misspelt "evn" would otherwise be silently ignored).
//
// An engine job: {"kind": "engine", "model": {...}, "data": {...}, "training": {...},
// "threads": 1, "backend": "cpu", "artifacts_dir": "...", "objective_metric": "val_accuracy"},
// with the same optional "timeout_s" and "stop_grace_s" (every member in docs/engine_jobs.md).
// An executor runs it as a command: `tuner trial --engine-job JSON`.
//
// Time limit (either kind): an executor stops a run still going `timeout_s` after it started
// (SIGTERM to its process group, SIGKILL `stop_grace_s` later) and sends FAIL "timed out after
// ... (the job's timeout_s)"; `stop_grace_s` is the grace of every stop of the job (the time
// limit, a pruning decision, a lease given up, the executor shutting down).
//
// GPUs (command jobs): "gpus_per_trial" is a whole number of GPUs (1, 2, ...) or a share of one
// GPU in (0, 1) (0.5: two trials per GPU; trials of several shares may share one GPU while the
// shares sum to at most 1); 0 or absent: none. The coordinator gives each trial its GPU ids
// (coordinator/placement.h) and the executor sets CUDA_VISIBLE_DEVICES and TUNER_GPUS to them
// (comma-separated); a job without GPUs leaves both as the executor's environment has them.
// "gpu_memory_per_trial" ("20G", "512M": K, M, G, T as Slurm writes them) is the memory a trial
// takes on each of its GPUs: placement puts no more trials on a GPU than its memory holds
// (coordinator/placement.h), and the program gets it as TUNER_GPU_MEMORY_BYTES (to cap its
// allocator, e.g. torch.cuda.set_per_process_memory_fraction). It needs "gpus_per_trial".
//
// Artifacts (either kind): a job with "artifacts_dir" gives each trial its own folder,
// artifacts_dir/trial-<number> (trial_dir()): an engine trial keeps its checkpoints and history
// there; a command trial's program gets it, absolute and created before it starts, as
// TUNER_ARTIFACTS_DIR, and the executor writes its reports there as TensorBoard scalars.
//
// Thread safety: a parsed job is immutable; its methods may be called from any thread.
#ifndef TUNER_EXECUTOR_TRIAL_JOB_H_
#define TUNER_EXECUTOR_TRIAL_JOB_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "executor/command_job.h"
#include "executor/engine_job.h"
#include "trials/param_value.h"

namespace tuner {

// The variable that names a command trial's own folder to its program.
inline constexpr char kArtifactsDirVariable[] = "TUNER_ARTIFACTS_DIR";
// The longest "timeout_s" (a year) and "stop_grace_s" (an hour), in seconds.
inline constexpr double kMaxJobTimeoutSeconds = 31'536'000;
inline constexpr double kMaxJobStopGraceSeconds = 3'600;
// The members of a command job's JSON form.
inline const std::vector<std::string_view> kCommandJobMembers = {
    "kind",      "argv",         "env",           "working_dir",    "objective_metric",
    "timeout_s", "stop_grace_s", "artifacts_dir", "gpus_per_trial", "gpu_memory_per_trial"};
// The variable that gives a command trial's program its job's "gpu_memory_per_trial" in bytes.
inline constexpr char kGpuMemoryVariable[] = "TUNER_GPU_MEMORY_BYTES";
// The most GPUs a command job's trial may ask for ("gpus_per_trial").
inline constexpr int kMaxGpusPerTrial = 1024;

// What placing one trial of a job takes.
struct TrialNeeds {
  int nodes = 1;          // executors that run the trial at once (each with a free slot)
  int gpus_per_node = 0;  // whole GPUs each of them gives the trial
  // A share of one GPU, in (0, 1), that the trial takes when gpus_per_node is 0; 0: none.
  double gpu_fraction = 0;
  uint64_t gpu_memory_bytes = 0;  // memory the trial takes on each of its GPUs; 0: not stated
};

// Where one trial runs on this executor.
struct TrialPlacement {
  int64_t number = -1;    // the trial's number, for messages
  std::vector<int> gpus;  // the GPUs the coordinator gave it (TUNER_GPUS)
  // A multi-node trial (needs().nodes > 1): this executor's node, its copy of the trial's store
  // (executor/node_store.h) and the address its ranks listen on; empty store: one node.
  int node = 0;
  std::string node_store_dir;
  std::string rank_host;
  std::string tuner_path;  // the `tuner` binary, for jobs that run it
};

class TrialJob {
 public:
  virtual ~TrialJob() = default;

  // "command" or "engine", as the JSON form's "kind".
  virtual std::string_view kind() const = 0;

  // The metric whose final value is the trial's objective value.
  const std::string& objective_metric() const { return objective_metric_; }
  // "timeout_s": a run's wall-time limit, at least 1 ms. Unset: no limit.
  const std::optional<std::chrono::milliseconds>& timeout() const { return timeout_; }
  // "stop_grace_s": SIGTERM to SIGKILL when the job is stopped. Unset: the executor's
  // (ExecutorOptions::stop_grace).
  const std::optional<std::chrono::milliseconds>& stop_grace() const { return stop_grace_; }

  // What placing one trial takes. Default: one executor, no GPU.
  virtual TrialNeeds needs() const { return {}; }

  // Where a trial whose first attempt was trial `first_number` keeps its checkpoint, so that its
  // re-runs (after a lost lease, a preemption) resume from it: artifacts_dir/trial-<first
  // number>/resume.ckpt, for either kind (a command trial's program gets it as
  // TUNER_CHECKPOINT_PATH); empty without an artifacts_dir.
  std::string checkpoint_path(int64_t first_number) const;

  // The process that runs one trial placed at `placement`. Throws Error(kInvalidArgument) naming
  // the trial when the job cannot run as placed (a CUDA job given another number of GPUs than
  // its ranks).
  virtual CommandSpec command(const TrialPlacement& placement) const = 0;

  // Why a run that did not succeed failed, from the tail of its output; nullopt when its exit
  // status says it all.
  virtual std::optional<std::string> failure_reason(std::string_view log_tail) const;

  // The parameters whose values decide whether a trial can start at all, which a sweep file
  // checks on probe values at load (sweep/sweep_file.cc), and that check for one set of values:
  // Error(kInvalidArgument) naming the JSON path under `where` when a trial with `params` would
  // fail at its start. Default: none.
  virtual std::vector<std::string> probed_params() const { return {}; }
  virtual void check_probe(const Params& params, const std::string& where) const;

  // The folder where the executor writes trial `number`'s reports as TensorBoard scalars (one
  // event per step; executor/tensorboard_events.h). Empty (the default): none, as for an engine
  // trial, which writes its own.
  virtual std::string scalars_dir(int64_t number) const;

  // The job's "artifacts_dir", the folder of its trials' folders, as the job states it (may be
  // relative to the executor's working directory); empty when it has none.
  virtual const std::string& artifacts_dir() const;
  // Trial `number`'s own folder, artifacts_dir()/trial-<number>; empty without artifacts_dir().
  std::string trial_dir(int64_t number) const;

  // The JSON text of the job; parse_trial_job reads it back to an equal job.
  virtual std::string to_json() const = 0;

 protected:
  std::string objective_metric_;
  std::optional<std::chrono::milliseconds> timeout_;
  std::optional<std::chrono::milliseconds> stop_grace_;

  friend std::unique_ptr<TrialJob> parse_trial_job(std::string_view json, const std::string& where);
};

// Any program, its argv's {name} placeholders filled from the trial (executor/argv_template.h).
class CommandTrialJob final : public TrialJob {
 public:
  // REQUIRES: gpus_per_trial is 0, in (0, 1), or a whole number in [1, kMaxGpusPerTrial];
  // gpu_memory_bytes is 0 when gpus_per_trial is.
  explicit CommandTrialJob(CommandSpec spec, std::string artifacts_dir = {},
                           double gpus_per_trial = 0, uint64_t gpu_memory_bytes = 0)
      : spec_(std::move(spec)),
        artifacts_dir_(std::move(artifacts_dir)),
        gpus_per_trial_(gpus_per_trial),
        gpu_memory_bytes_(gpu_memory_bytes) {}
  std::string_view kind() const override { return "command"; }
  // One executor; "gpus_per_trial" whole GPUs on it, or a share of one.
  TrialNeeds needs() const override;
  // The spec, with CUDA_VISIBLE_DEVICES and TUNER_GPUS set to the placement's GPUs when the job
  // asks for GPUs (and TUNER_GPU_MEMORY_BYTES when it states their memory), and, with
  // artifacts_dir, TUNER_ARTIFACTS_DIR set to the trial's folder (trial_dir(), made absolute
  // against the executor's working directory), which it creates when missing. Throws
  // Error(kInvalidArgument) naming the trial when it asks for GPUs and was given none, or another
  // number of whole GPUs than it asks for; Error(kUnavailable) naming the folder when it cannot be
  // created.
  CommandSpec command(const TrialPlacement& placement) const override;
  // artifacts_dir/trial-N; none without artifacts_dir.
  std::string scalars_dir(int64_t number) const override;
  const std::string& artifacts_dir() const override { return artifacts_dir_; }
  std::string to_json() const override;

  const CommandSpec& spec() const { return spec_; }
  // "gpus_per_trial": 0 (none), a share in (0, 1), or a whole number.
  double gpus_per_trial() const { return gpus_per_trial_; }

 private:
  CommandSpec spec_;
  std::string artifacts_dir_;
  double gpus_per_trial_ = 0;
  uint64_t gpu_memory_bytes_ = 0;
};

// The engine's own training: `tuner trial --engine-job JSON` for each trial.
class EngineTrialJob final : public TrialJob {
 public:
  explicit EngineTrialJob(EngineJobSpec spec) : spec_(std::move(spec)) {}
  std::string_view kind() const override { return "engine"; }
  // "nodes" executors; with backend cuda, ranks / nodes GPUs on each.
  TrialNeeds needs() const override;
  CommandSpec command(const TrialPlacement& placement) const override;
  // The last "error: ..." line `tuner trial` wrote (engine_trial_error).
  std::optional<std::string> failure_reason(std::string_view log_tail) const override;
  // The model's placeholders, checked by check_engine_model.
  std::vector<std::string> probed_params() const override;
  void check_probe(const Params& params, const std::string& where) const override;
  const std::string& artifacts_dir() const override { return spec_.artifacts_dir; }
  std::string to_json() const override { return spec_.json; }

  const EngineJobSpec& spec() const { return spec_; }

 private:
  EngineJobSpec spec_;
};

// A duration as a job's messages state it, in seconds: "30 s", "1.5 s", "0.25 s".
std::string seconds_text(std::chrono::milliseconds duration);

// Parses and validates a job. Errors are Error(kInvalidArgument) whose message starts with
// `where` and names the JSON path and what is expected, e.g.
// "job.argv[2]: expected a string, got number" or "job.objective_metric: missing"; an engine
// job's errors are parse_engine_job's.
std::unique_ptr<TrialJob> parse_trial_job(std::string_view json, const std::string& where = "job");

}  // namespace tuner

#endif  // TUNER_EXECUTOR_TRIAL_JOB_H_
