#include "sweep/sweep_tracking.h"

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "sweep/model_export.h"
#include "sweep/sweep_runner.h"
#include "sweep/trial_folder.h"
#include "tracking/mlflow_registry.h"
#include "trials/error.h"

namespace tuner {

namespace fs = std::filesystem;

tracking::MlflowSyncOptions mlflow_sync_options(const SweepFile& sweep,
                                                const std::string& tracking_uri) {
  tracking::MlflowSyncOptions o;
  o.tracking_uri = tracking_uri;
  if (sweep.tracking) o.experiment = sweep.tracking->experiment;
  for (const SweepObjective& objective : sweep.objectives)
    o.objective_metrics.push_back(objective.metric);
  for (const MetricConstraint& c : sweep.constraints) {
    o.constraint_names.push_back(c.metric +
                                 (c.bound == MetricConstraint::Bound::kMax ? ".max" : ".min"));
  }
  o.artifacts_dir = job_artifacts_dir(sweep);
  // The study run's params: what the sweep was (MLflow shows them beside its trials' runs).
  const nlohmann::json file = nlohmann::json::parse(to_json(sweep));
  auto param = [&](const std::string& key, const nlohmann::json& value) {
    o.study_params.push_back({key, value.is_string() ? value.get<std::string>() : value.dump()});
  };
  param("objectives", file.contains("objectives") ? file["objectives"]
                                                  : nlohmann::json::array({file["objective"]}));
  param("sampler", file["sampler"]);
  param("scheduler", file["scheduler"]);
  param("budget", file["budget"]);
  param("space", file["space"]);
  if (file.contains("constraints")) param("constraints", file["constraints"]);
  param("job.kind", sweep.job_kind);
  param("storage", fs::absolute(sweep.storage_path).string());
  o.description = sweep.description;
  return o;
}

std::string sync_mlflow_command(const SweepFile& sweep, const std::string& tracking_uri) {
  return "tuner sync-mlflow --study " + sweep.name + " --storage " + sweep.storage_path +
         " --tracking-uri " + tracking_uri;
}

SweepTracking::SweepTracking(const SweepFile& sweep, std::function<void(const std::string&)> warn)
    : sweep_(sweep), warn_(std::move(warn)) {
  if (!sweep_.tracking) return;
  auto say = [this](const std::string& line) {
    if (warn_) warn_(line);
  };
  try {
    storage_ = std::make_unique<SqliteStorage>(sweep_.storage_path,
                                               SqliteStorageOptions{.read_only = true});
    tracking::MlflowSyncOptions o = mlflow_sync_options(sweep_, sweep_.tracking->mlflow_uri);
    if (o.artifacts_dir.empty()) {
      // A sweep file as given (a study submitted to tuner serve): its trials' folders are where
      // the stored sweep, which runs them, says.
      o.artifacts_dir = job_artifacts_dir(stored_sweep(sweep_.name, sweep_.storage_path));
    }
    o.state_path = sweep_.storage_path;
    o.warn = say;
    sync_ = std::make_unique<tracking::MlflowSync>(*storage_, sweep_.name, std::move(o));
    background_ = std::make_unique<tracking::BackgroundSync>(
        *sync_, tracking::BackgroundSyncOptions{
                    .interval = sweep_.tracking->interval,
                    .warn = say,
                    .catch_up_hint = sync_mlflow_command(sweep_, sweep_.tracking->mlflow_uri)});
  } catch (const std::exception& e) {
    say(std::string("MLflow tracking is off for this run: ") + e.what());
    background_.reset();
    sync_.reset();
    storage_.reset();
  }
}

SweepTracking::~SweepTracking() { finish(tracking::RunStatus::kFailed); }

void SweepTracking::finish(tracking::RunStatus status) {
  if (finished_ || !background_) return;
  finished_ = true;
  const bool caught_up = background_->finish(status);
  if (caught_up && sweep_.tracking->log_model) log_best_model();
}

void SweepTracking::log_best_model() {
  if (sweep_.job_kind != "engine" || sweep_.objectives.size() != 1) return;
  if (!sweep_.export_mlflow_uri().empty()) return;  // the export uploads the version it registers
  ExportRequest request;
  request.study = sweep_.name;
  request.storage = sweep_.storage_path;
  request.metric = sweep_.objective_metric();
  request.maximize = sweep_.direction() == StudyDirection::kMaximize;
  request.limits = sweep_.constraints;
  const fs::path dir = fs::temp_directory_path() /
                       ("tuner-mlflow-model-" + std::to_string(::getpid()) + "-" + sweep_.name);
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  try {
    const int trial = write_trial_model(request, dir);
    const std::optional<tracking::RunRecord> record = sync_->record(trial);
    if (!record)
      throw Error(ErrorCode::kNotFound, "trial " + std::to_string(trial) + " has no run");
    const tracking::MlflowRun run = sync_->client().get_run(record->run_id);
    tracking::upload_directory(sync_->client(), run, dir, tracking::kModelArtifactPath);
    sync_->client().log_batch(record->run_id, {}, {}, {{"tuner.model", "best"}});
  } catch (const std::exception& e) {
    if (warn_)
      warn_(std::string("MLflow tracking: the best trial's model was not logged: ") + e.what());
  }
  fs::remove_all(dir, ignored);
}

}  // namespace tuner
