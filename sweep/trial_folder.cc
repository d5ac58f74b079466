#include "sweep/trial_folder.h"

#include <nlohmann/json.hpp>
#include <string>

namespace tuner {

std::string job_artifacts_dir(const SweepFile& sweep) {
  const nlohmann::json job = nlohmann::json::parse(sweep.job_json, nullptr, false);
  if (!job.is_object()) return "";
  const auto it = job.find("artifacts_dir");
  return it != job.end() && it->is_string() ? it->get<std::string>() : "";
}

std::optional<std::filesystem::path> trial_folder(const SweepFile& sweep, int number) {
  const std::string dir = job_artifacts_dir(sweep);
  if (dir.empty()) return std::nullopt;
  return std::filesystem::path(dir) / ("trial-" + std::to_string(number));
}

}  // namespace tuner
