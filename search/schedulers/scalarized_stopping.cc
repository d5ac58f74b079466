#include "search/schedulers/scalarized_stopping.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "trials/error.h"

namespace tuner {

namespace {

Error invalid_weights(const std::string& message) {
  return Error(ErrorCode::kInvalidArgument, "scalarization.weights: " + message);
}

}  // namespace

ScalarizedStopping::ScalarizedStopping(std::shared_ptr<const PercentileStopping> rule,
                                       std::vector<double> weights)
    : rule_(std::move(rule)), weights_(std::move(weights)) {
  if (!rule_) throw Error(ErrorCode::kInvalidArgument, "scalarization: no stopping rule given");
  if (weights_.empty()) throw invalid_weights("give one weight per objective");
  for (size_t i = 0; i < weights_.size(); ++i) {
    if (!std::isfinite(weights_[i]) || weights_[i] < 0) {
      throw invalid_weights("weight " + std::to_string(i) + " must be a finite number >= 0, got " +
                            std::to_string(weights_[i]));
    }
  }
  if (std::all_of(weights_.begin(), weights_.end(), [](double w) { return w == 0; })) {
    throw invalid_weights("at least one weight must be > 0");
  }
}

double ScalarizedStopping::scalarize(std::span<const double> values,
                                     std::span<const StudyDirection> directions) const {
  double s = 0;
  for (size_t i = 0; i < weights_.size(); ++i) {
    if (weights_[i] == 0) continue;
    if (i >= values.size() || !std::isfinite(values[i])) {
      return std::numeric_limits<double>::quiet_NaN();
    }
    s += weights_[i] * (directions[i] == StudyDirection::kMaximize ? values[i] : -values[i]);
  }
  return s;
}

Decision ScalarizedStopping::on_report(const FrozenTrial& trial, int64_t step,
                                       const History& history) const {
  if (history.objective_steps == nullptr || history.directions.size() != weights_.size()) {
    return Decision::kContinue;
  }
  // The study as the rule sees it: one maximized objective, s. Only what the rule reads is
  // copied: every trial's number and state, the COMPLETE trials' scalars at `step`, and the
  // reporting trial's scalars at every step.
  std::vector<FrozenTrial> scalar(history.trials.size());
  for (size_t i = 0; i < history.trials.size(); ++i) {
    const FrozenTrial& t = history.trials[i];
    scalar[i].trial_id = t.trial_id;
    scalar[i].number = t.number;
    scalar[i].state = t.state;
    if (t.state != TrialState::kComplete || t.number == trial.number) continue;
    if (const auto* steps = history.objective_steps->of(t.number)) {
      if (auto it = steps->find(step); it != steps->end()) {
        scalar[i].intermediate_values[step] = scalarize(it->second, history.directions);
      }
    }
  }
  FrozenTrial own;
  own.trial_id = trial.trial_id;
  own.number = trial.number;
  own.state = trial.state;
  if (const auto* steps = history.objective_steps->of(trial.number)) {
    for (const auto& [s, values] : *steps) {
      if (s > step) break;
      own.intermediate_values[s] = scalarize(values, history.directions);
    }
  }
  if (!own.intermediate_values.contains(step)) return Decision::kContinue;
  static constexpr StudyDirection kMaximize[] = {StudyDirection::kMaximize};
  History view{scalar, kMaximize, history.noisy};
  return rule_->on_report(own, step, view);
}

}  // namespace tuner
