#include "cli/model_directory.h"

#include "registry/model_reference.h"
#include "registry/registry.h"

namespace tuner::cli {

std::filesystem::path model_directory(const std::string& spec) {
  const registry::ModelReference reference = registry::parse_model_reference(spec);
  if (!reference.directory.empty()) return reference.directory;
  return registry::Registry::open(reference.registry, /*create=*/false).resolve(reference.ref).dir;
}

}  // namespace tuner::cli
