#include "sweep/objective_direction.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tuner {
namespace {

using ::testing::HasSubstr;

TEST(ObjectiveDirection, NamesSuggestADirection) {
  for (const char* name : {"val_accuracy", "acc", "val_acc", "AUC", "f1", "macro-F1", "precision",
                           "recall@5", "r2", "top1Accuracy"}) {
    EXPECT_EQ(direction_suggested_by(name), StudyDirection::kMaximize) << name;
  }
  for (const char* name :
       {"loss", "val_loss", "error", "test_error_rate", "mse", "val_rmse", "mae"}) {
    EXPECT_EQ(direction_suggested_by(name), StudyDirection::kMinimize) << name;
  }
  // Neither, or a short word inside another: no suggestion.
  for (const char* name : {"latency_ms", "reward", "accel", "maerk", "auc_loss", "score"}) {
    EXPECT_EQ(direction_suggested_by(name), std::nullopt) << name;
  }
}

TEST(ObjectiveDirection, ContradictionIsAWarningLine) {
  SweepFile sweep;
  sweep.path = "sweep.json";
  sweep.objectives = {{"val_accuracy", StudyDirection::kMinimize}};
  const std::vector<std::string> lines = direction_warnings(sweep);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("sweep.json: objective.direction is \"minimize\", but the "
                                  "metric \"val_accuracy\" reads as one to maximize"));

  sweep.objectives = {{"val_accuracy", StudyDirection::kMaximize},
                      {"train_loss", StudyDirection::kMaximize}};
  const std::vector<std::string> two = direction_warnings(sweep);
  ASSERT_EQ(two.size(), 1u);
  EXPECT_THAT(two[0], HasSubstr("objectives[1].direction is \"maximize\""));

  sweep.objectives = {{"val_loss", StudyDirection::kMinimize}};
  EXPECT_TRUE(direction_warnings(sweep).empty());
}

}  // namespace
}  // namespace tuner
