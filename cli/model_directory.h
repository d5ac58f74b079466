// The MLflow model directory a command's --model argument names (tuner predict, tuner drift).
#ifndef TUNER_CLI_MODEL_DIRECTORY_H_
#define TUNER_CLI_MODEL_DIRECTORY_H_

#include <filesystem>
#include <string>

namespace tuner::cli {

// DIR/MODEL (its latest version), DIR/MODEL@ALIAS, DIR/MODEL/VERSION of the registry DIR
// (registry/registry.h), or an MLflow model directory itself (one holding an MLmodel file).
// Throws Error(kNotFound) naming the registry, model, alias or version that does not exist.
std::filesystem::path model_directory(const std::string& spec);

}  // namespace tuner::cli

#endif  // TUNER_CLI_MODEL_DIRECTORY_H_
