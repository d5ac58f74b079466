// The MLflow side of `tuner export` and of a sweep's export section: the file registry's version
// registered in an MLflow model registry over the REST API (tracking/mlflow_registry.h), with the
// run of the trial it came from, and the file registry's aliases set there (the file registry
// decides them: its promotion rule moves `champion`). Also what `tuner sync-mlflow --registry`
// does for every version of a study. docs/tracking.md, "The model registry".
//
// Thread safety: as Registry and MlflowClient.
#ifndef TUNER_SWEEP_MLFLOW_EXPORT_H_
#define TUNER_SWEEP_MLFLOW_EXPORT_H_

#include <optional>
#include <string>
#include <vector>

#include "registry/registry.h"
#include "sweep/model_export.h"
#include "sweep/sweep_file.h"
#include "tracking/mlflow_sync.h"

namespace tuner {

// Syncs the request's study to request.mlflow_uri (tracking), then registers `exported` (the
// version export_trial made of trial `trial`) in its model registry and mirrors the model's
// aliases. Throws Error: kNotFound when the trial's run is not in MLflow after the sync, and
// what the client and the syncer throw.
MlflowRegistration register_in_mlflow(const ExportRequest& request,
                                      const std::optional<SweepFile>& sweep, int trial,
                                      const ExportResult& exported,
                                      const registry::Registry& registry,
                                      const registry::RegistryOptions& options);

// Every version in `registry_dir` whose lineage is the syncer's study (its name, and its storage
// when the version records one), registered in the syncer's MLflow server when missing, and each
// such model's aliases mirrored. The study must have been synced (sync.sync()) first. Returns one
// line per model ("fashion-mnist: versions 1, 2 (1 new); aliases champion -> 2").
std::vector<std::string> mirror_registry(const std::string& registry_dir,
                                         const std::string& storage_path,
                                         tracking::MlflowSync& sync,
                                         const registry::RegistryOptions& options = {});

}  // namespace tuner

#endif  // TUNER_SWEEP_MLFLOW_EXPORT_H_
