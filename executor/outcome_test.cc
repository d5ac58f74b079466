#include "executor/outcome.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <variant>

namespace tuner {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::unique_ptr<TrialJob> job(const std::string& extra = "") {
  return parse_trial_job(R"({"kind": "command", "argv": ["a"], "objective_metric": "loss")" +
                         extra + "}");
}

CommandOutcome exited(int code, Metrics metrics = {}) {
  CommandOutcome outcome{.exit_code = code, .log_tail = "the tail\n"};
  if (!metrics.empty()) outcome.final_metrics = std::move(metrics);
  return outcome;
}

TEST(OutcomeTest, AJobThatEndsWellIsAResultWithItsMetricsAndNoValues) {
  CommandOutcome outcome = exited(0, {{"loss", 0.25}, {"epoch", 3}});
  outcome.final_integers = {"epoch"};
  Message m = outcome_message(*job(), JobEnding{.lease_id = 7}, outcome);
  const auto& result = std::get<ResultMessage>(m);
  EXPECT_EQ(result.lease_id, 7u);
  EXPECT_EQ(result.metrics, (Metrics{{"loss", 0.25}, {"epoch", 3}}));
  EXPECT_TRUE(result.values.empty());  // the coordinator picks the objective values
  EXPECT_EQ(result.integer_metrics, std::vector<std::string>{"epoch"});
}

// The coordinator judges the metrics (a missing objective metric fails the trial there).
TEST(OutcomeTest, AJobThatEndsWellWithoutItsObjectiveMetricIsAResultAllTheSame) {
  Message m = outcome_message(*job(), JobEnding{.lease_id = 7}, exited(0, {{"acc", 0.5}}));
  EXPECT_EQ(std::get<ResultMessage>(m).metrics, (Metrics{{"acc", 0.5}}));
  EXPECT_TRUE(std::get<ResultMessage>(outcome_message(*job(), {}, exited(0))).metrics.empty());
}

TEST(OutcomeTest, ANonZeroExitIsAFailWithTheExitCodeAndTheLogTail) {
  Message m = outcome_message(*job(), JobEnding{.lease_id = 7}, exited(3, {{"loss", 0.25}}));
  const auto& fail = std::get<FailMessage>(m);
  EXPECT_EQ(fail.reason, "exited with code 3");
  EXPECT_EQ(fail.exit_code, 3);
  EXPECT_EQ(fail.log_tail, "the tail\n");
}

TEST(OutcomeTest, AStopOrPauseDecidedByTheCoordinatorIsAResult) {
  CommandOutcome outcome = exited(0, {{"loss", 0.5}});
  outcome.stopped_by = JobDecision::kStop;
  Message m = outcome_message(*job(), JobEnding{.decision = JobDecision::kStop}, outcome);
  EXPECT_EQ(std::get<ResultMessage>(m).metrics, (Metrics{{"loss", 0.5}}));

  outcome.final_metrics.reset();  // paused before any metric: a result all the same
  m = outcome_message(*job(), JobEnding{.decision = JobDecision::kPause}, outcome);
  EXPECT_TRUE(std::get<ResultMessage>(m).metrics.empty());
}

TEST(OutcomeTest, AJobTheExecutorStoppedIsAFailGivingItsReason) {
  CommandOutcome outcome = exited(0, {{"loss", 0.5}});
  outcome.stopped_by = JobDecision::kStop;
  Message m = outcome_message(
      *job(), JobEnding{.executor_stop_reason = "the coordinator gave up lease 7"}, outcome);
  EXPECT_EQ(std::get<FailMessage>(m).reason,
            "stopped by the executor (the coordinator gave up lease 7); stopped (stop); exited "
            "with code 0");
}

TEST(OutcomeTest, TheJobsOwnTimeLimitIsAFailEvenWhenTheExecutorAlsoStoppedIt) {
  CommandOutcome outcome = exited(0);
  outcome.exit_code.reset();
  outcome.term_signal = 15;
  outcome.timed_out = true;
  Message m = outcome_message(*job(R"(, "timeout_s": 30)"),
                              JobEnding{.executor_stop_reason = "shutting down"}, outcome);
  EXPECT_THAT(std::get<FailMessage>(m).reason,
              StartsWith("timed out after 30 s (the job's timeout_s); killed by signal 15"));
}

TEST(OutcomeTest, ANodeOtherThanZeroSendsAResultWithoutMetrics) {
  Message m = outcome_message(*job(), JobEnding{.lease_id = 7, .node = 1}, exited(0));
  EXPECT_EQ(std::get<ResultMessage>(m), ResultMessage{.lease_id = 7});
  EXPECT_TRUE(std::holds_alternative<FailMessage>(
      outcome_message(*job(), JobEnding{.node = 1}, exited(1))));
}

TEST(OutcomeTest, AJobThatCannotStartIsAFail) {
  EXPECT_EQ(start_failure(7, "no such program"),
            (FailMessage{.lease_id = 7, .reason = "the job could not start: no such program"}));
}

}  // namespace
}  // namespace tuner
