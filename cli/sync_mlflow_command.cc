// tuner sync-mlflow --study NAME --storage PATH --tracking-uri URI [--experiment NAME]
//   [--registry DIR]: logs a study to MLflow tracking after the fact, or catches up what a sweep
//   could not send (docs/tracking.md). Idempotent: a second run sends only what is new.
#include <iostream>

#include "cli/command.h"
#include "storage/sqlite_storage.h"
#include "sweep/mlflow_export.h"
#include "sweep/sweep_runner.h"
#include "sweep/sweep_tracking.h"
#include "tracking/mlflow_sync.h"
#include "trials/error.h"

namespace tuner::cli {

namespace {

constexpr Flag kFlags[] = {
    kStudyFlag,
    kStorageFlag,
    {"--tracking-uri", "URI", "the MLflow server, http://HOST:PORT", kRequired},
    {"--experiment", "NAME", "the MLflow experiment (default: the sweep's, else the study name)"},
    {"--registry", "DIR", "also register the study's versions of DIR in MLflow"},
};

}  // namespace

int run_sync_mlflow(const std::vector<std::string>& args) {
  Flags flags(args, kFlags, "sync-mlflow");
  const std::string study = flags.require("--study");
  const std::string storage_path = flags.require("--storage");
  const std::string uri = flags.require("--tracking-uri");
  if (!std::filesystem::exists(storage_path)) {
    throw Error(ErrorCode::kNotFound, "no study database at '" + storage_path + "'");
  }
  SqliteStorage storage(storage_path, SqliteStorageOptions{.read_only = true});
  if (!storage.find_study(study)) {
    std::string names;
    for (const StudyRecord& s : storage.list_studies())
      names += (names.empty() ? "" : ", ") + s.name;
    throw Error(ErrorCode::kNotFound, "no study '" + study + "' in " + storage_path +
                                          " (its studies: " + (names.empty() ? "none" : names) +
                                          ")");
  }
  // A sweep's study is logged as its sweep logs it (metric names, artifacts, settings).
  tracking::MlflowSyncOptions options;
  try {
    options = mlflow_sync_options(stored_sweep(study, storage_path), uri);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotFound) throw;
    options.tracking_uri = uri;
  }
  if (flags.has("--experiment")) options.experiment = flags.get("--experiment");
  options.state_path = storage_path;
  options.warn = [](const std::string& line) { std::cerr << "warning: " << line << "\n"; };
  tracking::MlflowSync sync(storage, study, std::move(options));
  const tracking::SyncReport r = sync.sync();
  std::cout << "study '" << study << "' in MLflow at " << sync.client().url() << " (experiment "
            << sync.experiment_id() << ", run " << sync.record(tracking::kParentRun)->run_id
            << "): " << r.runs_created << " runs created, " << r.runs_updated << " updated; "
            << r.metrics << " metrics, " << r.params << " params, " << r.tags << " tags in "
            << r.calls << " log-batch calls";
  if (r.pending > 0) std::cout << "; " << r.pending << " trials still running or left out";
  std::cout << "\n";
  if (flags.has("--registry")) {
    registry::RegistryOptions registry_options;
    registry_options.warn = [](const std::string& line) {
      std::cerr << "warning: " << line << "\n";
    };
    const std::vector<std::string> lines =
        mirror_registry(flags.get("--registry"), storage_path, sync, registry_options);
    if (lines.empty()) {
      std::cout << "registry " << flags.get("--registry") << ": no version of study '" << study
                << "'\n";
    }
    for (const std::string& line : lines) std::cout << "registered in MLflow: " << line << "\n";
  }
  return kExitOk;
}

extern const Command kSyncMlflowCommand = {
    .name = "sync-mlflow",
    .synopsis =
        "sync-mlflow --study NAME --storage PATH --tracking-uri URI [--experiment NAME]\n"
        "            [--registry DIR]",
    .description =
        "log a study to MLflow tracking (a run for the study, one\n"
        "per trial) or catch up what a sweep could not send; sends\n"
        "only what is missing",
    .flags = kFlags,
    .run = &run_sync_mlflow,
};

}  // namespace tuner::cli
