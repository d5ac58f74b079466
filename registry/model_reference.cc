#include "registry/model_reference.h"

#include <algorithm>

#include "registry/registry.h"

namespace tuner::registry {

namespace fs = std::filesystem;

namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

ModelReference parse_model_reference(const std::string& spec) {
  fs::path path = fs::path(spec).lexically_normal();
  if (path.filename().empty() && path.has_parent_path()) path = path.parent_path();  // "DIR/"
  fs::path parent = path.parent_path();
  const std::string last = path.filename().string();
  ModelReference reference;
  const bool version = last.find('@') == std::string::npos && all_digits(last);
  if (fs::is_regular_file(path / "MLmodel") &&
      !(version &&
        Registry::is_registry(parent.parent_path().empty() ? "." : parent.parent_path()))) {
    reference.directory = path;
    return reference;
  }
  reference.ref = last;
  if (version) {
    reference.ref = parent.filename().string() + "/" + last;
    parent = parent.parent_path();
  }
  reference.registry = parent.empty() ? fs::path(".") : parent;
  return reference;
}

}  // namespace tuner::registry
