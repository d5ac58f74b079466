#include "tracking/trial_run.h"

#include <gtest/gtest.h>

#include "trials/system_attrs.h"

namespace tuner::tracking {
namespace {

using std::chrono::milliseconds;

FrozenTrial running_trial() {
  FrozenTrial t;
  t.trial_id = 10;
  t.number = 3;
  t.state = TrialState::kRunning;
  t.params = {{"lr", 0.01}, {"act", std::string("relu")}, {"width", int64_t{64}}};
  t.intermediate_values = {{1, 0.5}, {2, 0.25}};
  t.datetime_start = TimePoint(milliseconds(1'000'000));
  return t;
}

std::map<std::string, double> at_step(const TrialUpdate& u, int64_t step) {
  std::map<std::string, double> out;
  for (const MlflowMetric& m : u.metrics) {
    if (m.step == step) out[m.key] = m.value;
  }
  return out;
}

TEST(TrialRunTest, ARunningTrialGetsParamsAndItsSteps) {
  const TrialContext context{.study = "s", .objective_metrics = {"loss"}, .now_ms = 5'000'000};
  const TrialUpdate u = plan_trial_update(running_trial(), RunRecord{.trial = 3}, context);
  EXPECT_EQ(u.params, (std::vector<MlflowTag>{{"act", "relu"}, {"lr", "0.01"}, {"width", "64"}}));
  ASSERT_EQ(u.metrics.size(), 2u);
  EXPECT_EQ(u.metrics[0],
            (MlflowMetric{.key = "loss", .value = 0.5, .timestamp_ms = 5'000'000, .step = 1}));
  EXPECT_EQ(u.metrics[1].step, 2);
  EXPECT_FALSE(u.status);
  EXPECT_EQ(u.after.step_sent, 2);
  EXPECT_EQ(u.after.params_sent, 3);
  EXPECT_FALSE(u.after.finished);
  // Sent already: nothing again.
  EXPECT_TRUE(plan_trial_update(running_trial(), u.after, context).empty());
  // A new step: only it.
  FrozenTrial later = running_trial();
  later.intermediate_values[3] = 0.125;
  const TrialUpdate next = plan_trial_update(later, u.after, context);
  ASSERT_EQ(next.metrics.size(), 1u);
  EXPECT_EQ(next.metrics[0].step, 3);
  EXPECT_TRUE(next.params.empty());
}

TEST(TrialRunTest, StepMetricsKeepTheirTimesAndWinOverStoredValues) {
  TrialContext context{.study = "s", .objective_metrics = {"loss"}, .now_ms = 9};
  context.steps = {{.step = 1,
                    .time = TimePoint(milliseconds(1000)),
                    .metrics = {{"loss", 0.5}, {"train_loss", 0.7}}},
                   {.step = 2,
                    .time = TimePoint(milliseconds(2000)),
                    .metrics = {{"loss", 0.25}, {"train_loss", 0.4}}}};
  const TrialUpdate u = plan_trial_update(running_trial(), RunRecord{.trial = 3}, context);
  EXPECT_EQ(u.metrics.size(), 4u);
  for (const MlflowMetric& m : u.metrics) EXPECT_EQ(m.timestamp_ms, m.step * 1000);
  EXPECT_EQ(at_step(u, 2), (std::map<std::string, double>{{"loss", 0.25}, {"train_loss", 0.4}}));
}

// The objective's value of a step is stored after the step's other metrics: while a trial runs,
// its steps past its last intermediate value wait, and go once it has them or has finished.
TEST(TrialRunTest, ARunningTrialsStepsPastItsLastIntermediateValueWait) {
  TrialContext context{.study = "s", .objective_metrics = {"loss"}, .now_ms = 9};
  for (int64_t step = 1; step <= 3; ++step) {
    context.steps.push_back({.step = step,
                             .time = TimePoint(milliseconds(step * 1000)),
                             .metrics = {{"train_loss", 1.0 / static_cast<double>(step)}}});
  }
  FrozenTrial t = running_trial();  // intermediate values at steps 1 and 2
  const TrialUpdate u = plan_trial_update(t, RunRecord{.trial = 3}, context);
  EXPECT_EQ(u.after.step_sent, 2);
  EXPECT_EQ(at_step(u, 2), (std::map<std::string, double>{{"loss", 0.25}, {"train_loss", 0.5}}));
  EXPECT_TRUE(at_step(u, 3).empty());
  t.intermediate_values[3] = 0.125;
  const TrialUpdate next = plan_trial_update(t, u.after, context);
  EXPECT_EQ(at_step(next, 3),
            (std::map<std::string, double>{{"loss", 0.125}, {"train_loss", 1.0 / 3}}));
  EXPECT_EQ(next.after.step_sent, 3);

  // A trial without intermediate values (several objectives) sends each step as it comes; a
  // finished one sends them all.
  t.intermediate_values.clear();
  EXPECT_EQ(plan_trial_update(t, RunRecord{.trial = 3}, context).after.step_sent, 3);
  t = running_trial();
  t.state = TrialState::kPruned;
  t.datetime_complete = TimePoint(milliseconds(9000));
  const TrialUpdate ended = plan_trial_update(t, RunRecord{.trial = 3}, context);
  EXPECT_EQ(ended.after.step_sent, 3);
  EXPECT_EQ(ended.end_time_ms, 9000);
  EXPECT_EQ(ended.status, RunStatus::kKilled);
}

TEST(TrialRunTest, ACompleteTrialGetsItsFinalMetricsAtTheLastStep) {
  FrozenTrial t = running_trial();
  t.state = TrialState::kComplete;
  t.values = {0.2};
  t.user_attrs = {{"loss", "0.2"}, {"x", "2.9"}, {"note", "\"fine\""}};
  t.system_attrs = {{"tuner:sampler", "\"tpe\""}, {"constraints", "[-1.5, 0.5]"}};
  t.datetime_complete = TimePoint(milliseconds(2'000'000));
  const TrialContext context{.study = "s",
                             .objective_metrics = {"loss"},
                             .now_ms = 5'000'000,
                             .constraint_names = {"epoch_seconds.max"}};
  const TrialUpdate u =
      plan_trial_update(t, RunRecord{.trial = 3, .params_sent = 3, .step_sent = 2}, context);
  EXPECT_EQ(at_step(u, 2), (std::map<std::string, double>{{"loss", 0.2},
                                                          {"x", 2.9},
                                                          {"constraint/epoch_seconds.max", -1.5},
                                                          {"constraint/1", 0.5}}));
  for (const MlflowMetric& m : u.metrics) EXPECT_EQ(m.timestamp_ms, 2'000'000);
  EXPECT_EQ(u.status, RunStatus::kFinished);
  EXPECT_EQ(u.end_time_ms, 2'000'000);
  EXPECT_TRUE(u.after.finished);
  auto has_tag = [&](const std::string& k, const std::string& v) {
    return std::find(u.tags.begin(), u.tags.end(), MlflowTag{k, v}) != u.tags.end();
  };
  EXPECT_TRUE(has_tag("tuner.state", "COMPLETE"));
  EXPECT_TRUE(has_tag("tuner.sampler", "tpe"));
  EXPECT_TRUE(has_tag("tuner.feasible", "false"));
  EXPECT_TRUE(has_tag("tuner.attr.note", "fine"));
  // Once finished, nothing more.
  EXPECT_TRUE(plan_trial_update(t, u.after, context).empty());
}

TEST(TrialRunTest, StatesMapToRunStatuses) {
  EXPECT_EQ(run_status(TrialState::kComplete), RunStatus::kFinished);
  EXPECT_EQ(run_status(TrialState::kPruned), RunStatus::kKilled);
  EXPECT_EQ(run_status(TrialState::kFail), RunStatus::kFailed);
  EXPECT_EQ(run_status(TrialState::kRunning), RunStatus::kRunning);
  FrozenTrial t = running_trial();
  t.state = TrialState::kFail;
  t.system_attrs[kFailReasonAttr] = "\"exit code 1\"";
  const TrialUpdate u = plan_trial_update(t, RunRecord{.trial = 3}, {.study = "s"});
  EXPECT_EQ(u.status, RunStatus::kFailed);
  // Without a completion time the trial's steps and end take the time the syncer saw them.
  EXPECT_NE(std::find(u.tags.begin(), u.tags.end(), MlflowTag{"tuner.fail_reason", "exit code 1"}),
            u.tags.end());
  // No objective names given: "value".
  EXPECT_EQ(u.metrics.front().key, "value");
}

TEST(TrialRunTest, KeysAreMadeWhatMlflowAccepts) {
  EXPECT_EQ(mlflow_key("val_accuracy"), "val_accuracy");
  EXPECT_EQ(mlflow_key("a/b:c d.e-f"), "a/b:c d.e-f");
  EXPECT_EQ(mlflow_key("loss[0]"), "loss_0_");
  EXPECT_EQ(mlflow_key(std::string(300, 'k')).size(), kMaxKeyLength);
  const FrozenTrial t = running_trial();
  const std::vector<MlflowTag> tags = trial_creation_tags(t, {.study = "s"}, "parent");
  EXPECT_EQ(tags[0], (MlflowTag{"mlflow.parentRunId", "parent"}));
  EXPECT_EQ(tags[2], (MlflowTag{"tuner.trial_number", "3"}));
  EXPECT_EQ(trial_run_name(t), "trial-3");
}

}  // namespace
}  // namespace tuner::tracking
