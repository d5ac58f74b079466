// A model the server answers with: the engine's model of an MLflow model directory and where it
// came from (the registry's name and version, when it came from a registry).
#ifndef TUNER_SERVING_LOADED_MODEL_H_
#define TUNER_SERVING_LOADED_MODEL_H_

#include <filesystem>
#include <optional>
#include <string>

#include "registry/mlflow_model.h"

namespace tuner::serving {

struct LoadedModel {
  // Thread safety: forward() from the micro-batcher's thread only; the rest is read-only.
  registry::ServedModel model;
  std::string name;            // the registered model's name, or the directory's name
  std::optional<int> version;  // the registry's version; none for a bare directory
  std::filesystem::path dir;   // the MLflow model directory it was loaded from

  // The version for messages and headers: "3", or "none" outside a registry.
  std::string version_text() const { return version ? std::to_string(*version) : "none"; }
};

}  // namespace tuner::serving

#endif  // TUNER_SERVING_LOADED_MODEL_H_
