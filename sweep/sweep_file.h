// SweepFile: the one JSON file that describes a whole study for `tuner sweep FILE`: the search
// space, the objective, the sampler, the scheduler, the budget, the job, the local executors and
// the export of the best model.
//
//   {"name": "mlp", "space": {"file": "space.json"},
//    "objective": {"metric": "val_accuracy", "direction": "maximize"},
//    "constraints": [{"metric": "epoch_seconds", "max": 30}],
//    "sampler": {"type": "tpe", "seed": 1}, "scheduler": {"type": "asha", "max_resource": 4},
//    "budget": {"trials": 30, "time": "2h"}, "job": {"kind": "engine", ...}}
//
// Every field, its default and the mapping from W&B sweeps, Optuna, Katib and NNI are in
// docs/sweep_file.md. Loading validates everything (the space, every sampler and scheduler
// option, the job through parse_trial_job, an engine job's model on probe trials against its
// dataset) so that a sweep fails before its first trial, not in its tenth. An error is
// Error(kInvalidArgument) whose message is "<file>: <JSON path>: <problem>", e.g. `sweep.json:
// sampler.n_startup_trials: expected an integer >= 0, got -1`; an unknown field at any level is an
// error, so a typo is never silently ignored.
//
// Paths in the file (storage, space files, the export registry, the job's working_dir,
// artifacts_dir and data.dir) are relative to the sweep file's directory. SweepFile holds them
// resolved: that directory joined with the path; the job's paths absolute, since the job runs in
// other processes (a command job's working_dir defaults to the sweep file's directory).
//
// Thread safety: pure functions; a SweepFile is a plain value.
#ifndef TUNER_SWEEP_SWEEP_FILE_H_
#define TUNER_SWEEP_SWEEP_FILE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/metric_constraint.h"
#include "launch/ray_options.h"
#include "launch/slurm_options.h"
#include "search/registry.h"
#include "search/space/search_space.h"
#include "trials/trial_state.h"
#include "tuner/study.h"

namespace tuner {

// The version of the sweep file format this code reads and writes ("version" in the file).
inline constexpr int kSweepFileVersion = 1;

// The sampler section: a sampler of search/registry.h and the study's seed.
struct SamplerConfig : SamplerSpec {
  // The file states `type`. When it does not, a study that exists already keeps the sampler it
  // was created with (open_sweep()): the default of new studies is not theirs.
  bool type_given = false;
  // The study's seed (StudyOptions::seed; trial n draws from Rng::for_trial(seed, n)), so a seed
  // gives the same trials whatever the sampler. Default: drawn when the study is created.
  std::optional<uint64_t> seed;

  // Compares the type and the options of `type` the file can state (not `type_given`, nor
  // TpeOptions' function members).
  bool operator==(const SamplerConfig& other) const;
};

// The scheduler section: a scheduler of search/registry.h.
struct SchedulerConfig : SchedulerSpec {
  // Compares the options of `type` only.
  bool operator==(const SchedulerConfig& other) const;
};

struct Budget {
  // New trials to start (re-runs after lost executors are not counted). Default: unset.
  std::optional<int> trials;
  // The sweep's wall time since it started: then no new trial starts, and the trials still
  // running a grace later (5% of it, at most 30 s) are stopped, stored FAIL and queued to run
  // first when the sweep is resumed (run_sweep). Default: unset. At least one of `trials` and
  // `time` is set.
  std::optional<std::chrono::seconds> time;
  // Each trial's wall-time limit: the job's "timeout_s" (executor/trial_job.h), which the file's
  // job gets from it. Default: unset, no limit.
  std::optional<std::chrono::seconds> trial_time;
  // Trials running at once across all executors (CoordinatorOptions::max_concurrency).
  // Default 0: only the executors' slots limit it.
  int max_concurrent = 0;
  // Failed trials of one run after which the sweep stops, saying why (sweep/failure_policy.h).
  // Default (unset): stop when the run's first 3 trials all fail with the same reason; 0 (null
  // in the file): no limit.
  std::optional<int> max_failures;
  bool operator==(const Budget&) const = default;
};

// MLflow tracking of the sweep's study (docs/tracking.md): the study as a parent run and each
// trial as a child run in an experiment named after it, logged off the coordinator's thread.
struct TrackingConfig {
  // The tracking server, http://HOST:PORT[/PATH]. Required.
  std::string mlflow_uri;
  // The experiment's name. Default (empty): the study's name.
  std::string experiment;
  // Between the passes that send what is new. Default 5 s.
  std::chrono::seconds interval{5};
  // At the end, the best trial's model (engine jobs) as an MLflow model among its run's
  // artifacts. Default true.
  bool log_model = true;
  bool operator==(const TrackingConfig&) const = default;
};

// The export's MLflow model registry: the exported version is registered there too, with its
// run and the file registry's aliases (docs/tracking.md, "The model registry").
struct MlflowExportConfig {
  // The server. Default (empty): tracking's mlflow_uri (the file must have one then).
  std::string uri;
  bool operator==(const MlflowExportConfig&) const = default;
};

// Where the best trial's model goes. The registry itself is not part of this module: this is
// what the file says, validated.
struct ExportConfig {
  // The registry directory, resolved against the sweep file's directory. Required.
  std::string registry_path;
  // The model's name in the registry. Default: the study name.
  std::string model_name;
  // The primary metric, by which the best trial is chosen and the champion decided, and its
  // direction. Default: the (first) objective's. A metric that is no objective's needs its
  // direction stated; an objective's gets that objective's direction.
  std::string metric;
  StudyDirection direction = StudyDirection::kMinimize;
  // Bounds on the trial's metrics that the exported trial and the champion must keep ("limits":
  // the promotion rule's, registry/registry.h RegisterOptions::limits). Default: none.
  std::vector<MetricConstraint> limits;
  // Also register the version in MLflow's model registry. Default: not.
  std::optional<MlflowExportConfig> mlflow;
  bool operator==(const ExportConfig&) const = default;
};

// One objective: a final metric of the job and whether lower or higher is better.
struct SweepObjective {
  std::string metric;
  StudyDirection direction = StudyDirection::kMinimize;
  // "noisy": the same parameters may give another value (StudyOptions::noisy_objective; a study
  // is noisy when one of its objectives is). Default false.
  bool noisy = false;
  bool operator==(const SweepObjective&) const = default;
};

struct SweepFile {
  // The sweep file as given to load_sweep_file() (the `source` of parse_sweep_file()).
  std::string path;
  // The study name. Default: the file's stem ("mlp" for "sweeps/mlp.json").
  std::string name;
  // A free text the file may carry. Default: empty.
  std::string description;
  // The SQLite file of the study, resolved. Default: "<name>.db" beside the sweep file.
  std::string storage_path;
  SearchSpace space;
  // Every objective, in order (at least one once parsed): the one of "objective", or those of
  // "objectives" (a study of several, whose trials are ranked by Pareto dominance).
  std::vector<SweepObjective> objectives;
  // The first objective's metric and direction: the job's objective_metric, what its reports
  // carry and progress lines show. REQUIRES: objectives not empty.
  const std::string& objective_metric() const { return objectives.front().metric; }
  StudyDirection direction() const { return objectives.front().direction; }
  // Bounds on the job's final metrics that a trial must keep to be feasible (its constraint
  // values, in this order; coordinator/metric_constraint.h). Default: none.
  std::vector<MetricConstraint> constraints;
  SamplerConfig sampler;
  SchedulerConfig scheduler;
  Budget budget;
  // The job as JSON (executor/trial_job.h), with "objective_metric" set to objective_metric and
  // its paths resolved (see the top); the text that goes to the coordinator
  // (CoordinatorOptions::job_json). parse_trial_job accepts it.
  std::string job_json;
  // "command" or "engine".
  std::string job_kind;
  // CPU threads one trial uses: the engine job's "threads" (default 1); 1 for command jobs.
  int threads_per_trial = 1;
  // Executor slots `tuner sweep` starts locally when it runs embedded; 0 starts none (executors
  // connect from elsewhere). Default: max(1, hardware threads / threads_per_trial); 0 with `slurm`
  // or `ray`.
  int local_executors = 1;
  // Trials the local executor takes ahead of its free slots (ExecutorOptions::prefetch), to start
  // the moment a slot frees: for trials of a second or less. Default 0. At most local_executors.
  int local_prefetch = 0;
  // The GPU ids the local executor offers ("executors.gpus"; ExecutorOptions::gpus): each must
  // be one the engine finds, unless it finds none, when they are offered as declared (for a
  // command job's "gpus_per_trial"). Default: unset, every GPU the engine finds.
  std::optional<std::vector<int>> local_gpus;
  // Executors started as Slurm batch jobs ("executors.slurm"; launch/slurm_launcher.h). With
  // them, local_executors defaults to 0. Default: none.
  std::optional<SlurmOptions> slurm;
  // Executors started as actors on a Ray cluster ("executors.ray"; launch/ray_launcher.h). With
  // them, local_executors defaults to 0. At most one of slurm and ray. Default: none.
  std::optional<RayOptions> ray;
  std::optional<ExportConfig> export_config;
  std::optional<TrackingConfig> tracking;
  // "warm_start": an earlier study whose finished trials seed the sampler (StudyOptions::
  // warm_start; docs/samplers.md, "Warm start"): its `study`, `storage_path` (resolved; empty:
  // this sweep's own storage) and `allow_other_objective`. Its metric_names are not in the file:
  // make_study_options() gives the objectives'. Default: none.
  std::optional<WarmStartOptions> warm_start;

  // The MLflow server the export registers in: export.mlflow.uri, else tracking's; empty when
  // the export has no "mlflow".
  std::string export_mlflow_uri() const;

  bool operator==(const SweepFile&) const = default;
};

// Reads and parses `path`. Error(kNotFound) naming the file when it does not exist; otherwise as
// parse_sweep_file().
SweepFile load_sweep_file(const std::string& path);

// Parses the JSON text of a sweep file. `path` names it in errors, gives the default study name
// (its stem) and is the base of the relative paths in it (its directory; none for a bare name).
// Files the sweep names (a space file) are read. Throws Error(kInvalidArgument) as described at
// the top, Error(kNotFound) for a missing space file (naming it and the field that names it).
SweepFile parse_sweep_file(std::string_view json, const std::string& path);

// The sampler that `sweep.sampler` describes (a GridSampler over sweep.space for kGrid).
std::shared_ptr<Sampler> make_sampler(const SweepFile& sweep);

// The scheduler that `sweep.scheduler` describes; nullptr for kNone.
std::shared_ptr<Scheduler> make_scheduler(const SweepFile& sweep);

// StudyOptions for the sweep: name, direction, sampler, scheduler, seed and space (define-and-run)
// set; storage left unset for the caller (a SQLite storage at sweep.storage_path), and
// load_if_exists set so that running a sweep again continues its study.
StudyOptions make_study_options(const SweepFile& sweep);

// The JSON text of `sweep`: every field stated (defaults included), the space inline, paths
// relative to the sweep file's directory when they lie under it. parse_sweep_file(to_json(s),
// s.path) == s.
std::string to_json(const SweepFile& sweep);

// Durations as a sweep file writes them: one or more <integer><unit> with units d, h, m, s in
// that order ("90s", "30m", "2h", "1h30m", "1d"), or a bare integer of seconds ("3600").
// Throws Error(kInvalidArgument) with a message (without a path) saying the form expected.
std::chrono::seconds parse_duration(std::string_view text);
// The shortest such text: 5400 s -> "1h30m", 0 -> "0s".
std::string format_duration(std::chrono::seconds duration);

// The options a sampler or scheduler section of `type` takes besides "type", in the order they are
// read and written. One table in sweep_file.cc declares each option (how it is read, compared and
// written); docs/sweep_file.md lists them.
std::vector<std::string_view> sampler_option_names(SamplerType type);
std::vector<std::string_view> scheduler_option_names(SchedulerType type);

}  // namespace tuner

#endif  // TUNER_SWEEP_SWEEP_FILE_H_
