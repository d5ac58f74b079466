// A model that a trial's own program saved (a command job's, in its TUNER_ARTIFACTS_DIR:
// docs/command_jobs.md, "Models"), as the registry keeps it:
//   an MLflow model directory (any flavor: a folder holding an MLmodel file, as
//   mlflow.sklearn.save_model and its kin write it), stored as it is;
//   an ONNX file (*.onnx), stored as an MLflow model of the onnx flavor:
//     MLmodel                 flavors onnx and python_function (loader mlflow.onnx), no
//                             signature, the lineage as metadata
//     model.onnx              the file, as it is
//     python_env.yaml, requirements.txt, conda.yaml    as for an engine model
// tuner's own inference (predict, drift, serve-model) runs engine models only; MLflow serves
// these (mlflow models serve, mlflow.pyfunc.load_model).
//
// Thread safety: pure functions over files; concurrent writes need distinct target paths.
#ifndef TUNER_REGISTRY_USER_MODEL_H_
#define TUNER_REGISTRY_USER_MODEL_H_

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "registry/mlflow_model.h"

namespace tuner::registry {

enum class UserModelFormat {
  kMlflow,  // an MLflow model directory
  kOnnx,    // an ONNX file
};

// "mlflow" or "onnx", as registry.json's "model_format" holds it.
std::string_view to_string(UserModelFormat format);
std::optional<UserModelFormat> parse_user_model_format(std::string_view text);

struct UserModel {
  UserModelFormat format = UserModelFormat::kMlflow;
  std::filesystem::path path;        // the directory, or the .onnx file
  std::vector<std::string> flavors;  // the MLflow flavors it has (stored): "sklearn", ...
};

// The flavors an MLmodel file's text names: the keys of its top-level "flavors" mapping, in
// order (block-style YAML, as MLflow writes it); empty when it names none.
std::vector<std::string> mlmodel_flavors(const std::string& mlmodel_text);

// `path` as a user model: a directory holding an MLmodel file, or a file whose name ends in
// ".onnx". Throws Error: kNotFound naming a path that does not exist; kInvalidArgument for one
// that is neither (saying what a model is).
UserModel read_user_model(const std::filesystem::path& path);

// The models in a trial's folder: the folder itself or the directories below it that hold an
// MLmodel file (not looked into further), and the .onnx files outside them; at most 4 levels
// down, sorted by path. Empty for a missing folder. Never throws.
std::vector<UserModel> find_user_models(const std::filesystem::path& folder);

// Writes `model` as the MLflow model directory `out` (see the top). Everything is written to a
// hidden temporary directory beside `out`, then renamed: a failure leaves neither.
// options.before_publish is called as write_mlflow_model calls it; options' artifact_path,
// versions, model_uuid and utc_time_created shape an ONNX file's MLmodel, and extra_metadata is
// added to its metadata. REQUIRES: out's parent exists. Throws Error: kAlreadyExists when `out`
// exists; kInvalidArgument for an ONNX file that is not an ONNX model; kUnavailable for I/O
// failures (naming the file).
void write_user_model(const UserModel& model, const Lineage& lineage,
                      const std::filesystem::path& out, const MlflowModelOptions& options = {});

}  // namespace tuner::registry

#endif  // TUNER_REGISTRY_USER_MODEL_H_
