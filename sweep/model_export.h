// Export of a study's trial to the model registry: the join of the study database (which trial,
// its params and metrics), the sweep that ran it (where the engine left the trial's checkpoint,
// its weights; the input pipeline of its engine job) and the registry (registry/registry.h),
// which stores what it is given. What `tuner export` and the end of `tuner sweep` run.
//
// Thread safety: as Registry (several processes may export to one registry at once).
#ifndef TUNER_SWEEP_MODEL_EXPORT_H_
#define TUNER_SWEEP_MODEL_EXPORT_H_

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/metric_constraint.h"
#include "executor/engine/job_spec.h"
#include "registry/registry.h"
#include "sweep/sweep_file.h"
#include "trials/frozen_trial.h"

namespace tuner {

struct ExportRequest {
  std::string study;    // the study's name
  std::string storage;  // its SQLite file
  // The trial's number. Default: the best COMPLETE trial by `metric` among those that meet
  // `limits`; in a study of several objectives, from the Pareto front of those
  // (pareto_front_trials, which also leaves out trials that break the sweep's constraints).
  std::optional<int> trial;
  std::string registry_dir;
  std::string model_name;  // default: the study's name
  // The version's evaluation metric, the primary one (promotion compares it; "best" uses it).
  // Default: the sweep's (first) objective metric, else "value" (the trial's first value).
  std::string metric;
  // Its direction. Default: the study's direction for an objective's metric; another metric
  // needs it, except names ending in "accuracy" (maximize) or "loss" (minimize).
  std::optional<bool> maximize;
  // Bounds on the trial's other metrics: the default trial must meet them, and they are the
  // promotion rule's limits (RegisterOptions::limits). Default: none.
  std::vector<MetricConstraint> limits;
  bool promote_if_better = false;  // see RegisterOptions::promote_if_better
  std::vector<std::string> aliases;
  std::string description;
  // The engine checkpoint to export. Default: the sweep's artifact of an engine job's trial
  // (sweep/sweep_runner.h trial_model_path).
  std::string checkpoint;
  // The model a trial's own program saved to export (registry/user_model.h): an MLflow model
  // directory or an .onnx file, a path relative to the trial's folder (its TUNER_ARTIFACTS_DIR)
  // or absolute. Default for a trial that is not an engine job's: the one model in its folder,
  // an MLflow model directory before an .onnx file. Not with `checkpoint`.
  std::string artifact;
  // Also register the version in this MLflow server's model registry (sweep/mlflow_export.h):
  // the study is synced to its tracking first (the trial's run is the version's), the model is
  // uploaded as the run's artifacts and the file registry's aliases are set there. Default: not.
  std::string mlflow_uri;
  // The MLflow experiment of the study's runs. Default: the sweep's tracking.mlflow.experiment,
  // else the study's name.
  std::string mlflow_experiment;
};

// What an exported model of an engine trial (job `spec`, the trial's `config` as
// resolve_engine_job makes it) does to its input, the trial's data pipeline: the loader's scaling
// and the normalization with the statistics of the training split, recomputed from the data; for
// a csv file's model also its columns' encoding and its class labels (Preprocessing::table).
// Throws Error(kNotFound) naming the data when it cannot be read.
registry::Preprocessing engine_preprocessing(const EngineJobSpec& spec,
                                             const EngineTrialConfig& config);

// The version as MLflow's model registry has it.
struct MlflowRegistration {
  std::string tracking_uri;
  std::string model_name;
  std::string version;  // MLflow's number
  std::string run_id;   // the trial's run
  std::string
      source;  // the model's artifacts: mlflow-artifacts:/<experiment>/<run>/artifacts/model
  std::vector<std::string> aliases;  // the aliases it holds there
  bool created = false;              // false: registered by an earlier export
};

struct ExportResult {
  std::string model_name;
  registry::ModelVersion version;  // with its promotion decision, if any
  std::filesystem::path dir;       // DIR/MODEL/<version>
  std::string alias_summary;       // e.g. "champion" or ""; the aliases the version holds
  // With ExportRequest::mlflow_uri: the MLflow registration, or why it failed (the file
  // registry's version stands either way).
  std::optional<MlflowRegistration> mlflow;
  std::string mlflow_error;
};

// The trial an export of `request` takes (the named one, else the best by the metric within the
// limits; see ExportRequest) and what it was chosen by.
struct ExportChoice {
  FrozenTrial trial;
  std::string metric;  // the primary metric, and its direction
  bool maximize = true;
  std::string objective;                  // the sweep's (first) objective metric, else "value"
  std::map<std::string, double> metrics;  // the trial's metrics, its objectives' values included
  std::optional<SweepFile> sweep;         // the sweep that made the study, if one did
};

// Chooses as export_trial does, without reading a checkpoint or writing anything (`tuner report`
// marks the trial a sweep's export rule picks). Throws as export_trial for the choice.
ExportChoice choose_export_trial(const ExportRequest& request);

// Exports one trial (see ExportRequest): an engine job's trial from its checkpoint, any other
// trial's own saved model (Registry::register_user_model). Throws Error naming what is missing:
// kNotFound for an unknown study, trial, no trial to choose (none with a value of the metric, or
// none that meets the limits: the message names them and the best value of each among the
// trials), an engine trial without a checkpoint (saying where it was looked for) or without the
// dataset its normalization needs, or a trial that saved no model (saying what to save where);
// kInvalidArgument for a trial that saved several (naming them: choose one with `artifact`) or an
// `artifact` that is no model; kFailedPrecondition for a trial that is not COMPLETE; what
// Registry::register_version and register_user_model throw.
ExportResult export_trial(const ExportRequest& request,
                          const registry::RegistryOptions& options = {});

// Writes the model of the trial `request` chooses (as export_trial chooses it) as an MLflow model
// directory at `out` (REQUIRES: out's parent exists, out does not), without a registry; returns
// the trial's number. request.registry_dir is not used. Throws as export_trial.
int write_trial_model(const ExportRequest& request, const std::filesystem::path& out);

// The request export_best_of_sweep() makes of `sweep`: its export section's model, metric,
// direction and limits, the promotion rule on. nullopt when the sweep has no export section.
std::optional<ExportRequest> sweep_export_request(const SweepFile& sweep);

// The automatic export at the end of `tuner sweep`: when `sweep` has an "export" section, exports
// the best trial of its study (by export.metric and export.direction, among the trials, or the
// Pareto front of several objectives, that meet export.limits) to export.registry_path as
// export.model_name with the promotion rule on, under the same limits (so the first export
// meeting them becomes champion and later ones only when better), and to MLflow's registry when
// the section has "mlflow". nullopt when the sweep has no export section; throws as export_trial.
std::optional<ExportResult> export_best_of_sweep(const SweepFile& sweep,
                                                 const registry::RegistryOptions& options = {});

}  // namespace tuner

#endif  // TUNER_SWEEP_MODEL_EXPORT_H_
