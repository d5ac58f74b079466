#include "tracking/mlflow_registry.h"

#include <fstream>
#include <set>
#include <sstream>

#include "trials/error.h"
#include "util/files.h"

namespace tuner::tracking {

namespace fs = std::filesystem;

namespace {

std::string quoted(const std::string& value) {
  return value.find('\'') == std::string::npos ? "'" + value + "'" : "\"" + value + "\"";
}

// The model's versions that mirror a file registry version, by that version.
std::map<int, MlflowModelVersion> mirrored_versions(MlflowClient& client, const std::string& name) {
  std::map<int, MlflowModelVersion> out;
  for (MlflowModelVersion& v : client.search_model_versions("name = " + quoted(name))) {
    auto it = v.tags.find(kRegistryVersionTag);
    if (it == v.tags.end()) continue;
    const int file_version = std::atoi(it->second.c_str());
    if (file_version > 0 && !out.contains(file_version)) out[file_version] = std::move(v);
  }
  return out;
}

}  // namespace

std::string upload_directory(MlflowClient& client, const MlflowRun& run, const fs::path& dir,
                             const std::string& artifact_path) {
  if (!fs::is_directory(dir)) {
    throw Error(ErrorCode::kNotFound, "no model directory at " + dir.string());
  }
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const std::string relative = fs::relative(entry.path(), dir).generic_string();
    client.upload_artifact(run.artifact_uri, artifact_path + "/" + relative,
                           read_file(entry.path()));
  }
  return run.artifact_uri + "/" + artifact_path;
}

MirroredVersion mirror_version(MlflowClient& client, const VersionToMirror& v) {
  client.ensure_registered_model(v.model_name, v.model_description, {});
  const std::map<int, MlflowModelVersion> mirrored = mirrored_versions(client, v.model_name);
  if (auto it = mirrored.find(v.registry_version); it != mirrored.end()) {
    return {.version = it->second.version, .source = it->second.source, .created = false};
  }
  const MlflowRun run = client.get_run(v.run_id);
  const std::string source = upload_directory(client, run, v.model_dir, kModelArtifactPath);
  std::vector<MlflowTag> tags;
  for (const auto& [key, value] : v.tags) tags.push_back({key, value});
  tags.push_back({kRegistryVersionTag, std::to_string(v.registry_version)});
  const MlflowModelVersion created =
      client.create_model_version(v.model_name, source, v.run_id, v.description, tags);
  return {.version = created.version, .source = source, .created = true};
}

std::map<std::string, std::string> mirror_aliases(MlflowClient& client,
                                                  const std::string& model_name,
                                                  const std::map<std::string, int>& aliases) {
  const std::map<int, MlflowModelVersion> mirrored = mirrored_versions(client, model_name);
  const std::optional<MlflowRegisteredModel> model = client.find_registered_model(model_name);
  std::map<std::string, std::string> now =
      model ? model->aliases : std::map<std::string, std::string>{};
  for (const auto& [alias, file_version] : aliases) {
    auto it = mirrored.find(file_version);
    if (it == mirrored.end()) continue;
    if (now[alias] != it->second.version) client.set_alias(model_name, alias, it->second.version);
    now[alias] = it->second.version;
  }
  std::set<std::string> mirrored_numbers;
  for (const auto& [file_version, v] : mirrored) mirrored_numbers.insert(v.version);
  for (auto it = now.begin(); it != now.end();) {
    if (!aliases.contains(it->first) && mirrored_numbers.contains(it->second)) {
      client.delete_alias(model_name, it->first);
      it = now.erase(it);
    } else {
      ++it;
    }
  }
  return now;
}

}  // namespace tuner::tracking
