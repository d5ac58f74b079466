#include "sweep/failure_policy.h"

#include <nlohmann/json.hpp>

#include "sweep/trial_logs.h"
#include "trials/json_reader.h"
#include "trials/system_attrs.h"

namespace tuner {
namespace {

// ` (did you mean "x"?)` for a typo of a printed metric (trials/json_reader.h did_you_mean), or
// for the one printed metric that the name abbreviates or extends ("val_acc": "val_accuracy").
std::string metric_hint(const std::string& metric, const std::vector<std::string>& printed) {
  if (std::string hint = did_you_mean(metric, printed); !hint.empty()) return hint;
  std::vector<std::string> related;
  for (const std::string& name : printed) {
    if (name.find(metric) != std::string::npos || metric.find(name) != std::string::npos) {
      related.push_back(name);
    }
  }
  return related.size() == 1 ? " (did you mean \"" + related[0] + "\"?)" : "";
}

}  // namespace

std::optional<MissingMetric> missing_objective_metric(const FrozenTrial& trial) {
  if (trial.state != TrialState::kFail) return std::nullopt;
  auto it = trial.system_attrs.find(kMissingMetricAttr);
  if (it == trial.system_attrs.end()) return std::nullopt;
  const nlohmann::json metric = nlohmann::json::parse(it->second, nullptr, false);
  if (!metric.is_string()) return std::nullopt;
  MissingMetric missing{.metric = metric.get<std::string>()};
  for (const auto& [name, value] : trial.user_attrs) missing.printed.push_back(name);
  return missing;
}

FailurePolicy::FailurePolicy(std::optional<int> max_failures, bool metric_seen)
    : max_failures_(max_failures), metric_seen_(metric_seen) {}

std::optional<std::string> FailurePolicy::add(const FrozenTrial& trial) {
  if (stop_reason_) return std::nullopt;
  if (trial.state == TrialState::kComplete) metric_seen_ = true;
  const std::string reason = fail_reason(trial);
  if (trial.state == TrialState::kFail &&
      (reason.starts_with("abandoned") || reason.starts_with("preempted"))) {
    return std::nullopt;
  }
  ++finished_;
  if (trial.state != TrialState::kFail) {
    all_same_ = false;
    return std::nullopt;
  }
  ++failed_;
  if (failed_ == 1) first_reason_ = reason;
  all_same_ = all_same_ && reason == first_reason_;
  const std::string summary = failure_summary(trial);
  const std::string last =
      "trial " + std::to_string(trial.number) + (summary.empty() ? "" : ": " + summary);
  std::optional<std::string> stop;
  if (const std::optional<MissingMetric> missing = missing_objective_metric(trial);
      missing && !metric_seen_) {
    std::string printed;
    for (const std::string& name : missing->printed)
      printed += (printed.empty() ? "" : ", ") + name;
    stop = "trial " + std::to_string(trial.number) + " ended without the objective metric '" +
           missing->metric + "'" + metric_hint(missing->metric, missing->printed) +
           " (it printed: " + (printed.empty() ? "no metrics" : printed) +
           "), and no trial of the study has had it: fix objective.metric in the sweep file "
           "(under a new study name: a study keeps its metric) or what the program prints";
  } else if (max_failures_ && *max_failures_ > 0 && failed_ >= *max_failures_) {
    stop = std::to_string(failed_) + " trial" + (failed_ == 1 ? "" : "s") +
           " failed (budget.max_failures " + std::to_string(*max_failures_) + "); the last, " +
           last;
  } else if (!max_failures_ && all_same_ && finished_ == kDefaultSameFailures) {
    stop = "the first " + std::to_string(kDefaultSameFailures) +
           " trials failed the same way (budget.max_failures, unset: stop when the first " +
           std::to_string(kDefaultSameFailures) + " all fail alike); the last, " + last;
  }
  stop_reason_ = stop;
  return stop;
}

}  // namespace tuner
