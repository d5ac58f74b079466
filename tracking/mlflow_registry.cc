#include "tracking/mlflow_registry.h"

#include <fstream>
#include <limits>
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

DirectoryUpload upload_directory(MlflowClient& client, const MlflowRun& run, const fs::path& dir,
                                 const std::string& artifact_path, int64_t max_bytes) {
  if (!fs::is_directory(dir)) {
    throw Error(ErrorCode::kNotFound, "no directory at " + dir.string());
  }
  DirectoryUpload upload;
  std::map<std::string, fs::path> files;  // by relative path: the order of the upload
  std::error_code listing;
  for (fs::recursive_directory_iterator
           it(dir, fs::directory_options::skip_permission_denied, listing),
       end;
       !listing && it != end; it.increment(listing)) {
    std::error_code ignored;
    if (it->is_regular_file(ignored)) {
      files[fs::relative(it->path(), dir).generic_string()] = it->path();
    }
  }
  if (listing) upload.unreadable.push_back(dir.string() + ": " + listing.message());
  const std::string prefix = artifact_path.empty() ? "" : artifact_path + "/";
  upload.uri = artifact_path.empty() ? run.artifact_uri : run.artifact_uri + "/" + artifact_path;
  for (const auto& [relative, path] : files) {
    std::error_code error;
    const auto size = static_cast<int64_t>(fs::file_size(path, error));
    if (error) {
      upload.unreadable.push_back(relative);
      continue;
    }
    upload.total_bytes += size;
    if (size > max_bytes - upload.bytes) {
      upload.skipped.push_back(relative);
      continue;
    }
    std::string bytes;
    try {
      bytes = read_file(path);
    } catch (const Error&) {
      upload.unreadable.push_back(relative);
      continue;
    }
    client.upload_artifact(run.artifact_uri, prefix + relative, bytes);
    ++upload.files;
    upload.bytes += size;
  }
  return upload;
}

std::string upload_directory(MlflowClient& client, const MlflowRun& run, const fs::path& dir,
                             const std::string& artifact_path) {
  const DirectoryUpload upload =
      upload_directory(client, run, dir, artifact_path, std::numeric_limits<int64_t>::max());
  if (!upload.unreadable.empty()) {
    throw Error(ErrorCode::kUnavailable, "cannot read all of " + dir.string() + " to upload it (" +
                                             upload.unreadable.front() + ")");
  }
  return upload.uri;
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
