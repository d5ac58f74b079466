#include "sweep/failure_policy.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "trials/system_attrs.h"

namespace tuner {
namespace {

FrozenTrial finished(int number, TrialState state, const std::string& reason = "",
                     const std::string& log_tail = "") {
  FrozenTrial t;
  t.number = number;
  t.state = state;
  if (!reason.empty()) t.system_attrs[kFailReasonAttr] = nlohmann::json(reason).dump();
  if (!log_tail.empty()) t.system_attrs["log_tail"] = nlohmann::json(log_tail).dump();
  if (state == TrialState::kComplete) t.values = {1.0};
  return t;
}

// A trial that ended well without `metric`, having printed `printed` (as StudyRun tells it).
FrozenTrial without_metric(int number, const std::string& metric,
                           const std::vector<std::string>& printed) {
  FrozenTrial t = finished(number, TrialState::kFail,
                           "the job ended well without its objective metric '" + metric + "'");
  t.system_attrs[kMissingMetricAttr] = nlohmann::json(metric).dump();
  for (const std::string& name : printed) t.user_attrs[name] = "0.5";
  return t;
}

FrozenTrial crashed(int number) {
  return finished(number, TrialState::kFail, "exited with code 1",
                  "Traceback (most recent call last):\nValueError: boom\n[tuner] trial " +
                      std::to_string(number) + ": exited with code 1 after 5 ms\n");
}

TEST(FailurePolicyTest, ByDefaultTheFirstThreeTrialsFailingAlikeStopTheSweep) {
  FailurePolicy policy(std::nullopt, false);
  EXPECT_EQ(policy.add(crashed(0)), std::nullopt);
  EXPECT_EQ(policy.add(crashed(1)), std::nullopt);
  const std::optional<std::string> stop = policy.add(crashed(2));
  ASSERT_TRUE(stop.has_value());
  EXPECT_EQ(*stop,
            "the first 3 trials failed the same way (budget.max_failures, unset: stop when the "
            "first 3 all fail alike); the last, trial 2: exited with code 1: ValueError: boom");
  EXPECT_EQ(policy.add(crashed(3)), std::nullopt);  // said once
}

TEST(FailurePolicyTest, ByDefaultDifferentReasonsOrASuccessGoOn) {
  FailurePolicy different(std::nullopt, false);
  EXPECT_EQ(different.add(crashed(0)), std::nullopt);
  EXPECT_EQ(different.add(finished(1, TrialState::kFail, "exited with code 2")), std::nullopt);
  EXPECT_EQ(different.add(crashed(2)), std::nullopt);
  FailurePolicy success(std::nullopt, false);
  EXPECT_EQ(success.add(finished(0, TrialState::kComplete)), std::nullopt);
  for (int i = 1; i < 10; ++i) EXPECT_EQ(success.add(crashed(i)), std::nullopt) << i;
  EXPECT_EQ(success.failed(), 9);
}

TEST(FailurePolicyTest, MaxFailuresCountsEveryFailureOfTheRun) {
  FailurePolicy policy(2, false);
  EXPECT_EQ(policy.add(finished(0, TrialState::kComplete)), std::nullopt);
  EXPECT_EQ(policy.add(finished(1, TrialState::kPruned)), std::nullopt);
  EXPECT_EQ(policy.add(crashed(2)), std::nullopt);
  // A trial the sweep itself stopped is not one of its failures.
  EXPECT_EQ(policy.add(finished(3, TrialState::kFail, "abandoned: the sweep was stopped")),
            std::nullopt);
  // Nor is a trial whose executor was stopped under it: it runs again.
  EXPECT_EQ(policy.add(finished(
                3, TrialState::kFail,
                "preempted: its executor a on n1 was stopped; re-run without a retry counted")),
            std::nullopt);
  EXPECT_EQ(policy.add(finished(4, TrialState::kFail, "killed by signal 9 (SIGKILL)")),
            "2 trials failed (budget.max_failures 2); the last, trial 4: killed by signal 9 "
            "(SIGKILL)");
}

TEST(FailurePolicyTest, ZeroIsNoLimit) {
  FailurePolicy policy(0, false);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(policy.add(crashed(i)), std::nullopt) << i;
}

TEST(FailurePolicyTest, AMissingObjectiveMetricStopsAtOnceWithADidYouMean) {
  FailurePolicy policy(0, false);  // whatever the limit
  const std::optional<std::string> stop =
      policy.add(without_metric(0, "val_acc", {"train_loss", "val_accuracy"}));
  ASSERT_TRUE(stop.has_value());
  EXPECT_EQ(*stop,
            "trial 0 ended without the objective metric 'val_acc' (did you mean "
            "\"val_accuracy\"?) (it printed: train_loss, val_accuracy), and no trial of the study "
            "has had it: fix objective.metric in the sweep file (under a new study name: a study "
            "keeps its metric) or what the program prints");
}

TEST(FailurePolicyTest, AMissingMetricIsAnOrdinaryFailureOnceATrialHadIt) {
  const FrozenTrial missing = without_metric(5, "loss", {});
  FailurePolicy seen_before(0, true);
  EXPECT_EQ(seen_before.add(missing), std::nullopt);
  FailurePolicy seen_now(0, false);
  EXPECT_EQ(seen_now.add(finished(0, TrialState::kComplete)), std::nullopt);
  EXPECT_EQ(seen_now.add(missing), std::nullopt);
}

TEST(FailurePolicyTest, MissingObjectiveMetricReadsTheAttributeNotTheReason) {
  const std::optional<MissingMetric> missing =
      missing_objective_metric(without_metric(0, "loss", {"a", "b"}));
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->metric, "loss");
  EXPECT_EQ(missing->printed, (std::vector<std::string>{"a", "b"}));
  // A program's own message that looks alike is an ordinary failure.
  EXPECT_EQ(missing_objective_metric(finished(1, TrialState::kFail,
                                              "the job ended well without its objective metric "
                                              "'loss' (it printed: a)")),
            std::nullopt);
  EXPECT_EQ(missing_objective_metric(crashed(2)), std::nullopt);
}

}  // namespace
}  // namespace tuner
