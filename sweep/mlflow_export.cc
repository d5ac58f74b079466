#include "sweep/mlflow_export.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "storage/sqlite_storage.h"
#include "sweep/sweep_runner.h"
#include "sweep/sweep_tracking.h"
#include "tracking/mlflow_registry.h"
#include "trials/error.h"

namespace tuner {

namespace fs = std::filesystem;

namespace {

std::string number_text(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}

// The MLflow version's tags: where it came from and how it was judged.
std::map<std::string, std::string> version_tags(const registry::ModelVersion& v) {
  std::map<std::string, std::string> tags = {
      {"tuner.study", v.lineage.study},
      {"tuner.trial", std::to_string(v.lineage.trial)},
  };
  if (!v.metric.empty()) {
    tags["tuner.metric"] = v.metric;
    if (v.metric_value) tags["tuner.metric_value"] = number_text(*v.metric_value);
  }
  if (v.promotion)
    tags["tuner.promotion"] =
        (v.promotion->promoted ? "promoted: " : "not promoted: ") + v.promotion->reason;
  for (const auto& [key, value] : v.tags) tags[key] = value;
  return tags;
}

tracking::MlflowSyncOptions sync_options(const std::optional<SweepFile>& sweep,
                                         const std::string& uri, const std::string& storage,
                                         const std::string& experiment,
                                         const registry::RegistryOptions& options) {
  tracking::MlflowSyncOptions o =
      sweep ? mlflow_sync_options(*sweep, uri) : tracking::MlflowSyncOptions{};
  o.tracking_uri = uri;
  o.state_path = storage;
  if (!experiment.empty()) o.experiment = experiment;
  o.warn = options.warn;
  return o;
}

std::vector<std::string> aliases_of(const std::map<std::string, std::string>& aliases,
                                    const std::string& version) {
  std::vector<std::string> out;
  for (const auto& [alias, v] : aliases) {
    if (v == version) out.push_back(alias);
  }
  return out;
}

}  // namespace

MlflowRegistration register_in_mlflow(const ExportRequest& request,
                                      const std::optional<SweepFile>& sweep, int trial,
                                      const ExportResult& exported,
                                      const registry::Registry& registry,
                                      const registry::RegistryOptions& options) {
  SqliteStorage storage(request.storage, SqliteStorageOptions{.read_only = true});
  tracking::MlflowSync sync(
      storage, request.study,
      sync_options(sweep, request.mlflow_uri, request.storage, request.mlflow_experiment, options));
  sync.sync();
  const std::optional<tracking::RunRecord> record = sync.record(trial);
  if (!record) {
    throw Error(ErrorCode::kNotFound, request.mlflow_uri + ": trial " + std::to_string(trial) +
                                          " of study '" + request.study + "' has no run there");
  }
  const registry::RegisteredModel model = registry.model(exported.model_name);
  std::string study_description;
  if (sweep) study_description = sweep->description;
  const tracking::MirroredVersion v = tracking::mirror_version(
      sync.client(),
      {.model_name = exported.model_name,
       .registry_version = exported.version.version,
       .model_dir = exported.dir,
       .run_id = record->run_id,
       .description = exported.version.description.empty()
                          ? "trial " + std::to_string(trial) + " of study '" + request.study + "'"
                          : exported.version.description,
       .tags = version_tags(exported.version),
       .model_description = model.description.empty() ? study_description : model.description});
  const std::map<std::string, std::string> aliases =
      tracking::mirror_aliases(sync.client(), exported.model_name, model.aliases);
  return MlflowRegistration{.tracking_uri = request.mlflow_uri,
                            .model_name = exported.model_name,
                            .version = v.version,
                            .run_id = record->run_id,
                            .source = v.source,
                            .aliases = aliases_of(aliases, v.version),
                            .created = v.created};
}

std::vector<std::string> mirror_registry(const std::string& registry_dir,
                                         const std::string& storage_path,
                                         tracking::MlflowSync& sync,
                                         const registry::RegistryOptions& options) {
  const registry::Registry registry =
      registry::Registry::open(registry_dir, /*create=*/false, options);
  const std::string storage = fs::absolute(storage_path).lexically_normal().string();
  std::vector<std::string> lines;
  for (const std::string& name : registry.model_names()) {
    const registry::RegisteredModel model = registry.model(name);
    std::string numbers;
    int created = 0;
    for (const registry::ModelVersion& v : model.versions) {
      if (v.lineage.study != sync.study_name()) continue;
      if (!v.lineage.storage.empty() &&
          fs::absolute(v.lineage.storage).lexically_normal().string() != storage) {
        continue;
      }
      const std::optional<tracking::RunRecord> record = sync.record(v.lineage.trial);
      if (!record) {
        throw Error(ErrorCode::kNotFound, sync.client().url() + ": trial " +
                                              std::to_string(v.lineage.trial) + " of study '" +
                                              sync.study_name() + "' has no run there");
      }
      const tracking::MirroredVersion m = tracking::mirror_version(
          sync.client(),
          {.model_name = name,
           .registry_version = v.version,
           .model_dir = fs::path(registry_dir) / name / std::to_string(v.version),
           .run_id = record->run_id,
           .description = v.description.empty() ? "trial " + std::to_string(v.lineage.trial) +
                                                      " of study '" + v.lineage.study + "'"
                                                : v.description,
           .tags = version_tags(v),
           .model_description = model.description});
      created += m.created;
      numbers += (numbers.empty() ? "" : ", ") + std::to_string(v.version) +
                 (std::to_string(v.version) == m.version ? "" : " (MLflow's " + m.version + ")");
    }
    if (numbers.empty()) continue;
    const std::map<std::string, std::string> aliases =
        tracking::mirror_aliases(sync.client(), name, model.aliases);
    std::string alias_text;
    for (const auto& [alias, version] : aliases) {
      alias_text += (alias_text.empty() ? "" : ", ") + alias + " -> " + version;
    }
    lines.push_back(name + ": versions " + numbers + " (" + std::to_string(created) + " new)" +
                    (alias_text.empty() ? "" : "; aliases " + alias_text));
  }
  return lines;
}

}  // namespace tuner
