// Trial states and study directions, numbered as Optuna numbers them (its storages store these).
#ifndef TUNER_TRIALS_TRIAL_STATE_H_
#define TUNER_TRIALS_TRIAL_STATE_H_

#include <optional>
#include <string_view>

namespace tuner {

enum class TrialState {
  kRunning = 0,
  kComplete = 1,
  kPruned = 2,
  kFail = 3,
  kWaiting = 4,  // enqueued, not started
};

// True for COMPLETE, PRUNED and FAIL: the trial will never change again.
constexpr bool is_finished(TrialState state) {
  return state == TrialState::kComplete || state == TrialState::kPruned ||
         state == TrialState::kFail;
}

std::string_view to_string(TrialState state);  // "RUNNING", "COMPLETE", ...
std::optional<TrialState> parse_trial_state(std::string_view name);

enum class StudyDirection {
  kMinimize = 1,
  kMaximize = 2,
};

std::string_view to_string(StudyDirection direction);  // "minimize" or "maximize"

// True when `a` is strictly better than `b` in `direction`.
constexpr bool is_better(StudyDirection direction, double a, double b) {
  return direction == StudyDirection::kMinimize ? a < b : a > b;
}

// `value` as a loss, lower being better: itself when minimizing, negated when maximizing.
constexpr double as_loss(StudyDirection direction, double value) {
  return direction == StudyDirection::kMinimize ? value : -value;
}

}  // namespace tuner

#endif  // TUNER_TRIALS_TRIAL_STATE_H_
