#include "tuner/warm_start.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "search/space/space_change.h"
#include "storage/sqlite_storage.h"
#include "trials/constraints.h"
#include "trials/error.h"
#include "trials/json_depth.h"

namespace tuner {

namespace {

// Optuna's study.set_metric_names() keeps the objectives' names here (a JSON list of strings).
constexpr char kMetricNamesAttr[] = "study:metric_names";

std::vector<std::string> metric_names_of(const StudyRecord& record) {
  auto it = record.system_attrs.find(kMetricNamesAttr);
  if (it == record.system_attrs.end() || json_nests_deeper_than(it->second, kMaxJsonDepth)) {
    return {};
  }
  const nlohmann::json names = nlohmann::json::parse(it->second, nullptr, false);
  std::vector<std::string> out;
  if (!names.is_array()) return {};
  for (const nlohmann::json& n : names) {
    if (!n.is_string()) return {};
    out.push_back(n.get<std::string>());
  }
  return out;
}

std::string list_text(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& s : items) text += (text.empty() ? "" : ", ") + s;
  return text;
}

std::string directions_text(const std::vector<StudyDirection>& directions) {
  std::vector<std::string> names;
  for (StudyDirection d : directions) names.emplace_back(to_string(d));
  return list_text(names);
}

// The earlier study's objectives against the new study's: the signs its values are multiplied
// by (-1 where a direction differs, allowed only with allow_other_objective).
std::vector<double> value_signs(const StudyRecord& source,
                                const std::vector<StudyDirection>& directions,
                                const WarmStartOptions& options, const std::string& where) {
  const std::string fix =
      ": warm-start from a study of the same objective, or allow another one "
      "(\"allow_other_objective\": true; docs/samplers.md, \"Warm start\")";
  if (source.directions.size() != directions.size()) {
    throw Error(ErrorCode::kFailedPrecondition,
                "warm start: " + where + " has " + std::to_string(source.directions.size()) +
                    " objective(s) and this study " + std::to_string(directions.size()) +
                    "; a warm start needs as many");
  }
  if (source.directions != directions && !options.allow_other_objective) {
    throw Error(ErrorCode::kFailedPrecondition,
                "warm start: " + where + " has direction " + directions_text(source.directions) +
                    " and this study " + directions_text(directions) + fix);
  }
  const std::vector<std::string> names = metric_names_of(source);
  if (!names.empty() && !options.metric_names.empty() && names != options.metric_names &&
      !options.allow_other_objective) {
    throw Error(ErrorCode::kFailedPrecondition, "warm start: " + where + " has the metric(s) " +
                                                    list_text(names) + " and this study " +
                                                    list_text(options.metric_names) + fix);
  }
  std::vector<double> signs;
  for (size_t k = 0; k < directions.size(); ++k) {
    signs.push_back(source.directions[k] == directions[k] ? 1.0 : -1.0);
  }
  return signs;
}

bool infeasible(const FrozenTrial& t) {
  if (!has_constraints(t)) return false;
  try {
    return constraint_violation(constraints_of(t)) > 0;
  } catch (const Error&) {
    return true;  // unreadable constraint values: not known to be feasible
  }
}

}  // namespace

Prior prior_observations(const StudyRecord& source, const std::vector<FrozenTrial>& trials,
                         const std::vector<StudyDirection>& directions, const SearchSpace* space,
                         const WarmStartOptions& options, const std::string& where) {
  const std::vector<double> signs = value_signs(source, directions, options, where);
  Prior prior;
  size_t outside = 0, broke_constraints = 0;
  std::map<std::string, std::string> ignored;  // parameter -> why
  for (const FrozenTrial& t : trials) {
    const bool complete =
        t.state == TrialState::kComplete && t.values.size() == directions.size() &&
        std::all_of(t.values.begin(), t.values.end(), [](double v) { return std::isfinite(v); });
    if (!complete && t.state != TrialState::kPruned) continue;
    if (infeasible(t)) {
      ++broke_constraints;
      continue;
    }
    FrozenTrial o;
    o.trial_id = t.trial_id;
    o.number = static_cast<int>(prior.trials.size());
    o.state = t.state;
    o.datetime_start = t.datetime_start;
    o.datetime_complete = t.datetime_complete;
    if (complete) {
      for (size_t k = 0; k < t.values.size(); ++k) o.values.push_back(signs[k] * t.values[k]);
    } else {
      for (const auto& [step, v] : t.intermediate_values)
        o.intermediate_values[step] = signs[0] * v;
      if (!o.intermediate_values.empty()) o.values = {o.intermediate_values.rbegin()->second};
    }
    bool keep = true;
    for (const auto& [name, value] : t.params) {
      auto dist = t.distributions.find(name);
      if (dist == t.distributions.end()) continue;
      if (space == nullptr) {
        o.params.emplace(name, value);
        o.distributions.emplace(name, dist->second);
        continue;
      }
      const ParamSpec* spec = space->find(name);
      if (spec == nullptr) {
        ignored.emplace(name, "not in this space");
        continue;
      }
      if (std::optional<std::string> why = incompatibility(dist->second, spec->distribution)) {
        ignored.emplace(name, *why);
        continue;
      }
      if (!contains(spec->distribution, value)) {
        keep = false;
        break;
      }
      o.params.emplace(name, value);
      o.distributions.emplace(name, spec->distribution);
    }
    if (!keep) {
      ++outside;
      continue;
    }
    if (space != nullptr) {
      for (const ParamSpec& spec : space->params()) {
        if (!spec.default_value || o.params.contains(spec.name)) continue;
        o.params.emplace(spec.name, *spec.default_value);
        o.distributions.emplace(spec.name, spec.distribution);
      }
    }
    if (o.params.empty()) continue;  // nothing this study can read
    prior.trials.push_back(std::move(o));
  }
  prior.summary = std::to_string(prior.trials.size()) + " observation" +
                  (prior.trials.size() == 1 ? "" : "s") + " from " + where;
  std::vector<std::string> left_out;
  if (outside > 0) {
    left_out.push_back(std::to_string(outside) + " with values outside this space");
  }
  if (broke_constraints > 0) {
    left_out.push_back(std::to_string(broke_constraints) + " infeasible");
  }
  if (!left_out.empty()) prior.summary += "; left out: " + list_text(left_out);
  if (!ignored.empty()) {
    std::vector<std::string> params;
    for (const auto& [name, why] : ignored) params.push_back(name + " (" + why + ")");
    prior.summary += "; ignored: " + list_text(params);
  }
  return prior;
}

Prior read_prior(const WarmStartOptions& options, Storage& own, const std::string& study,
                 const std::vector<StudyDirection>& directions, const SearchSpace* space) {
  if (options.study.empty()) {
    throw Error(
        ErrorCode::kInvalidArgument,
        "warm start of study '" + study + "': name the earlier study (WarmStartOptions::study)");
  }
  Storage* storage = &own;
  std::unique_ptr<SqliteStorage> other;
  std::string where = "study '" + options.study + "'";
  if (!options.storage_path.empty()) {
    if (!std::filesystem::is_regular_file(options.storage_path)) {
      throw Error(ErrorCode::kNotFound, "warm start of study '" + study +
                                            "': no study database at " + options.storage_path);
    }
    SqliteStorageOptions read_only;
    read_only.read_only = true;
    other = std::make_unique<SqliteStorage>(options.storage_path, read_only);
    storage = other.get();
    where += " in " + options.storage_path;
  } else if (options.study == study) {
    throw Error(ErrorCode::kInvalidArgument,
                "warm start of study '" + study + "': a study cannot warm-start from itself");
  }
  const std::optional<StudyRecord> source = storage->find_study(options.study);
  if (!source) {
    std::vector<std::string> names;
    for (const StudyRecord& s : storage->list_studies()) names.push_back(s.name);
    throw Error(ErrorCode::kNotFound,
                "warm start of study '" + study + "': no study named '" + options.study + "' in " +
                    (options.storage_path.empty() ? "its storage" : options.storage_path) +
                    " (it has: " + (names.empty() ? "no studies" : list_text(names)) + ")");
  }
  TrialFilter filter;
  filter.states = {TrialState::kComplete, TrialState::kPruned};
  return prior_observations(*source, storage->get_trials(source->study_id, filter), directions,
                            space, options, where);
}

std::string warm_start_to_json(const WarmStartOptions& options, size_t observations) {
  nlohmann::json j = {{"study", options.study},
                      {"storage", nullptr},
                      {"metric_names", options.metric_names},
                      {"allow_other_objective", options.allow_other_objective},
                      {"observations", observations}};
  if (!options.storage_path.empty()) {
    j["storage"] = std::filesystem::absolute(options.storage_path).lexically_normal().string();
  }
  return j.dump();
}

WarmStartOptions warm_start_from_json(const std::string& json, const std::string& study) {
  const auto bad = [&] {
    return Error(ErrorCode::kDataLoss, "study '" + study + "': system attribute " + kWarmStartAttr +
                                           " is not a warm start (" + json + ")");
  };
  if (json_nests_deeper_than(json, kMaxJsonDepth)) throw bad();
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object() || !j.contains("study") || !j["study"].is_string()) throw bad();
  WarmStartOptions options;
  options.study = j["study"].get<std::string>();
  if (auto it = j.find("storage"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) throw bad();
    options.storage_path = it->get<std::string>();
  }
  if (auto it = j.find("metric_names"); it != j.end()) {
    if (!it->is_array()) throw bad();
    for (const nlohmann::json& n : *it) {
      if (!n.is_string()) throw bad();
      options.metric_names.push_back(n.get<std::string>());
    }
  }
  if (auto it = j.find("allow_other_objective"); it != j.end()) {
    if (!it->is_boolean()) throw bad();
    options.allow_other_objective = it->get<bool>();
  }
  return options;
}

}  // namespace tuner
