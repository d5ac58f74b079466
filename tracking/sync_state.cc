#include "tracking/sync_state.h"

#include <nlohmann/json.hpp>

#include "storage/extra_tables.h"
#include "trials/error.h"

namespace tuner::tracking {

namespace {

constexpr char kSchema[] = R"(
CREATE TABLE IF NOT EXISTS tuner_mlflow_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tuner_mlflow_runs (
  tracking_uri TEXT NOT NULL,
  study_id INTEGER NOT NULL,
  trial_number INTEGER NOT NULL,
  experiment_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  params_sent INTEGER NOT NULL DEFAULT 0,
  step_sent INTEGER,
  finished INTEGER NOT NULL DEFAULT 0,
  artifacts_sent INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (tracking_uri, study_id, trial_number));
)";

// Creates the tables, or checks the version of the ones there and brings an older one up to
// this version.
void open_tables(ExtraTablesTransaction& tx, const std::string& path) {
  tx.exec(kSchema);
  const std::optional<std::string> version =
      tx.text("SELECT value FROM tuner_mlflow_meta WHERE key = 'version'");
  if (!version) {
    tx.run("INSERT INTO tuner_mlflow_meta (key, value) VALUES ('version', ?)",
           {std::to_string(kSyncStateVersion)});
    return;
  }
  const int stored = std::stoi(*version);
  if (stored > kSyncStateVersion) {
    throw Error(ErrorCode::kFailedPrecondition,
                path + ": tuner_mlflow_runs has version " + *version + "; this tuner reads " +
                    std::to_string(kSyncStateVersion) + " (use a newer tuner)");
  }
  if (stored < 2) {
    tx.exec("ALTER TABLE tuner_mlflow_runs ADD COLUMN artifacts_sent INTEGER NOT NULL DEFAULT 0");
  }
  if (stored < kSyncStateVersion) {
    tx.run("UPDATE tuner_mlflow_meta SET value = ? WHERE key = 'version'",
           {std::to_string(kSyncStateVersion)});
  }
}

}  // namespace

SqliteSyncState::SqliteSyncState(std::string path, std::string tracking_uri, int64_t study_id,
                                 std::chrono::milliseconds busy_timeout)
    : path_(std::move(path)),
      tracking_uri_(std::move(tracking_uri)),
      study_id_(study_id),
      busy_timeout_(busy_timeout) {}

std::map<int, RunRecord> SqliteSyncState::load() {
  ExtraTablesTransaction tx(path_, busy_timeout_);
  open_tables(tx, path_);
  // Every row in one text (ExtraTablesTransaction reads one value).
  const std::optional<std::string> rows = tx.text(
      "SELECT json_group_array(json_object('trial', trial_number, 'experiment_id', "
      "experiment_id, 'run_id', run_id, 'params_sent', params_sent, 'step_sent', step_sent, "
      "'finished', finished, 'artifacts_sent', artifacts_sent)) FROM tuner_mlflow_runs WHERE "
      "tracking_uri = ? AND study_id = ?",
      {tracking_uri_, study_id_});
  tx.commit();
  std::map<int, RunRecord> records;
  if (!rows) return records;
  for (const nlohmann::json& row : nlohmann::json::parse(*rows)) {
    RunRecord r;
    r.trial = row.at("trial").get<int>();
    r.experiment_id = row.at("experiment_id").get<std::string>();
    r.run_id = row.at("run_id").get<std::string>();
    r.params_sent = row.at("params_sent").get<int64_t>();
    if (!row.at("step_sent").is_null()) r.step_sent = row.at("step_sent").get<int64_t>();
    r.finished = row.at("finished").get<int>() != 0;
    r.artifacts_sent = row.at("artifacts_sent").get<int>() != 0;
    records[r.trial] = r;
  }
  return records;
}

void SqliteSyncState::save(const std::vector<RunRecord>& records) {
  if (records.empty()) return;
  ExtraTablesTransaction tx(path_, busy_timeout_);
  open_tables(tx, path_);
  for (const RunRecord& r : records) {
    tx.run(
        "INSERT OR REPLACE INTO tuner_mlflow_runs (tracking_uri, study_id, trial_number, "
        "experiment_id, run_id, params_sent, step_sent, finished, artifacts_sent) VALUES (?, ?, ?, "
        "?, ?, ?, ?, ?, ?)",
        {tracking_uri_, study_id_, r.trial, r.experiment_id, r.run_id, r.params_sent, r.step_sent,
         r.finished ? 1 : 0, r.artifacts_sent ? 1 : 0});
  }
  tx.commit();
}

}  // namespace tuner::tracking
