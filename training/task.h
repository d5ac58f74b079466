// What a model learns from its labels: the loss it trains with and the metrics it is judged by
// (docs/training.md, "Tasks").
#ifndef TUNER_TRAINING_TASK_H_
#define TUNER_TRAINING_TASK_H_

#include <optional>
#include <string_view>

namespace tuner::training {

enum class Task {
  // Labels in [0, K): K logits, softmax cross-entropy; accuracy.
  kClassification,
  // Labels 0 and 1: 2 logits, softmax cross-entropy; accuracy and ROC AUC of logit 1 - logit 0.
  kBinary,
  // T float targets per sample: T outputs, mean squared error; RMSE and MAE.
  kRegression,
};

// "classification", "binary", "regression".
constexpr std::string_view task_name(Task task) {
  switch (task) {
    case Task::kClassification:
      return "classification";
    case Task::kBinary:
      return "binary";
    case Task::kRegression:
      return "regression";
  }
  return "?";
}

// The task named `name` (task_name's spelling); nullopt for any other.
constexpr std::optional<Task> parse_task(std::string_view name) {
  for (Task t : {Task::kClassification, Task::kBinary, Task::kRegression}) {
    if (task_name(t) == name) return t;
  }
  return std::nullopt;
}

}  // namespace tuner::training

#endif  // TUNER_TRAINING_TASK_H_
