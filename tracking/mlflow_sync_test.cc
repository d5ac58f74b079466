#include "tracking/mlflow_sync.h"

#include <gtest/gtest.h>

#include <filesystem>

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
