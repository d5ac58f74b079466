#include "cli/artifacts_view.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "sweep/sweep_runner.h"

namespace tuner::cli {

std::optional<SweepFile> stored_sweep_of(const StudyRecord& study,
                                         const std::string& storage_path) {
  if (!study.system_attrs.contains(kSweepAttr)) return std::nullopt;
  try {
    return stored_sweep(study.name, storage_path);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string artifacts_members(const std::filesystem::path& folder, const ArtifactListing& listing) {
  nlohmann::json files = nlohmann::json::array();
  for (const ArtifactFile& f : listing.files) files.push_back({{"path", f.path}, {"size", f.size}});
  const auto replace = nlohmann::json::error_handler_t::replace;  // a name that is not UTF-8
  std::string text =
      "\"artifacts_dir\":" + nlohmann::json(folder.string()).dump(-1, ' ', false, replace) +
      ",\"artifacts\":" + files.dump(-1, ' ', false, replace);
  if (listing.truncated) text += ",\"artifacts_truncated\":true";
  return text;
}

}  // namespace tuner::cli
