#include "tracking/mlflow_sync.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "storage/sqlite_storage.h"
#include "tracking/log_batches.h"
#include "tracking/mlflow_registry.h"
#include "trials/constraints.h"
#include "trials/error.h"
#include "util/strings.h"

namespace tuner::tracking {

namespace fs = std::filesystem;

namespace {

// Where Optuna's study.set_metric_names() keeps the objectives' names (a JSON list).
constexpr char kMetricNamesAttr[] = "study:metric_names";

// An engine trial's per-epoch metrics and their wall times (executor/engine_job.cc writes
// DIR/trial-N/metrics.json: {"epochs": [{"epoch": 1, "time": seconds, "train_loss": ...}]}), an
// epoch without a time at `untimed`. A missing or unreadable file gives none (the stored
// intermediate values remain).
std::vector<StepMetrics> read_epochs(const fs::path& file, TimePoint untimed) {
  std::vector<StepMetrics> steps;
  std::ifstream in(file);
  if (!in) return steps;
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("epochs") ||
      !doc["epochs"].is_array()) {
    return steps;
  }
  for (const nlohmann::json& e : doc["epochs"]) {
    if (!e.is_object() || !e.contains("epoch") || !e["epoch"].is_number_integer()) continue;
    StepMetrics s{.step = e["epoch"].get<int64_t>(), .time = untimed};
    for (const auto& [key, value] : e.items()) {
      if (key == "epoch") continue;
      if (key == "time") {
        // Seconds since the epoch; one a TimePoint cannot hold (past 2262 in nanoseconds) is
        // taken as no time.
        constexpr double kLatestTime = 9e9;
        if (value.is_number() && value.get<double>() > 0 && value.get<double>() < kLatestTime) {
          s.time = TimePoint(std::chrono::round<std::chrono::microseconds>(
              std::chrono::duration<double>(value.get<double>())));
        }
        continue;
      }
      if (value.is_number()) s.metrics[key] = value.get<double>();
    }
    steps.push_back(std::move(s));
  }
  return steps;
}

// "a, b, c and 4 more": the first few of `names`.
std::string some_of(const std::vector<std::string>& names) {
  constexpr size_t kShown = 5;
  std::string text;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) text += (i ? ", " : "") + names[i];
  if (names.size() > kShown) text += " and " + std::to_string(names.size() - kShown) + " more";
  return text;
}

std::string quoted(const std::string& value) {
  // MLflow's search grammar takes a string in single or double quotes.
  return value.find('\'') == std::string::npos ? "'" + value + "'" : "\"" + value + "\"";
}

bool terminal(const std::string& status) {
  return status == "FINISHED" || status == "FAILED" || status == "KILLED";
}

}  // namespace

MlflowSync::MlflowSync(Storage& storage, std::string study_name, MlflowSyncOptions options)
    : storage_(storage), study_name_(std::move(study_name)), options_(std::move(options)) {
  client_ = options_.client ? options_.client
                            : std::shared_ptr<MlflowClient>(connect_mlflow(options_.tracking_uri));
  if (options_.experiment.empty()) options_.experiment = study_name_;
  if (!options_.clock) options_.clock = system_clock();
  if (options_.tracking_uri.empty()) options_.tracking_uri = client_->url();
}

MlflowSync::~MlflowSync() = default;

void MlflowSync::warn(const std::string& message) const {
  if (options_.warn) options_.warn(message);
}

std::optional<RunRecord> MlflowSync::record(int number) const {
  auto it = records_.find(number);
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

void MlflowSync::open_state(int64_t study_id) {
  if (state_) return;
  state_ = options_.state;
  std::string path = options_.state_path;
  if (!state_ && path.empty()) {
    if (const auto* sqlite = dynamic_cast<const SqliteStorage*>(&storage_)) path = sqlite->path();
  }
  if (!state_ && !path.empty()) {
    state_ = std::make_shared<SqliteSyncState>(path, options_.tracking_uri, study_id);
  }
  if (!state_) state_ = std::make_shared<MemorySyncState>();
  try {
    records_ = state_->load();
  } catch (const Error& e) {
    warn(std::string("MLflow tracking: cannot read what was sent before (") + e.what() +
         "); its runs are looked up by their tags, and this run's record is kept in memory");
    state_ = std::make_shared<MemorySyncState>();
    records_.clear();
  }
}

void MlflowSync::save(const RunRecord& record) {
  records_[record.trial] = record;
  try {
    state_->save({record});
  } catch (const Error& e) {
    warn(std::string("MLflow tracking: cannot record what was sent (") + e.what() +
         "); the record is kept in memory, and a later sync finds the runs by their tags");
    auto memory = std::make_shared<MemorySyncState>();
    std::vector<RunRecord> all;
    for (const auto& [trial, r] : records_) all.push_back(r);
    memory->save(all);
    state_ = memory;
  }
}

void MlflowSync::find_runs_by_tags() {
  const std::vector<MlflowRun> runs =
      client_->search_runs({experiment_id_}, "tags.`tuner.study` = " + quoted(study_name_));
  for (const MlflowRun& run : runs) {
    int trial = kParentRun;
    if (auto it = run.tags.find("tuner.trial_number"); it != run.tags.end()) {
      trial = std::atoi(it->second.c_str());
    } else if (auto role = run.tags.find("tuner.role");
               role == run.tags.end() || role->second != "study") {
      continue;
    }
    if (records_.contains(trial)) continue;
    // A run whose status is final had everything sent (the status goes last); another is sent
    // everything again (MLflow keeps params that do not change and drops repeated metrics).
    RunRecord r{.trial = trial, .experiment_id = experiment_id_, .run_id = run.run_id};
    if (trial != kParentRun && terminal(run.status)) {
      r.finished = true;
      r.params_sent = static_cast<int64_t>(run.params.size());
    }
    save(r);
  }
  searched_ = true;
}

std::vector<std::string> MlflowSync::objective_metrics(const StudyRecord& study) const {
  std::vector<std::string> names = options_.objective_metrics;
  if (!names.empty()) return names;
  if (auto it = study.system_attrs.find(kMetricNamesAttr); it != study.system_attrs.end()) {
    const nlohmann::json list = nlohmann::json::parse(it->second, nullptr, false);
    if (list.is_array()) {
      for (const nlohmann::json& n : list) {
        if (n.is_string()) names.push_back(n.get<std::string>());
      }
    }
  }
  return names;
}

TrialContext MlflowSync::context_for(
    const FrozenTrial& trial, const StudyRecord& study,
    std::map<int64_t, std::vector<StepMetrics>>& step_metrics) const {
  TrialContext c;
  c.study = study_name_;
  c.objective_metrics = objective_metrics(study);
  const TimePoint now = options_.clock->system_now();
  c.now_ms = to_ms(now);
  if (auto it = step_metrics.find(trial.trial_id); it != step_metrics.end()) {
    c.steps = std::move(it->second);
  } else if (!options_.artifacts_dir.empty() && is_finished(trial.state)) {
    // Only a finished trial's: a running one's epochs may be in the file before their step
    // metrics are stored.
    c.steps = read_epochs(fs::path(options_.artifacts_dir) /
                              ("trial-" + std::to_string(trial.number)) / "metrics.json",
                          trial.datetime_complete.value_or(now));
  }
  c.constraint_names = options_.constraint_names;
  return c;
}

bool MlflowSync::complete(const RunRecord& record) const {
  return record.finished && (record.artifacts_sent || options_.artifacts_dir.empty() ||
                             files_off_ || files_refused_.contains(record.trial));
}

void MlflowSync::sync_artifacts(const FrozenTrial& trial, SyncReport& report) {
  RunRecord record = records_.at(trial.number);
  if (complete(record)) return;
  const fs::path dir = fs::path(options_.artifacts_dir) / ("trial-" + std::to_string(trial.number));
  const std::string what =
      "trial " + std::to_string(trial.number) + "'s files (" + dir.string() + ")";
  std::error_code error;
  if (fs::is_directory(dir, error)) {
    DirectoryUpload upload;
    try {
      upload = upload_directory(*client_, client_->get_run(record.run_id), dir, "",
                                options_.max_trial_artifact_bytes);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kFailedPrecondition) {
        warn(std::string("MLflow tracking: the trials' files are not logged: ") + e.what());
        files_off_ = true;
        return;
      }
      if (e.code() != ErrorCode::kInvalidArgument) throw;
      warn("MLflow tracking: " + what + " are left out: " + e.what());
      files_refused_.insert(trial.number);
      return;
    }
    report.artifacts += upload.files;
    report.artifact_bytes += upload.bytes;
    if (!upload.skipped.empty()) {
      warn("MLflow tracking: " + what + " total " + byte_size_text(upload.total_bytes) +
           ", past the limit of " + byte_size_text(options_.max_trial_artifact_bytes) +
           " per trial: " + std::to_string(upload.skipped.size()) + " of them left out (" +
           some_of(upload.skipped) + ")");
    }
    if (!upload.unreadable.empty()) {
      warn("MLflow tracking: " + what + ": " + std::to_string(upload.unreadable.size()) +
           " could not be read and are left out (" + some_of(upload.unreadable) + ")");
    }
  }
  record.artifacts_sent = true;
  save(record);
}

bool MlflowSync::send(const std::string& run_id, const std::string& what, const TrialUpdate& update,
                      SyncReport& report) {
  try {
    try {
      for (const LogBatch& batch : split_batches(update.metrics, update.params, update.tags)) {
        client_->log_batch(run_id, batch.metrics, batch.params, batch.tags);
        ++report.calls;
      }
    } catch (const Error& e) {
      // MLflow keeps a run's params as first logged and refuses a batch that changes one: the
      // run has them already (sent by a pass whose record was lost, other values after a
      // resume). The params go again as tags ("param.KEY"), which may change, with the rest.
      if (e.code() != ErrorCode::kInvalidArgument || update.params.empty()) throw;
      std::vector<MlflowTag> tags = update.tags;
      for (const MlflowTag& p : update.params) tags.push_back({"param." + p.key, p.value});
      for (const LogBatch& batch : split_batches(update.metrics, {}, tags)) {
        client_->log_batch(run_id, batch.metrics, batch.params, batch.tags);
        ++report.calls;
      }
    }
    if (update.status) client_->update_run(run_id, *update.status, update.end_time_ms);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kInvalidArgument && e.code() != ErrorCode::kFailedPrecondition) {
      throw;
    }
    warn("MLflow tracking: " + what + " is left out: " + e.what());
    return false;
  }
  report.metrics += static_cast<int64_t>(update.metrics.size());
  report.params += static_cast<int64_t>(update.params.size());
  report.tags += static_cast<int64_t>(update.tags.size());
  return true;
}

void MlflowSync::sync_parent(const StudyRecord& study, const std::vector<FrozenTrial>& trials,
                             const SyncPass& pass, SyncReport& report) {
  RunRecord& parent = records_.at(kParentRun);
  int64_t finished = 0, complete = 0, pruned = 0, failed = 0;
  std::optional<int64_t> last_end_ms;
  bool live = false;
  std::optional<double> best;
  int best_number = -1;
  for (const FrozenTrial& t : trials) {
    if (!is_finished(t.state)) {
      live = true;
      continue;
    }
    ++finished;
    if (t.datetime_complete)
      last_end_ms = std::max(last_end_ms.value_or(0), to_ms(*t.datetime_complete));
    if (t.state == TrialState::kPruned) ++pruned;
    if (t.state == TrialState::kFail) ++failed;
    if (t.state != TrialState::kComplete) continue;
    ++complete;
    bool feasible = true;
    try {
      feasible = is_feasible(t);
    } catch (const Error&) {
      feasible = false;
    }
    if (study.directions.size() == 1 && !t.values.empty() && feasible &&
        (!best || is_better(study.directions[0], t.values[0], *best))) {
      best = t.values[0];
      best_number = t.number;
    }
  }
  TrialUpdate update;
  update.after = parent;
  if (static_cast<int64_t>(options_.study_params.size()) > parent.params_sent) {
    update.params = options_.study_params;
    for (MlflowTag& p : update.params) p.key = mlflow_key(p.key);
    update.after.params_sent = static_cast<int64_t>(options_.study_params.size());
  }
  if (finished > 0 && parent.step_sent.value_or(-1) != finished) {
    const int64_t ts = last_end_ms.value_or(to_ms(options_.clock->system_now()));
    auto metric = [&](const std::string& key, double value) {
      update.metrics.push_back({.key = key, .value = value, .timestamp_ms = ts, .step = finished});
    };
    metric("trials_complete", static_cast<double>(complete));
    metric("trials_pruned", static_cast<double>(pruned));
    metric("trials_failed", static_cast<double>(failed));
    if (best) {
      const std::vector<std::string> names = objective_metrics(study);
      const std::string name = names.empty() ? "value" : names.front();
      metric(mlflow_key("best_" + name), *best);
      update.tags.push_back({"tuner.best_trial", std::to_string(best_number)});
    }
    update.after.step_sent = finished;
  }
  const RunStatus status =
      pass.parent_status.value_or(live ? RunStatus::kRunning : RunStatus::kFinished);
  // A record of a finished study says its run is FINISHED (a new syncer need not say it again).
  if (!parent_status_sent_ && parent.finished) parent_status_sent_ = RunStatus::kFinished;
  update.after.finished = status == RunStatus::kFinished;
  if (parent_status_sent_ != status) {
    update.status = status;
    if (status != RunStatus::kRunning) {
      update.end_time_ms = last_end_ms.value_or(to_ms(options_.clock->system_now()));
    }
  }
  if (update.empty()) {
    if (update.after != parent) save(update.after);
    return;
  }
  if (send(parent.run_id, "the study's run " + parent.run_id, update, report)) {
    ++report.runs_updated;
    parent_status_sent_ = status;
    save(update.after);
  }
}

SyncReport MlflowSync::sync(const SyncPass& pass) {
  SyncReport report;
  const std::optional<StudyRecord> study = storage_.find_study(study_name_);
  if (!study) {
    throw Error(ErrorCode::kNotFound,
                "MLflow tracking: no study '" + study_name_ + "' in its storage");
  }
  open_state(study->study_id);
  if (experiment_id_.empty()) {
    experiment_id_ =
        client_->get_or_create_experiment(options_.experiment, {{"tuner.study", study_name_}});
  }
  // Runs recorded for another experiment (the experiment was renamed in the sweep file) are not
  // this experiment's: forget them and look this one's up.
  for (auto it = records_.begin(); it != records_.end();) {
    it = it->second.experiment_id == experiment_id_ ? std::next(it) : records_.erase(it);
  }
  // Trials whose runs are complete are read without their intermediate values (the study's
  // run counts them).
  const std::vector<FrozenTrial> trials =
      storage_.get_trials(study->study_id, {.without_intermediate_values = done_ids_});
  const bool missing = !records_.contains(kParentRun) ||
                       std::any_of(trials.begin(), trials.end(), [&](const FrozenTrial& t) {
                         return t.state != TrialState::kWaiting && !records_.contains(t.number);
                       });
  if (missing && !searched_) find_runs_by_tags();
  // The step metrics of the trials whose runs take metrics still, read after the trials (what
  // plan_trial_update needs to send whole steps).
  std::vector<int64_t> metric_ids;
  for (const FrozenTrial& t : trials) {
    if (t.number < low_water_ || t.state == TrialState::kWaiting || refused_.contains(t.number)) {
      continue;
    }
    auto it = records_.find(t.number);
    if (it == records_.end() || !it->second.finished) metric_ids.push_back(t.trial_id);
  }
  std::map<int64_t, std::vector<StepMetrics>> step_metrics;
  if (!metric_ids.empty()) step_metrics = storage_.get_step_metrics(study->study_id, metric_ids);

  try {
    if (!records_.contains(kParentRun)) {
      int64_t start_ms = to_ms(options_.clock->system_now());
      for (const FrozenTrial& t : trials) {
        if (t.datetime_start) start_ms = std::min(start_ms, to_ms(*t.datetime_start));
      }
      std::vector<MlflowTag> tags = {{"tuner.study", study_name_}, {"tuner.role", "study"}};
      if (!options_.description.empty())
        tags.push_back({"mlflow.note.content", options_.description});
      searched_ = false;  // a lost answer may have created it: look before creating again
      const MlflowRun run = client_->create_run(experiment_id_, study_name_, start_ms, tags);
      searched_ = true;
      ++report.runs_created;
      save(RunRecord{.trial = kParentRun, .experiment_id = experiment_id_, .run_id = run.run_id});
    }
    const std::string parent_id = records_.at(kParentRun).run_id;
    for (const FrozenTrial& trial : trials) {
      if (pass.stop.stop_requested()) {
        report.stopped = true;
        break;
      }
      if (trial.number < low_water_ || trial.state == TrialState::kWaiting) continue;
      if (refused_.contains(trial.number)) continue;
      auto it = records_.find(trial.number);
      if (it != records_.end() && it->second.finished) {
        sync_artifacts(trial, report);
        continue;
      }
      const TrialContext context = context_for(trial, *study, step_metrics);
      RunRecord record;
      bool created = false;
      if (it == records_.end()) {
        searched_ = false;
        const int64_t start_ms =
            trial.datetime_start ? to_ms(*trial.datetime_start) : context.now_ms;
        const MlflowRun run = client_->create_run(experiment_id_, trial_run_name(trial), start_ms,
                                                  trial_creation_tags(trial, context, parent_id));
        searched_ = true;
        record =
            RunRecord{.trial = trial.number, .experiment_id = experiment_id_, .run_id = run.run_id};
        save(record);
        ++report.runs_created;
        created = true;
      } else {
        record = it->second;
      }
      const TrialUpdate update = plan_trial_update(trial, record, context);
      if (update.empty()) {
        if (created) ++report.runs_updated;
        continue;
      }
      if (!send(record.run_id,
                "trial " + std::to_string(trial.number) + " (run " + record.run_id + ")", update,
                report)) {
        refused_.insert(trial.number);
        continue;
      }
      ++report.runs_updated;
      save(update.after);
      if (update.after.finished) sync_artifacts(trial, report);
    }
    if (!report.stopped) sync_parent(*study, trials, pass, report);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotFound) throw;
    // The server lost runs it had (its database was replaced, an experiment purged): look
    // everything up again next pass, and create what is gone.
    warn(std::string("MLflow tracking: ") + e.what() +
         "; the study's runs are looked up again and re-created where missing");
    records_.clear();
    experiment_id_.clear();
    searched_ = false;
    low_water_ = 0;
    parent_status_sent_.reset();
    throw;
  }

  // Trials below the first one whose run is not complete need no more reading.
  int low = std::numeric_limits<int>::max();
  done_ids_.clear();
  for (const FrozenTrial& t : trials) {
    auto it = records_.find(t.number);
    const bool finished = it != records_.end() && it->second.finished;
    if (finished) done_ids_.push_back(t.trial_id);
    if (finished && complete(it->second)) continue;
    if (!finished && t.state != TrialState::kWaiting) ++report.pending;
    if (!refused_.contains(t.number)) low = std::min(low, t.number);
  }
  if (!report.stopped) {
    low_water_ = low != std::numeric_limits<int>::max() ? low
                 : trials.empty()                       ? 0
                                                        : trials.back().number + 1;
  }
  return report;
}

}  // namespace tuner::tracking
