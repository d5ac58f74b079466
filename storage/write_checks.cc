#include "storage/write_checks.h"

#include <cmath>

#include "trials/error.h"

namespace tuner {

namespace {
std::string trial_name(const FrozenTrial& trial) { return "trial " + std::to_string(trial.number); }
Error invalid(const std::string& message) { return Error(ErrorCode::kInvalidArgument, message); }
}  // namespace

void check_writable(const FrozenTrial& trial, const std::string& what) {
  if (is_finished(trial.state)) {
    throw Error(ErrorCode::kFailedPrecondition,
                "cannot " + what + ": " + trial_name(trial) + " is already " +
                    std::string(to_string(trial.state)) + " and finished trials never change");
  }
}

void check_param(const FrozenTrial& trial, const std::string& name,
                 const Distribution& distribution, const ParamValue& value) {
  check_writable(trial, "set parameter '" + name + "'");
  validate(distribution, trial_name(trial) + " param '" + name + "'");
  if (!contains(distribution, value)) {
    throw invalid(trial_name(trial) + " param '" + name + "': " + to_string(value) + " is not in " +
                  to_string(distribution));
  }
  auto it = trial.distributions.find(name);
  if (it != trial.distributions.end() &&
      (it->second != distribution || trial.params.at(name) != value)) {
    throw invalid(trial_name(trial) + " param '" + name + "' is already set to " +
                  to_string(trial.params.at(name)) + " in " + to_string(it->second));
  }
}

void check_heartbeat(const FrozenTrial& trial) {
  if (trial.state != TrialState::kRunning) {
    throw Error(ErrorCode::kFailedPrecondition, "cannot record a heartbeat: " + trial_name(trial) +
                                                    " is " + std::string(to_string(trial.state)) +
                                                    ", not RUNNING");
  }
}

void check_intermediate_value(const FrozenTrial& trial, int64_t step, double value) {
  check_writable(trial, "report step " + std::to_string(step));
  if (std::isnan(value)) {
    throw invalid(trial_name(trial) + " step " + std::to_string(step) + ": the value is NaN");
  }
}

void check_finish(const FrozenTrial& trial, TrialState state, const std::vector<double>& values,
                  size_t n_objectives) {
  check_writable(trial, "finish it as " + std::string(to_string(state)));
  if (!is_finished(state)) {
    throw invalid(trial_name(trial) + ": cannot finish as " + std::string(to_string(state)));
  }
  for (double v : values) {
    if (std::isnan(v)) throw invalid(trial_name(trial) + ": a value is NaN");
  }
  if (state == TrialState::kComplete) {
    if (values.size() != n_objectives) {
      throw invalid(trial_name(trial) + ": COMPLETE needs " + std::to_string(n_objectives) +
                    " value(s), got " + std::to_string(values.size()));
    }
    for (double v : values) {
      if (!std::isfinite(v)) throw invalid(trial_name(trial) + ": COMPLETE with an infinite value");
    }
  } else if (state == TrialState::kFail && !values.empty()) {
    throw invalid(trial_name(trial) + ": a FAIL trial has no values");
  } else if (values.size() > n_objectives) {
    throw invalid(trial_name(trial) + ": too many values");
  }
}

}  // namespace tuner
