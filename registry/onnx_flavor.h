// Internal to registry/: the files of an MLflow model of the onnx flavor, which an engine model
// (mlflow_model.h) and a trial's ONNX file (user_model.h) share.
#ifndef TUNER_REGISTRY_ONNX_FLAVOR_H_
#define TUNER_REGISTRY_ONNX_FLAVOR_H_

#include <filesystem>

#include "registry/mlflow_model.h"
#include "trials/json.h"

namespace tuner::registry {

// Writes into `dir` the MLmodel (flavors onnx and python_function, loader mlflow.onnx, for the
// data file model.onnx; `metadata`; `signature` unless it is null), requirements.txt,
// python_env.yaml and conda.yaml. Error(kUnavailable) naming a file that cannot be written.
void write_onnx_flavor_files(const std::filesystem::path& dir, const Json& metadata,
                             const Json& signature, const MlflowModelOptions& options);

// The MLmodel metadata of a model's lineage (study, trial, storage, objective_metric, params,
// metrics), then options.extra_metadata.
Json lineage_metadata(const Lineage& lineage, const MlflowModelOptions& options);

}  // namespace tuner::registry

#endif  // TUNER_REGISTRY_ONNX_FLAVOR_H_
