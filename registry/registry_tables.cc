#include "registry/registry_tables.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>

#include "storage/extra_tables.h"
#include "trials/error.h"

namespace tuner::registry {

namespace {

constexpr const char* kTables[] = {
    "CREATE TABLE IF NOT EXISTS tuner_registry_meta (\n"
    "\t\"key\" VARCHAR(512) NOT NULL PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS tuner_registry_models (\n"
    "\tname VARCHAR(128) NOT NULL PRIMARY KEY, description TEXT NOT NULL, created TEXT NOT NULL,\n"
    "\tregistry_dir TEXT NOT NULL, last_version INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS tuner_registry_versions (\n"
    "\tmodel VARCHAR(128) NOT NULL, version INTEGER NOT NULL, study TEXT NOT NULL,\n"
    "\ttrial INTEGER NOT NULL, metric TEXT NOT NULL, direction TEXT NOT NULL, metric_value FLOAT,\n"
    "\tmetrics_json TEXT NOT NULL, params_json TEXT NOT NULL, description TEXT NOT NULL,\n"
    "\tcreated TEXT NOT NULL, path TEXT NOT NULL, source TEXT NOT NULL,\n"
    "\tPRIMARY KEY (model, version))",
    "CREATE TABLE IF NOT EXISTS tuner_registry_aliases (\n"
    "\tmodel VARCHAR(128) NOT NULL, alias VARCHAR(128) NOT NULL, version INTEGER NOT NULL,\n"
    "\tPRIMARY KEY (model, alias))",
    "CREATE TABLE IF NOT EXISTS tuner_registry_tags (\n"
    "\tmodel VARCHAR(128) NOT NULL, version INTEGER NOT NULL, \"key\" VARCHAR(256) NOT NULL,\n"
    "\tvalue TEXT NOT NULL, PRIMARY KEY (model, version, \"key\"))",
    "CREATE TABLE IF NOT EXISTS tuner_registry_promotions (\n"
    "\tmodel VARCHAR(128) NOT NULL, version INTEGER NOT NULL, metric TEXT NOT NULL,\n"
    "\tdirection TEXT NOT NULL, value FLOAT, champion_version INTEGER, champion_value FLOAT,\n"
    "\tpromoted INTEGER NOT NULL, reason TEXT NOT NULL, decided_at TEXT NOT NULL,\n"
    "\tPRIMARY KEY (model, version))",
    // Since version 2: the limits of each decision, checked on its version.
    "CREATE TABLE IF NOT EXISTS tuner_registry_promotion_limits (\n"
    "\tmodel VARCHAR(128) NOT NULL, version INTEGER NOT NULL, metric TEXT NOT NULL,\n"
    "\tbound TEXT NOT NULL, threshold FLOAT NOT NULL, value FLOAT, met INTEGER NOT NULL,\n"
    "\tPRIMARY KEY (model, version, metric, bound))",
};

const char* direction(bool maximize) { return maximize ? "maximize" : "minimize"; }

std::optional<double> finite(std::optional<double> v) {
  if (v && !std::isfinite(*v)) return std::nullopt;
  return v;
}

}  // namespace

void mirror_model(const std::string& db_path, const std::string& name, const RegisteredModel* model,
                  const std::filesystem::path& registry_dir) {
  ExtraTablesTransaction tx(db_path, std::chrono::milliseconds(5000));
  for (const char* sql : kTables) tx.exec(sql);
  if (const auto version = tx.text(
          "SELECT value FROM tuner_registry_meta WHERE \"key\" = 'registry_schema_version'");
      version && std::atoi(version->c_str()) > kRegistryTablesVersion) {
    throw Error(ErrorCode::kFailedPrecondition,
                "'" + db_path + "' has registry tables of version " + *version +
                    ", newer than this tuner's (" + std::to_string(kRegistryTablesVersion) +
                    "); use a newer tuner");
  }
  tx.run(
      "INSERT OR REPLACE INTO tuner_registry_meta (\"key\", value) "
      "VALUES ('registry_schema_version', ?)",
      {std::to_string(kRegistryTablesVersion)});
  for (const char* table :
       {"tuner_registry_versions", "tuner_registry_aliases", "tuner_registry_tags",
        "tuner_registry_promotions", "tuner_registry_promotion_limits"}) {
    tx.run(std::string("DELETE FROM ") + table + " WHERE model = ?", {name});
  }
  tx.run("DELETE FROM tuner_registry_models WHERE name = ?", {name});
  if (model != nullptr) {
    tx.run(
        "INSERT INTO tuner_registry_models (name, description, created, registry_dir, "
        "last_version) VALUES (?, ?, ?, ?, ?)",
        {name, model->description, model->created, registry_dir.string(),
         static_cast<int64_t>(model->last_version)});
    auto tag = [&](int version, const std::string& key, const std::string& value) {
      tx.run(
          "INSERT INTO tuner_registry_tags (model, version, \"key\", value) "
          "VALUES (?, ?, ?, ?)",
          {name, version, key, value});
    };
    for (const auto& [key, value] : model->tags) tag(0, key, value);
    for (const auto& [alias, version] : model->aliases) {
      tx.run("INSERT INTO tuner_registry_aliases (model, alias, version) VALUES (?, ?, ?)",
             {name, alias, version});
    }
    for (const ModelVersion& v : model->versions) {
      nlohmann::json metrics = nlohmann::json::object(), params = nlohmann::json::object();
      for (const auto& [k, x] : v.lineage.metrics) {
        metrics[k] = std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
      }
      for (const auto& [k, text] : v.lineage.params) {
        nlohmann::json p = nlohmann::json::parse(text, nullptr, false);
        params[k] = p.is_discarded() ? nlohmann::json(text) : p;
      }
      tx.run(
          "INSERT INTO tuner_registry_versions (model, version, study, trial, metric, "
          "direction, metric_value, metrics_json, params_json, description, created, "
          "path, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          {name, v.version, v.lineage.study, v.lineage.trial, v.metric, direction(v.maximize),
           finite(v.metric_value), metrics.dump(), params.dump(), v.description, v.created,
           (registry_dir / name / std::to_string(v.version)).string(), v.source});
      for (const auto& [key, value] : v.tags) tag(v.version, key, value);
      if (const auto& p = v.promotion) {
        tx.run(
            "INSERT INTO tuner_registry_promotions (model, version, metric, direction, value, "
            "champion_version, champion_value, promoted, reason, decided_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            {name, v.version, p->metric, direction(p->maximize), finite(p->value),
             p->champion_version, finite(p->champion_value), p->promoted ? 1 : 0, p->reason,
             p->decided_at});
        for (const LimitCheck& c : p->limits) {
          tx.run(
              "INSERT OR REPLACE INTO tuner_registry_promotion_limits (model, version, metric, "
              "bound, threshold, value, met) VALUES (?, ?, ?, ?, ?, ?, ?)",
              {name, v.version, c.limit.metric,
               c.limit.bound == MetricLimit::Bound::kMax ? "max" : "min", c.limit.limit,
               finite(c.value), c.met ? 1 : 0});
        }
      }
    }
  }
  tx.commit();
}

}  // namespace tuner::registry
