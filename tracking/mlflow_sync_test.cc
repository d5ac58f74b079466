#include "tracking/mlflow_sync.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "storage/extra_tables.h"
#include "storage/in_memory_storage.h"
#include "storage/sqlite_storage.h"
#include "tracking/fake_mlflow_test_support.h"
#include "trials/error.h"

namespace tuner::tracking {
namespace {

namespace fs = std::filesystem;
using testing::FakeMlflow;
using testing::FakeTransport;

class MlflowSyncTest : public ::testing::Test {
 protected:
  MlflowSyncTest() : server_(std::make_shared<FakeMlflow>()) {}

  std::shared_ptr<MlflowClient> client() {
    return std::make_shared<MlflowClient>(
        std::make_unique<FakeTransport>(server_),
        RetryPolicy{.attempts = 1, .sleep = [](std::chrono::milliseconds) {}});
  }

  MlflowSyncOptions options(std::shared_ptr<SyncState> state = nullptr) {
    MlflowSyncOptions o;
    o.client = client();
    o.state = std::move(state);
    o.clock = clock_;
    o.study_params = {{"sampler", "tpe"}};
    o.warn = [this](const std::string& line) { warnings_.push_back(line); };
    return o;
  }

  // A finished trial with `steps` intermediate values of loss, and its final metrics.
  void add_trial(Storage& storage, int64_t study, TrialState state, int steps, double value) {
    const FrozenTrial t = storage.create_trial(study);
    storage.set_trial_param(t.trial_id, "lr",
                            FloatDistribution{.low = 1e-4, .high = 1, .log = true}, 0.01);
    for (int s = 1; s <= steps; ++s)
      storage.set_trial_intermediate_value(t.trial_id, s, value + 1.0 / s);
    if (state == TrialState::kRunning) return;
    storage.finish_trial(
        t.trial_id, state,
        state == TrialState::kComplete ? std::vector{value} : std::vector<double>{}, {},
        {{"loss", std::to_string(value)}, {"epochs", std::to_string(steps)}});
  }

  // A fresh directory of this test's own, removed with the fixture.
  fs::path temp_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("tuner_sync_test_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    return dir_;
  }
  ~MlflowSyncTest() override {
    std::error_code ignored;
    if (!dir_.empty()) fs::remove_all(dir_, ignored);
  }

  static void write(const fs::path& file, const std::string& bytes) {
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << bytes;
  }

  // The files the server holds among the run's artifacts: relative path -> bytes.
  std::map<std::string, std::string> artifacts_of(const testing::FakeRun& run) {
    const std::string prefix = run.experiment_id + "/" + run.run_id + "/artifacts/";
    std::map<std::string, std::string> out;
    for (const auto& [path, bytes] : server_->artifacts) {
      if (path.rfind(prefix, 0) == 0) out[path.substr(prefix.size())] = bytes;
    }
    return out;
  }

  // (step, timestamp, value) of `key` in the run, in order.
  static std::vector<std::tuple<int64_t, int64_t, double>> history(const testing::FakeRun& run,
                                                                   const std::string& key) {
    std::vector<std::tuple<int64_t, int64_t, double>> out;
    for (const auto& [k, step, ts, value] : run.metrics) {
      if (k == key) out.emplace_back(step, ts, value);
    }
    return out;
  }

  const testing::FakeRun& run_of_trial(int number) {
    for (const auto& [id, run] : server_->runs) {
      auto it = run.tags.find("tuner.trial_number");
      if (it != run.tags.end() && it->second == std::to_string(number)) return run;
    }
    throw std::runtime_error("no run for trial " + std::to_string(number));
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  std::shared_ptr<FakeMlflow> server_;
  std::vector<std::string> warnings_;
  fs::path dir_;
};

TEST_F(MlflowSyncTest, LogsAStudyAsAParentRunWithAChildRunPerTrial) {
  InMemoryStorage storage(clock_);
  const int64_t study = storage.create_study("s", {StudyDirection::kMinimize}).study_id;
  storage.set_study_system_attr(study, "study:metric_names", R"(["loss"])");
  add_trial(storage, study, TrialState::kComplete, 3, 0.5);
  add_trial(storage, study, TrialState::kPruned, 2, 0.9);
  add_trial(storage, study, TrialState::kRunning, 1, 0.7);
  storage.create_trial(study, TrialState::kWaiting, nullptr);  // not run yet: no run

  MlflowSync sync(storage, "s", options());
  const SyncReport report = sync.sync();
  EXPECT_EQ(report.runs_created, 4);  // the study's and three trials'
  EXPECT_EQ(report.pending, 1);       // the running trial
  EXPECT_EQ(server_->experiments.at("s"), sync.experiment_id());
  ASSERT_EQ(server_->runs.size(), 4u);
  const std::string parent = sync.record(kParentRun)->run_id;
  EXPECT_EQ(server_->runs.at(parent).name, "s");
  EXPECT_EQ(server_->runs.at(parent).tags.at("tuner.role"), "study");
  EXPECT_EQ(server_->runs.at(parent).params.at("sampler"), "tpe");
  EXPECT_EQ(server_->runs.at(parent).status, "RUNNING");  // a trial still runs

  const testing::FakeRun& t0 = run_of_trial(0);
  EXPECT_EQ(t0.name, "trial-0");
  EXPECT_EQ(t0.tags.at("mlflow.parentRunId"), parent);
  EXPECT_EQ(t0.tags.at("tuner.study"), "s");
  EXPECT_EQ(t0.tags.at("tuner.state"), "COMPLETE");
  EXPECT_EQ(t0.params.at("lr"), "0.01");
  EXPECT_EQ(t0.status, "FINISHED");
  int loss_points = 0;
  for (const auto& [key, step, ts, value] : t0.metrics) loss_points += key == "loss";
  EXPECT_EQ(loss_points, 4);  // steps 1..3, and the final value at step 3
  EXPECT_EQ(run_of_trial(1).status, "KILLED");
  EXPECT_EQ(run_of_trial(2).status, "RUNNING");

  // Nothing new: the second pass sends nothing (the parent's status is the same).
  const size_t before = server_->requests.size();
  const SyncReport again = sync.sync();
  EXPECT_EQ(again.runs_created, 0);
  EXPECT_EQ(again.calls, 0);
  EXPECT_EQ(server_->requests.size(), before);

  // The running trial finishes: its run is completed, the parent counts it.
  FrozenTrial running =
      storage.get_trials(study, {.states = std::vector{TrialState::kRunning}}).at(0);
  storage.set_trial_intermediate_value(running.trial_id, 2, 0.6);
  storage.finish_trial(running.trial_id, TrialState::kComplete, {0.4});
  sync.sync({.parent_status = RunStatus::kFinished});
  EXPECT_EQ(run_of_trial(2).status, "FINISHED");
  EXPECT_EQ(server_->runs.at(parent).status, "FINISHED");
  EXPECT_EQ(server_->runs.at(parent).tags.at("tuner.best_trial"), "2");
  EXPECT_TRUE(server_->runs.at(parent).end_time.has_value());
}

TEST_F(MlflowSyncTest, ASecondSyncerWithTheRecordAddsOnlyWhatIsMissing) {
  const fs::path dir =
      fs::temp_directory_path() / ("tuner_sync_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "study.db").string();
  {
    SqliteStorage storage(db);
    const int64_t study = storage.create_study("s", {StudyDirection::kMinimize}).study_id;
    add_trial(storage, study, TrialState::kComplete, 2, 0.5);
    MlflowSync first(storage, "s", options());
    first.sync();
    // The sweep is resumed: a new trial, a new syncer (a new process) on the same file.
    add_trial(storage, study, TrialState::kComplete, 2, 0.3);
  }
  SqliteStorage storage(db);
  MlflowSync second(storage, "s", options());
  const SyncReport report = second.sync();
  EXPECT_EQ(report.runs_created, 1);
  EXPECT_EQ(server_->runs.size(), 3u);
  // One look-up by each syncer that lacked a record (the first: of everything; the second: of
  // the new trial).
  EXPECT_EQ(server_->count("runs/search"), 2);
  EXPECT_EQ(run_of_trial(1).status, "FINISHED");
  fs::remove_all(dir);
}

TEST_F(MlflowSyncTest, WithoutTheRecordRunsAreFoundByTheirTags) {
  InMemoryStorage storage(clock_);
  const int64_t study = storage.create_study("s", {StudyDirection::kMinimize}).study_id;
  add_trial(storage, study, TrialState::kComplete, 2, 0.5);
  add_trial(storage, study, TrialState::kRunning, 1, 0.5);
  MlflowSync(storage, "s", options(std::make_shared<MemorySyncState>())).sync();
  ASSERT_EQ(server_->runs.size(), 3u);
  const auto metrics_before = run_of_trial(0).metrics;

  // The record is lost (a fresh state): the runs are found, none is duplicated, the finished
  // trial's run is left as it is and the running one's gets the same metrics (dropped as repeats).
  MlflowSync again(storage, "s", options(std::make_shared<MemorySyncState>()));
  const SyncReport report = again.sync();
  EXPECT_EQ(report.runs_created, 0);
  EXPECT_EQ(server_->runs.size(), 3u);
  EXPECT_EQ(server_->count("runs/search"), 2);  // one look-up by each syncer
  EXPECT_EQ(run_of_trial(0).metrics, metrics_before);
}

// A resumed study whose params changed (a larger budget) while its run has the old ones and the
// record of sending them was lost: MLflow refuses to change a param, so the new values go as
// tags and the rest of the pass goes on, without a warning.
TEST_F(MlflowSyncTest, ChangedStudyParamsOfARunThatHasThemGoAsTags) {
  InMemoryStorage storage(clock_);
  const int64_t study = storage.create_study("s", {StudyDirection::kMinimize}).study_id;
  add_trial(storage, study, TrialState::kComplete, 1, 0.5);
  MlflowSync(storage, "s", options(std::make_shared<MemorySyncState>())).sync();
  MlflowSyncOptions resumed = options(std::make_shared<MemorySyncState>());
  resumed.study_params = {{"sampler", "gp"}};
  add_trial(storage, study, TrialState::kComplete, 1, 0.2);
  warnings_.clear();
  MlflowSync(storage, "s", std::move(resumed)).sync();
  EXPECT_TRUE(warnings_.empty()) << warnings_.front();
  EXPECT_EQ(server_->runs.size(), 3u);
  bool found = false;
  for (const auto& [id, run] : server_->runs) {
    if (run.params.count("sampler")) {
      EXPECT_EQ(run.params.at("sampler"), "tpe");
      EXPECT_EQ(run.tags.at("param.sampler"), "gp");
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(MlflowSyncTest, AServerThatIsDownFailsThePassAndTheNextCatchesUp) {
  InMemoryStorage storage(clock_);
  const int64_t study = storage.create_study("s", {StudyDirection::kMinimize}).study_id;
  add_trial(storage, study, TrialState::kComplete, 2, 0.5);
  MlflowSync sync(storage, "s", options());
  server_->down = true;
  try {
    sync.sync();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
  }
  server_->down = false;
  add_trial(storage, study, TrialState::kComplete, 2, 0.4);
  sync.sync();
  EXPECT_EQ(server_->runs.size(), 3u);
  // A create whose answer is lost (the run was made): the next pass finds it before creating.
  add_trial(storage, study, TrialState::kComplete, 1, 0.1);
  server_->lose_next = 1;
  EXPECT_THROW(sync.sync(), Error);
  EXPECT_EQ(server_->runs.size(), 4u);
  sync.sync();
  EXPECT_EQ(server_->runs.size(), 4u);
  EXPECT_EQ(run_of_trial(2).status, "FINISHED");
  // A busy server (503): repeatable calls are tried again by the client.
  add_trial(storage, study, TrialState::kComplete, 1, 0.05);
  server_->fail_next = 1;
  EXPECT_THROW(sync.sync(), Error);  // the create is not repeated
  sync.sync();
  EXPECT_EQ(server_->runs.size(), 5u);
}

TEST_F(MlflowSyncTest, ManyStepsGoInBatchesWithinTheLimits) {
  InMemoryStorage storage(clock_);
  const int64_t study = storage.create_study("s", {StudyDirection::kMinimize}).study_id;
  add_trial(storage, study, TrialState::kComplete, 2500, 0.5);
  MlflowSync sync(storage, "s", options());
  const SyncReport report = sync.sync();
  EXPECT_EQ(report.calls, 3 + 1);  // the trial's 2500 steps and finals; the study's
  EXPECT_EQ(run_of_trial(0).metrics.size(),
            2500u + 3u);  // loss at each step; loss and epochs at the end
}

TEST_F(MlflowSyncTest, ATrialMlflowRefusesIsReportedOnceAndLeftOut) {
  InMemoryStorage storage(clock_);
  const int64_t study = storage.create_study("s", {StudyDirection::kMinimize}).study_id;
  add_trial(storage, study, TrialState::kComplete, 1, 0.5);
  MlflowSync sync(storage, "s", options());
  sync.sync();
  // Someone deleted the trial's run in MLflow while it was still being logged.
  add_trial(storage, study, TrialState::kRunning, 1, 0.5);
  sync.sync();
  server_->runs.at(sync.record(1)->run_id).lifecycle = "deleted";
  const FrozenTrial running = storage.get_trials(study, {}).at(1);
  storage.finish_trial(running.trial_id, TrialState::kComplete, {0.2});
  warnings_.clear();
  sync.sync();
  sync.sync();
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("trial 1"), std::string::npos);
  EXPECT_NE(warnings_[0].find("is left out"), std::string::npos);
}

TEST_F(MlflowSyncTest, EveryStepMetricGoesToTheRunWithItsStoredTime) {
  InMemoryStorage memory(clock_);
  Storage& storage = memory;
  const int64_t study = storage.create_study("s", {StudyDirection::kMinimize}).study_id;
  storage.set_study_system_attr(study, "study:metric_names", R"(["loss"])");
  const FrozenTrial t = storage.create_trial(study);
  const int64_t t0 = to_ms(clock_->system_now());
  for (int s = 1; s <= 3; ++s) {
    clock_->advance(std::chrono::seconds(1));
    storage.set_trial_step_metrics(t.trial_id, s, {{"loss", 1.0 / s}, {"train_loss", 2.0 / s}});
    storage.set_trial_intermediate_value(t.trial_id, s, 1.0 / s);
  }
  clock_->advance(std::chrono::seconds(1));
  storage.finish_trial(t.trial_id, TrialState::kComplete, {1.0 / 3});
  MlflowSync(storage, "s", options()).sync();
  const testing::FakeRun& run = run_of_trial(0);
  using Points = std::vector<std::tuple<int64_t, int64_t, double>>;
  EXPECT_EQ(history(run, "train_loss"),
            (Points{{1, t0 + 1000, 2.0}, {2, t0 + 2000, 1.0}, {3, t0 + 3000, 2.0 / 3}}));
  // The objective at each step with the step's time, and the trial's value at the end.
  EXPECT_EQ(history(run, "loss"), (Points{{1, t0 + 1000, 1.0},
                                          {2, t0 + 2000, 0.5},
                                          {3, t0 + 3000, 1.0 / 3},
                                          {3, t0 + 4000, 1.0 / 3}}));
}

TEST_F(MlflowSyncTest, MetricsJsonOfAnEngineTrialIsTheFallbackForStoredStepMetrics) {
  const fs::path dir = temp_dir();
  InMemoryStorage memory(clock_);
  Storage& storage = memory;
  const int64_t study = storage.create_study("s", {StudyDirection::kMaximize}).study_id;
  // Trial 0, stored without step metrics: its epochs come from metrics.json.
  add_trial(storage, study, TrialState::kComplete, 2, 0.8);
  write(dir / "trial-0" / "metrics.json",
        R"({"version": 1, "epochs": [{"epoch": 1, "time": 1767225600.5, "lr": 0.1},
                                     {"epoch": 2, "lr": 0.05}]})");
  // Trial 1 has stored step metrics: its metrics.json is not read.
  const FrozenTrial t = storage.create_trial(study);
  storage.set_trial_step_metrics(t.trial_id, 1, {{"lr", 0.2}});
  storage.finish_trial(t.trial_id, TrialState::kComplete, {0.9});
  write(dir / "trial-1" / "metrics.json", R"({"epochs": [{"epoch": 1, "time": 5, "other": 1}]})");
  // Trial 2 runs: its file may be ahead of its stored step metrics, so it waits for its end.
  add_trial(storage, study, TrialState::kRunning, 1, 0.7);
  write(dir / "trial-2" / "metrics.json", R"({"epochs": [{"epoch": 1, "time": 5, "lr": 1}]})");
  MlflowSyncOptions o = options();
  o.artifacts_dir = dir.string();
  MlflowSync(storage, "s", o).sync();
  using Points = std::vector<std::tuple<int64_t, int64_t, double>>;
  const int64_t done = to_ms(*storage.get_trials(study).at(0).datetime_complete);
  EXPECT_EQ(history(run_of_trial(0), "lr"), (Points{{1, 1767225600500, 0.1}, {2, done, 0.05}}));
  EXPECT_EQ(history(run_of_trial(1), "lr").size(), 1u);
  EXPECT_TRUE(history(run_of_trial(1), "other").empty());
  EXPECT_TRUE(history(run_of_trial(2), "lr").empty());
  EXPECT_EQ(history(run_of_trial(2), "value").size(), 1u);
}

TEST_F(MlflowSyncTest, AnEpochTimePastWhatATimePointHoldsIsNoTime) {
  const fs::path dir = temp_dir();
  InMemoryStorage memory(clock_);
  Storage& storage = memory;
  const int64_t study = storage.create_study("s", {StudyDirection::kMaximize}).study_id;
  add_trial(storage, study, TrialState::kComplete, 2, 0.8);
  // Neither 1e300 s nor 1e10 s (the year 2286) fits a 64-bit count of nanoseconds.
  write(dir / "trial-0" / "metrics.json",
        R"({"epochs": [{"epoch": 1, "time": 1e300, "lr": 0.1},
                       {"epoch": 2, "time": 1e10, "lr": 0.05}]})");
  MlflowSyncOptions o = options();
  o.artifacts_dir = dir.string();
  MlflowSync(storage, "s", o).sync();
  using Points = std::vector<std::tuple<int64_t, int64_t, double>>;
  const int64_t done = to_ms(*storage.get_trials(study).at(0).datetime_complete);
  EXPECT_EQ(history(run_of_trial(0), "lr"), (Points{{1, done, 0.1}, {2, done, 0.05}}));
}

TEST_F(MlflowSyncTest, AFinishedTrialsFilesAreLoggedOnce) {
  const fs::path dir = temp_dir();
  const std::string db = (dir / "study.db").string();
  const fs::path artifacts = dir / "study.db.artifacts" / "s";
  write(artifacts / "trial-0" / "events.out.tfevents.1", "scalars");
  write(artifacts / "trial-0" / "samples" / "grid.png", "png");
  write(artifacts / "trial-1" / "partial.txt", "still running");
  MlflowSyncOptions o = options();
  o.artifacts_dir = artifacts.string();
  {
    SqliteStorage storage(db);
    const int64_t study = storage.create_study("s", {StudyDirection::kMinimize}).study_id;
    add_trial(storage, study, TrialState::kComplete, 1, 0.5);
    add_trial(storage, study, TrialState::kRunning, 1, 0.5);
    add_trial(storage, study, TrialState::kFail, 0, 0.5);  // no folder: nothing to log
    MlflowSync sync(storage, "s", o);
    const SyncReport report = sync.sync();
    EXPECT_EQ(report.artifacts, 2);
    EXPECT_EQ(report.artifact_bytes, 10);
    EXPECT_EQ(artifacts_of(run_of_trial(0)),
              (std::map<std::string, std::string>{{"events.out.tfevents.1", "scalars"},
                                                  {"samples/grid.png", "png"}}));
    EXPECT_TRUE(artifacts_of(run_of_trial(1)).empty());  // running: not yet
    EXPECT_TRUE(sync.record(0)->artifacts_sent);
    EXPECT_TRUE(sync.record(2)->artifacts_sent);
    EXPECT_FALSE(sync.record(1)->artifacts_sent);
    EXPECT_EQ(sync.sync().artifacts, 0);
    // The running trial finishes: its files go with its end.
    const FrozenTrial running = storage.get_trials(study).at(1);
    storage.finish_trial(running.trial_id, TrialState::kComplete, {0.4});
    EXPECT_EQ(sync.sync().artifacts, 1);
    EXPECT_EQ(artifacts_of(run_of_trial(1)).at("partial.txt"), "still running");
  }
  // Another syncer on the same file (a resumed sweep, tuner sync-mlflow) sends none again.
  const int puts = server_->count("mlflow-artifacts");
  SqliteStorage storage(db);
  const SyncReport again = MlflowSync(storage, "s", o).sync();
  EXPECT_EQ(again.artifacts, 0);
  EXPECT_EQ(server_->count("mlflow-artifacts"), puts);
  EXPECT_TRUE(warnings_.empty()) << warnings_.front();
}

TEST_F(MlflowSyncTest, FilesPastTheLimitAreLeftOutWithAWarning) {
  const fs::path dir = temp_dir();
  write(dir / "trial-0" / "a.txt", "12345");
  write(dir / "trial-0" / "b.ckpt", std::string(20, 'w'));
  write(dir / "trial-0" / "c.txt", "123");
  InMemoryStorage storage(clock_);
  const int64_t study = storage.create_study("s", {StudyDirection::kMinimize}).study_id;
  add_trial(storage, study, TrialState::kComplete, 1, 0.5);
  MlflowSyncOptions o = options();
  o.artifacts_dir = dir.string();
  o.max_trial_artifact_bytes = 10;
  MlflowSync sync(storage, "s", o);
  EXPECT_EQ(sync.sync().artifact_bytes, 8);
  EXPECT_EQ(artifacts_of(run_of_trial(0)),
            (std::map<std::string, std::string>{{"a.txt", "12345"}, {"c.txt", "123"}}));
  ASSERT_EQ(warnings_.size(), 1u);
  for (const std::string part :
       {"trial 0's files", "total 28 bytes", "limit of 10 bytes", "1 of them left out (b.ckpt)"}) {
    EXPECT_NE(warnings_[0].find(part), std::string::npos) << part << " in " << warnings_[0];
  }
  sync.sync();
  EXPECT_EQ(warnings_.size(), 1u);  // said once: the trial's files are done
  EXPECT_TRUE(sync.record(0)->artifacts_sent);
}

TEST_F(MlflowSyncTest, AServerThatServesNoArtifactsIsReportedOnce) {
  const fs::path dir = temp_dir();
  write(dir / "trial-0" / "a.txt", "a");
  write(dir / "trial-1" / "b.txt", "b");
  server_->serve_artifacts = false;
  InMemoryStorage storage(clock_);
  const int64_t study = storage.create_study("s", {StudyDirection::kMinimize}).study_id;
  add_trial(storage, study, TrialState::kComplete, 1, 0.5);
  add_trial(storage, study, TrialState::kComplete, 1, 0.4);
  MlflowSyncOptions o = options();
  o.artifacts_dir = dir.string();
  MlflowSync sync(storage, "s", o);
  sync.sync();
  sync.sync();
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("--serve-artifacts"), std::string::npos) << warnings_[0];
  EXPECT_TRUE(server_->artifacts.empty());
  // The runs themselves are complete.
  EXPECT_EQ(run_of_trial(0).status, "FINISHED");
  EXPECT_EQ(run_of_trial(1).status, "FINISHED");
}

// A record of an older tuner (version 1, without artifacts_sent) is read and brought up to date.
TEST_F(MlflowSyncTest, AnOlderRecordIsUpgraded) {
  const std::string db = (temp_dir() / "study.db").string();
  SqliteStorage storage(db);
  const int64_t study = storage.create_study("s", {StudyDirection::kMinimize}).study_id;
  {
    ExtraTablesTransaction tx(db, std::chrono::milliseconds(1000));
    tx.exec(R"(
CREATE TABLE tuner_mlflow_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO tuner_mlflow_meta (key, value) VALUES ('version', '1');
CREATE TABLE tuner_mlflow_runs (tracking_uri TEXT NOT NULL, study_id INTEGER NOT NULL,
  trial_number INTEGER NOT NULL, experiment_id TEXT NOT NULL, run_id TEXT NOT NULL,
  params_sent INTEGER NOT NULL DEFAULT 0, step_sent INTEGER, finished INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (tracking_uri, study_id, trial_number));
)");
    tx.run("INSERT INTO tuner_mlflow_runs VALUES ('http://m', ?, 0, '1', 'r0', 2, 5, 1)", {study});
    tx.commit();
  }
  SqliteSyncState state(db, "http://m", study);
  const std::map<int, RunRecord> records = state.load();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records.at(0), (RunRecord{.trial = 0,
                                      .experiment_id = "1",
                                      .run_id = "r0",
                                      .params_sent = 2,
                                      .step_sent = 5,
                                      .finished = true,
                                      .artifacts_sent = false}));
  RunRecord sent = records.at(0);
  sent.artifacts_sent = true;
  state.save({sent});
  EXPECT_EQ(state.load().at(0), sent);
}

TEST_F(MlflowSyncTest, ARefusedExperimentIsAnError) {
  InMemoryStorage storage(clock_);
  storage.create_study("s", {StudyDirection::kMinimize});
  server_->experiments["s"] = "9";
  server_->deleted_experiments.insert("s");
  MlflowSync sync(storage, "s", options());
  try {
    sync.sync();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
  }
  EXPECT_THROW(MlflowSync(storage, "nope", options()).sync(), Error);
}

}  // namespace
}  // namespace tuner::tracking
