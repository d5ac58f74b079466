#include "cli/model_directory.h"

#include <algorithm>

#include "registry/registry.h"

namespace tuner::cli {

namespace fs = std::filesystem;

fs::path model_directory(const std::string& spec) {
  const fs::path path(spec);
  if (fs::is_regular_file(path / "MLmodel")) return path;
  fs::path parent = path.parent_path();
  std::string last = path.filename().string();
  std::string ref = last;
  const bool digits = !last.empty() && std::all_of(last.begin(), last.end(),
                                                   [](char c) { return c >= '0' && c <= '9'; });
  if (last.find('@') == std::string::npos && digits) {
    ref = parent.filename().string() + "/" + last;
    parent = parent.parent_path();
  }
  if (parent.empty()) parent = ".";
  return registry::Registry::open(parent, /*create=*/false).resolve(ref).dir;
}

}  // namespace tuner::cli
