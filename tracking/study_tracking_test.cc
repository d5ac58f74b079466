// The C++ API's way to track a study (tracking/mlflow_sync.h's example): a Study's optimize()
// with a syncer on its storage, nudged from the trial callback, finished after it.
#include <gtest/gtest.h>

#include "storage/in_memory_storage.h"
#include "tracking/background_sync.h"
#include "tracking/fake_mlflow_test_support.h"
#include "tracking/mlflow_sync.h"
#include "tuner/study.h"

namespace tuner::tracking {
namespace {

TEST(StudyTrackingTest, OptimizeIsLoggedWithItsIntermediateValuesAndStepMetrics) {
  auto server = std::make_shared<testing::FakeMlflow>();
  StudyOptions options;
  options.name = "api";
  options.storage = std::make_shared<InMemoryStorage>();
  options.seed = 3;
  Study study = Study::create(options);

  MlflowSyncOptions sync_options;
  sync_options.client =
      std::make_shared<MlflowClient>(std::make_unique<testing::FakeTransport>(server));
  sync_options.objective_metrics = {"loss"};
  MlflowSync mlflow(study.storage(), study.name(), sync_options);
  BackgroundSync background(mlflow, {.interval = std::chrono::milliseconds(20)});
  study.optimize(
      [](Trial& trial) {
        const double x = trial.suggest_float("x", -2, 2);
        for (int step = 1; step <= 3; ++step) {
          trial.log_metrics(step, {{"train_loss", 2.0 / step}});
          trial.report(step, x * x + 1.0 / step);
        }
        return x * x;
      },
      {.n_trials = 5, .on_trial_finished = [&](const FrozenTrial&) { background.nudge(); }});
  EXPECT_TRUE(background.finish(RunStatus::kFinished));

  ASSERT_EQ(server->runs.size(), 6u);
  for (const FrozenTrial& t : study.trials()) {
    const testing::FakeRun& run = server->runs.at(mlflow.record(t.number)->run_id);
    EXPECT_EQ(run.status, "FINISHED");
    EXPECT_EQ(std::stod(run.params.at("x")), std::get<double>(t.params.at("x")));
    std::map<int64_t, double> steps, train_loss;
    for (const auto& [key, step, ts, value] : run.metrics) {
      // Not the final value (x * x) the last step also gets.
      if (key == "loss" && step >= 1 && step <= 3 && value != t.values[0]) steps[step] = value;
      if (key == "train_loss") train_loss[step] = value;
    }
    EXPECT_EQ(steps, t.intermediate_values);
    EXPECT_EQ(train_loss, (std::map<int64_t, double>{{1, 2.0}, {2, 1.0}, {3, 2.0 / 3}}));
  }
}

}  // namespace
}  // namespace tuner::tracking
