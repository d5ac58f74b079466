#include "tracking/trial_run.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "trials/constraints.h"
#include "trials/error.h"
#include "trials/param_value.h"
#include "trials/system_attrs.h"
#include "trials/trial_origin.h"

namespace tuner::tracking {

namespace {

// A JSON attribute's text: a string's own text, anything else as JSON.
std::string attr_text(const std::string& json) {
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_discarded() && j.is_string()) return j.get<std::string>();
  return json;
}

std::optional<double> attr_number(const std::string& json) {
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_discarded() && j.is_number()) return j.get<double>();
  return std::nullopt;
}

std::string param_text(const ParamValue& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  return tuner::to_string(value);
}

std::vector<std::string> objective_names(const FrozenTrial& trial, const TrialContext& context) {
  std::vector<std::string> names = context.objective_metrics;
  const size_t n = std::max(names.size(), trial.values.size());
  for (size_t i = names.size(); i < n; ++i) {
    names.push_back(n == 1 ? "value" : "value_" + std::to_string(i));
  }
  if (names.empty()) names.push_back("value");
  return names;
}

// One step as the run gets it: its metrics, and its time when one was measured.
struct RunStep {
  StepValues metrics;
  std::optional<int64_t> time_ms;
};

// The trial's steps, merged: the measured ones (with their times) and the stored intermediate
// values (the objective's metric), by step.
std::map<int64_t, RunStep> merged_steps(const FrozenTrial& trial, const TrialContext& context,
                                        const std::string& objective) {
  std::map<int64_t, RunStep> steps;
  for (const StepMetrics& s : context.steps) {
    RunStep& step = steps[s.step];
    for (const auto& [key, value] : s.metrics) step.metrics.insert_or_assign(key, value);
    step.time_ms = std::max(step.time_ms.value_or(to_ms(s.time)), to_ms(s.time));
  }
  for (const auto& [step, value] : trial.intermediate_values) {
    steps[step].metrics.emplace(objective, value);  // a measured value of the same metric stays
  }
  return steps;
}

}  // namespace

RunStatus run_status(TrialState state) {
  switch (state) {
    case TrialState::kComplete:
      return RunStatus::kFinished;
    case TrialState::kPruned:
      return RunStatus::kKilled;
    case TrialState::kFail:
      return RunStatus::kFailed;
    case TrialState::kWaiting:
      return RunStatus::kScheduled;
    case TrialState::kRunning:
      break;
  }
  return RunStatus::kRunning;
}

std::string mlflow_key(const std::string& key) {
  std::string out;
  for (char c : key.substr(0, kMaxKeyLength)) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
                    c == '.' || c == ' ' || c == ':' || c == '/';
    out += ok ? c : '_';
  }
  if (out.empty()) out = "_";
  return out;
}

int64_t to_ms(TimePoint time) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
}

std::string trial_run_name(const FrozenTrial& trial) {
  return "trial-" + std::to_string(trial.number);
}

std::vector<MlflowTag> trial_creation_tags(const FrozenTrial& trial, const TrialContext& context,
                                           const std::string& parent_run_id) {
  std::vector<MlflowTag> tags = {{"mlflow.parentRunId", parent_run_id},
                                 {"tuner.study", context.study},
                                 {"tuner.trial_number", std::to_string(trial.number)},
                                 {"tuner.state", std::string(to_string(trial.state))}};
  if (const std::string origin = sampler_of(trial); !origin.empty()) {
    tags.push_back({"tuner.sampler", origin});
  }
  return tags;
}

TrialUpdate plan_trial_update(const FrozenTrial& trial, const RunRecord& record,
                              const TrialContext& context) {
  TrialUpdate update;
  update.after = record;
  if (record.finished) return update;
  const std::vector<std::string> objectives = objective_names(trial, context);
  const bool finished = is_finished(trial.state);
  const int64_t fallback_ms =
      finished && trial.datetime_complete ? to_ms(*trial.datetime_complete) : context.now_ms;

  if (static_cast<int64_t>(trial.params.size()) > record.params_sent) {
    for (const auto& [name, value] : trial.params) {
      update.params.push_back({mlflow_key(name), param_text(value)});
    }
    update.after.params_sent = static_cast<int64_t>(trial.params.size());
  }

  const std::map<int64_t, RunStep> steps = merged_steps(trial, context, objectives.front());
  // A running trial's steps past its last intermediate value may still lack it.
  const std::optional<int64_t> ready =
      finished || trial.intermediate_values.empty()
          ? std::nullopt
          : std::optional<int64_t>(trial.intermediate_values.rbegin()->first);
  for (const auto& [step, s] : steps) {
    if (record.step_sent && step <= *record.step_sent) continue;
    if (ready && step > *ready) break;
    for (const auto& [key, value] : s.metrics) {
      update.metrics.push_back({.key = mlflow_key(key),
                                .value = value,
                                .timestamp_ms = s.time_ms.value_or(fallback_ms),
                                .step = step});
    }
    update.after.step_sent = step;
  }
  if (!finished) return update;

  // The end: final metrics at the last step, after its values (MLflow's latest value of a metric
  // is the one of the highest step, then the latest time), so that a run's metric is the trial's.
  const int64_t last_step = steps.empty() ? 0 : std::max<int64_t>(0, steps.rbegin()->first);
  int64_t end_ms = fallback_ms;
  if (auto it = steps.find(last_step); it != steps.end() && it->second.time_ms) {
    end_ms = std::max(end_ms, *it->second.time_ms + 1);
  }
  std::map<std::string, double> final_metrics;
  for (const auto& [key, json] : trial.user_attrs) {
    if (std::optional<double> v = attr_number(json)) {
      final_metrics[mlflow_key(key)] = *v;
    } else {
      update.tags.push_back({mlflow_key("tuner.attr." + key), attr_text(json)});
    }
  }
  if (trial.state == TrialState::kComplete) {
    for (size_t i = 0; i < trial.values.size() && i < objectives.size(); ++i) {
      final_metrics[mlflow_key(objectives[i])] = trial.values[i];
    }
  }
  try {
    const std::vector<ConstraintValue> constraints = constraints_of(trial);
    for (const ConstraintValue& c : constraints) {
      std::string name = c.name;
      const bool index = !name.empty() && name.find_first_not_of("0123456789") == std::string::npos;
      if (index && std::stoul(name) < context.constraint_names.size()) {
        name = context.constraint_names[std::stoul(name)];
      }
      final_metrics[mlflow_key("constraint/" + name)] = c.value;
    }
    if (!constraints.empty()) {
      update.tags.push_back({"tuner.feasible", is_feasible(trial) ? "true" : "false"});
    }
  } catch (const Error&) {
    update.tags.push_back({"tuner.feasible", "unknown (unreadable constraint values)"});
  }
  for (const auto& [key, value] : final_metrics) {
    update.metrics.push_back(
        {.key = key, .value = value, .timestamp_ms = end_ms, .step = last_step});
  }
  update.tags.push_back({"tuner.state", std::string(to_string(trial.state))});
  if (const std::string origin = sampler_of(trial); !origin.empty()) {
    update.tags.push_back({"tuner.sampler", origin});
  }
  if (auto it = trial.system_attrs.find(kFailReasonAttr); it != trial.system_attrs.end()) {
    update.tags.push_back({"tuner.fail_reason", attr_text(it->second)});
  }
  update.status = run_status(trial.state);
  update.end_time_ms = end_ms;
  update.after.finished = true;
  return update;
}

}  // namespace tuner::tracking
