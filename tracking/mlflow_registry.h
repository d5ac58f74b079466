// The MLflow side of a model version: the model directory as an artifact of the trial's run
// (uploaded through the tracking server's artifact proxy), the version in MLflow's model registry
// (registered-models/create, model-versions/create with the run and the artifacts as its source),
// and the aliases kept in step with the file registry's (registry/registry.h), which decides them.
// Everything here may be repeated: a version already mirrored (its tag tuner.registry_version) is
// found, not made again. docs/tracking.md, "The model registry".
//
// Thread safety: as MlflowClient.
#ifndef TUNER_TRACKING_MLFLOW_REGISTRY_H_
#define TUNER_TRACKING_MLFLOW_REGISTRY_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tracking/mlflow_client.h"

namespace tuner::tracking {

// The tag that links an MLflow model version to the file registry's version it mirrors.
inline constexpr char kRegistryVersionTag[] = "tuner.registry_version";
// Where a trial's model lies among its run's artifacts.
inline constexpr char kModelArtifactPath[] = "model";

// What upload_directory() sent and what it left out.
struct DirectoryUpload {
  std::string uri;                   // the run's artifact URI + "/" + artifact_path
  int64_t files = 0;                 // files uploaded
  int64_t bytes = 0;                 // their bytes
  int64_t total_bytes = 0;           // of every file below the directory
  std::vector<std::string> skipped;  // relative paths not uploaded: past max_bytes
  // Relative paths not uploaded: removed or unreadable; "DIR: why" when the listing stopped.
  std::vector<std::string> unreadable;
};

// Uploads every file below `dir` to the run's artifacts under `artifact_path` (empty: at their
// root), keeping the relative paths, in path order. A file that would take the bytes uploaded
// past `max_bytes` is skipped (a smaller one after it may still go). Throws Error(kNotFound) for
// a missing directory, and the client's errors.
DirectoryUpload upload_directory(MlflowClient& client, const MlflowRun& run,
                                 const std::filesystem::path& dir, const std::string& artifact_path,
                                 int64_t max_bytes);
// The same without a limit; returns the URI. Throws Error(kUnavailable) naming a file that
// cannot be read.
std::string upload_directory(MlflowClient& client, const MlflowRun& run,
                             const std::filesystem::path& dir, const std::string& artifact_path);

struct VersionToMirror {
  std::string model_name;
  int registry_version = 0;         // the file registry's number
  std::filesystem::path model_dir;  // its MLflow model directory (DIR/MODEL/<version>)
  std::string run_id;               // the run of the trial it came from
  std::string description;
  std::map<std::string, std::string> tags;  // the version's tags (lineage, metric, ...)
  std::string model_description;            // the registered model's, when it is created
};

struct MirroredVersion {
  std::string version;   // MLflow's number (its own sequence: not always the file registry's)
  std::string source;    // the model's artifact URI
  bool created = false;  // false: it was mirrored before
};

// The version in MLflow's registry (see the top). Throws the client's errors.
MirroredVersion mirror_version(MlflowClient& client, const VersionToMirror& version);

// Sets each alias of `aliases` (alias -> the file registry's version) on the MLflow version that
// mirrors it, and deletes the aliases MLflow has on mirrored versions that the file registry no
// longer gives (aliases on versions registered in MLflow by others are left alone). Returns the
// aliases as they are now, alias -> MLflow version. An alias whose version is not mirrored is
// left as it is.
std::map<std::string, std::string> mirror_aliases(MlflowClient& client,
                                                  const std::string& model_name,
                                                  const std::map<std::string, int>& aliases);

}  // namespace tuner::tracking

#endif  // TUNER_TRACKING_MLFLOW_REGISTRY_H_
