// A model named on a command line (tuner predict, drift, serve-model): an MLflow model directory
// itself, or a version in a registry (registry/registry.h):
//   DIR/MODEL           the model's champion, else its latest version
//   DIR/MODEL@ALIAS     the version the alias points at
//   DIR/MODEL/VERSION   that version
// A version's own directory (DIR/MODEL/VERSION holding an MLmodel file) is read as that version
// of the registry, so that it keeps its model name and number.
//
// Thread safety: pure functions (parse_model_reference looks at the file system).
#ifndef TUNER_REGISTRY_MODEL_REFERENCE_H_
#define TUNER_REGISTRY_MODEL_REFERENCE_H_

#include <filesystem>
#include <string>

namespace tuner::registry {

struct ModelReference {
  std::filesystem::path directory;  // set for an MLflow model directory outside a registry
  std::filesystem::path registry;   // else the registry's directory,
  std::string ref;                  // and "MODEL", "MODEL@ALIAS" or "MODEL/VERSION" in it

  // Whether the version it names can change: an alias, or a model's champion-or-latest.
  bool can_move() const { return directory.empty() && ref.find('/') == std::string::npos; }
};

// Throws nothing: a registry reference is checked when it is resolved (Registry::resolve).
ModelReference parse_model_reference(const std::string& spec);

}  // namespace tuner::registry

#endif  // TUNER_REGISTRY_MODEL_REFERENCE_H_
