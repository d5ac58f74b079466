// The report marks the trials a scheduler stopped, and the step (the rung) it stopped them at.
#include <gtest/gtest.h>

#include <string>

#include "report/html_report.h"
#include "report/study_view.h"
#include "trials/system_attrs.h"

namespace tuner::report {
namespace {

FrozenTrial trial(int number, TrialState state) {
  FrozenTrial t;
  t.trial_id = number;
  t.number = number;
  t.state = state;
  t.intermediate_values = {{1, 0.5}, {3, 0.6}, {4, 0.61}};
  if (state == TrialState::kComplete) t.values = {0.7, 12.0};
  return t;
}

TEST(StoppedAtStepTest, TheTrialsTableAndTheHistoryNameTheStep) {
  ReportInput input;
  input.study.name = "mo";
  input.study.directions = {StudyDirection::kMaximize, StudyDirection::kMinimize};
  input.trials.push_back(trial(0, TrialState::kComplete));
  FrozenTrial stopped = trial(1, TrialState::kPruned);
  stopped.system_attrs[kStoppedAtStepAttr] = "3";  // a report at step 4 arrived after
  input.trials.push_back(stopped);
  input.trials.push_back(trial(2, TrialState::kPruned));  // pruned, not by a scheduler
  EXPECT_EQ(stopped_at_step(input.trials[1]), 3);
  EXPECT_EQ(stopped_at_step(input.trials[2]), std::nullopt);
  EXPECT_EQ(stopped_at_step(input.trials[0]), std::nullopt);

  const std::string html = render_report(input);
  size_t marks = 0;
  for (size_t at = html.find("class=\"stopped\""); at != std::string::npos;
       at = html.find("class=\"stopped\"", at + 1)) {
    ++marks;
  }
  EXPECT_EQ(marks, 1u);
  EXPECT_NE(html.find(">at step 3</span>"), std::string::npos);
}

}  // namespace
}  // namespace tuner::report
