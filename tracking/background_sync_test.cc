#include "tracking/background_sync.h"

#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "storage/in_memory_storage.h"
#include "tracking/fake_mlflow_test_support.h"

namespace tuner::tracking {
namespace {

using namespace std::chrono_literals;
using testing::FakeMlflow;
using testing::FakeTransport;

class BackgroundSyncTest : public ::testing::Test {
 protected:
  BackgroundSyncTest()
      : server_(std::make_shared<FakeMlflow>()),
        study_(storage_.create_study("s", {StudyDirection::kMinimize}).study_id) {
    MlflowSyncOptions o;
    o.client = std::make_shared<MlflowClient>(std::make_unique<FakeTransport>(server_),
                                              RetryPolicy{.attempts = 1});
    sync_ = std::make_unique<MlflowSync>(storage_, "s", o);
  }

  void finish_a_trial(double value) {
    const FrozenTrial t = static_cast<Storage&>(storage_).create_trial(study_);
    storage_.finish_trial(t.trial_id, TrialState::kComplete, {value});
  }

  BackgroundSyncOptions options() {
    return {.interval = 10ms,
            .max_backoff = 40ms,
            .final_pass_limit = 2s,
            .warn =
                [this](const std::string& line) {
                  std::lock_guard lock(mutex_);
                  warnings_.push_back(line);
                },
            .catch_up_hint = "tuner sync-mlflow --study s"};
  }

  std::vector<std::string> warnings() {
    std::lock_guard lock(mutex_);
    return warnings_;
  }

  // Waits up to 5 s for `done`.
  template <typename F>
  bool eventually(F done) {
    for (int i = 0; i < 500 && !done(); ++i) std::this_thread::sleep_for(10ms);
    return done();
  }

  std::shared_ptr<FakeMlflow> server_;
  InMemoryStorage storage_;
  int64_t study_;
  std::unique_ptr<MlflowSync> sync_;
  std::mutex mutex_;
  std::vector<std::string> warnings_;
};

TEST_F(BackgroundSyncTest, PassesRunOnTheirOwnAndTheLastOneFinishesTheStudy) {
  finish_a_trial(0.5);
  BackgroundSync background(*sync_, options());
  ASSERT_TRUE(eventually([&] { return server_->count("runs/create") == 2; }));
  finish_a_trial(0.3);
  background.nudge();
  ASSERT_TRUE(eventually([&] { return server_->count("runs/create") == 3; }));
  EXPECT_TRUE(background.finish(RunStatus::kFinished));
  EXPECT_EQ(server_->runs.at(sync_->record(kParentRun)->run_id).status, "FINISHED");
  EXPECT_TRUE(warnings().empty());
  EXPECT_TRUE(background.finish());  // the first answer stays
}

TEST_F(BackgroundSyncTest, AnOutageIsReportedOnceAndCaughtUp) {
  server_->down = true;
  BackgroundSync background(*sync_, options());
  for (int i = 0; i < 5; ++i) finish_a_trial(i);
  ASSERT_TRUE(eventually([&] { return background.failures() >= 4; }));
  std::vector<std::string> lines = warnings();
  ASSERT_EQ(lines.size(), 1u);  // one warning for the whole outage, not one per pass or trial
  EXPECT_NE(lines[0].find("connection refused"), std::string::npos);
  EXPECT_NE(lines[0].find("catches up when the server answers"), std::string::npos);
  EXPECT_NE(lines[0].find("tuner sync-mlflow --study s"), std::string::npos);
  server_->down = false;
  ASSERT_TRUE(eventually([&] { return server_->count("runs/create") == 6; }));
  ASSERT_TRUE(eventually([&] { return warnings().size() == 2; }));
  EXPECT_NE(warnings()[1].find("answers again; caught up"), std::string::npos);
  EXPECT_TRUE(background.finish(RunStatus::kFinished));
}

TEST_F(BackgroundSyncTest, AServerStillDownAtTheEndLeavesTrackingBehindWithoutThrowing) {
  server_->down = true;
  finish_a_trial(1);
  BackgroundSync background(*sync_, options());
  ASSERT_TRUE(eventually([&] { return background.failures() >= 1; }));
  EXPECT_FALSE(background.finish(RunStatus::kFinished));
  const std::vector<std::string> lines = warnings();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[1].find("MLflow tracking is behind"), std::string::npos);
  EXPECT_NE(lines[1].find("to catch up: tuner sync-mlflow --study s"), std::string::npos);
}

}  // namespace
}  // namespace tuner::tracking
