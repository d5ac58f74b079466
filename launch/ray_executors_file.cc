#include "launch/ray_executors_file.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "launch/status_file.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;

fs::path executors_file(const std::string& dir) { return fs::path(dir) / "executors.json"; }

}  // namespace

std::string ray_status_dir(const std::string& storage_path, const std::string& study) {
  return (fs::path(storage_path + ".ray") / study).string();
}

void write_ray_executors_file(const std::string& dir, const RayExecutorsRecord& record) {
  nlohmann::json executors = nlohmann::json::array();
  for (const RayExecutorStatus& e : record.executors) {
    executors.push_back({{"id", e.id},
                         {"state", e.state},
                         {"node", e.node},
                         {"actor_id", e.actor_id},
                         {"reason", e.reason}});
  }
  const nlohmann::json doc = {{"version", kRayExecutorsFileVersion}, {"pid", record.pid},
                              {"launcher", record.launcher},         {"address", record.address},
                              {"endpoint", record.endpoint},         {"executors", executors}};
  write_status_file(executors_file(dir), doc);
}

void remove_ray_executors_file(const std::string& dir) {
  std::error_code ignored;
  fs::remove(executors_file(dir), ignored);
  // fs::remove leaves a directory that is not empty.
  if (fs::remove(dir, ignored)) fs::remove(fs::path(dir).parent_path(), ignored);
}

std::optional<RayExecutorsRecord> read_ray_executors_file(const std::string& dir) {
  std::optional<nlohmann::json> doc =
      read_status_file(executors_file(dir), kRayExecutorsFileVersion);
  if (!doc) return std::nullopt;
  try {
    RayExecutorsRecord record;
    record.pid = doc->at("pid").get<int64_t>();
    record.launcher = doc->at("launcher").get<std::string>();
    record.address = doc->at("address").get<std::string>();
    record.endpoint = doc->at("endpoint").get<std::string>();
    for (const nlohmann::json& e : doc->at("executors")) {
      record.executors.push_back({.id = e.at("id").get<std::string>(),
                                  .state = e.at("state").get<std::string>(),
                                  .node = e.at("node").get<std::string>(),
                                  .actor_id = e.at("actor_id").get<std::string>(),
                                  .reason = e.at("reason").get<std::string>()});
    }
    return record;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace tuner
