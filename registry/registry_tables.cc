#include "registry/registry_tables.h"

#include <chrono>
#include <cmath>
#include <optional>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "storage/sqlite/connection.h"
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
};

const char* direction(bool maximize) { return maximize ? "maximize" : "minimize"; }

std::optional<double> finite(std::optional<double> v) {
  if (v && !std::isfinite(*v)) return std::nullopt;
  return v;
}

}  // namespace

void mirror_model(const std::string& db_path, const std::string& name,
                  const RegisteredModel* model, const std::filesystem::path& registry_dir) {
  if (!std::filesystem::is_regular_file(db_path)) {
    throw Error(ErrorCode::kNotFound, "no study database at '" + db_path + "'");
  }
  sqlite::Connection conn(db_path);
  conn.set_busy_timeout(std::chrono::milliseconds(5000));
  sqlite::Transaction tx(conn, sqlite::Transaction::Kind::kWrite);
  {
    auto q = conn.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'studies'");
    if (!q.step()) {
      throw Error(ErrorCode::kFailedPrecondition,
                  "'" + db_path + "' is not a study database (no table 'studies'); the registry "
                  "was not mirrored into it");
    }
  }
  for (const char* sql : kTables) conn.exec(sql);
  {
    auto q = conn.query(
        "SELECT value FROM tuner_registry_meta WHERE \"key\" = 'registry_schema_version'");
    if (q.step() && std::atoi(q.text(0).c_str()) > kRegistryTablesVersion) {
      throw Error(ErrorCode::kFailedPrecondition,
                  "'" + db_path + "' has registry tables of version " + q.text(0) +
                      ", newer than this tuner's (" + std::to_string(kRegistryTablesVersion) +
                      "); use a newer tuner");
    }
  }
  conn.query("INSERT OR REPLACE INTO tuner_registry_meta (\"key\", value) "
             "VALUES ('registry_schema_version', ?)")
      .bind(0, std::to_string(kRegistryTablesVersion))
      .run();
  for (const char* table : {"tuner_registry_versions", "tuner_registry_aliases",
                            "tuner_registry_tags", "tuner_registry_promotions"}) {
    conn.query(std::string("DELETE FROM ") + table + " WHERE model = ?").bind(0, name).run();
  }
  conn.query("DELETE FROM tuner_registry_models WHERE name = ?").bind(0, name).run();
  if (model != nullptr) {
    conn.query("INSERT INTO tuner_registry_models (name, description, created, registry_dir, "
               "last_version) VALUES (?, ?, ?, ?, ?)")
        .bind(0, name)
        .bind(1, model->description)
        .bind(2, model->created)
        .bind(3, registry_dir.string())
        .bind(4, static_cast<int64_t>(model->last_version))
        .run();
    auto tag = [&](int version, const std::string& key, const std::string& value) {
      conn.query("INSERT INTO tuner_registry_tags (model, version, \"key\", value) "
                 "VALUES (?, ?, ?, ?)")
          .bind(0, name)
          .bind(1, version)
          .bind(2, key)
          .bind(3, value)
          .run();
    };
    for (const auto& [key, value] : model->tags) tag(0, key, value);
    for (const auto& [alias, version] : model->aliases) {
      conn.query("INSERT INTO tuner_registry_aliases (model, alias, version) VALUES (?, ?, ?)")
          .bind(0, name)
          .bind(1, alias)
          .bind(2, version)
          .run();
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
      conn.query("INSERT INTO tuner_registry_versions (model, version, study, trial, metric, "
                 "direction, metric_value, metrics_json, params_json, description, created, "
                 "path, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
          .bind(0, name)
          .bind(1, v.version)
          .bind(2, v.lineage.study)
          .bind(3, v.lineage.trial)
          .bind(4, v.metric)
          .bind(5, direction(v.maximize))
          .bind(6, finite(v.metric_value))
          .bind(7, metrics.dump())
          .bind(8, params.dump())
          .bind(9, v.description)
          .bind(10, v.created)
          .bind(11, (registry_dir / name / std::to_string(v.version)).string())
          .bind(12, v.source)
          .run();
      for (const auto& [key, value] : v.tags) tag(v.version, key, value);
      if (const auto& p = v.promotion) {
        auto q = conn.query(
            "INSERT INTO tuner_registry_promotions (model, version, metric, direction, value, "
            "champion_version, champion_value, promoted, reason, decided_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
        q.bind(0, name).bind(1, v.version).bind(2, p->metric).bind(3, direction(p->maximize));
        q.bind(4, finite(p->value));
        if (p->champion_version) {
          q.bind(5, *p->champion_version);
        } else {
          q.bind_null(5);
        }
        q.bind(6, finite(p->champion_value)).bind(7, p->promoted ? 1 : 0).bind(8, p->reason);
        q.bind(9, p->decided_at).run();
      }
    }
  }
  tx.commit();
}

}  // namespace tuner::registry
