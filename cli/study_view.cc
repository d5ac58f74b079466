#include "cli/study_view.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "search/pareto.h"
#include "search/schedulers/pbt.h"
#include "storage/optuna_schema.h"
#include "storage/sqlite_storage.h"
#include "sweep/trial_logs.h"
#include "trials/constraints.h"
#include "trials/error.h"
#include "trials/json.h"
#include "trials/json_depth.h"
#include "trials/param_value.h"
#include "trials/system_attrs.h"
#include "trials/trial_origin.h"
#include "util/strings.h"

namespace tuner::cli {
std::string number_text(double v, int digits) {
  std::ostringstream out;
  out.precision(digits);
  out << v;
  return out.str();
}

namespace {

// A fail reason's width in a table for people.
constexpr size_t kReasonWidth = 80;

std::string duration_seconds(const FrozenTrial& t) {
  if (!t.datetime_start || !t.datetime_complete) return "";
  const double s = std::chrono::duration<double>(*t.datetime_complete - *t.datetime_start).count();
  return number_text(s);
}

// A param value as JSON: numbers stay numbers, strings strings (ParamValue's text form).
nlohmann::json param_json(const ParamValue& value) {
  const std::string text = to_string(value);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return text;
  }
}

// A double as Python's json module writes it: NaN and the infinities as NaN, Infinity and
// -Infinity (which json.loads and Optuna read back), not as null.
std::string number_json(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return nlohmann::json(v).dump();
}

// The trial's kGpuMemoryPeakAttr, or nullopt when it has none (or an unreadable one).
std::optional<uint64_t> gpu_memory_peak(const FrozenTrial& t) {
  auto it = t.system_attrs.find(kGpuMemoryPeakAttr);
  if (it == t.system_attrs.end()) return std::nullopt;
  uint64_t bytes = 0;
  const std::string& text = it->second;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), bytes);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return bytes;
}

}  // namespace

void print_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i] + std::string(i + 1 < row.size() ? widths[i] - row[i].size() + 2 : 0, ' ');
    }
    std::cout << line << "\n";
  }
}

std::unique_ptr<Storage> open_read_only(const std::string& path) {
  if (!std::filesystem::exists(path)) {
    throw Error(ErrorCode::kNotFound, "no study database at '" + path + "'");
  }
  SqliteStorageOptions options;
  options.read_only = true;
  return std::make_unique<SqliteStorage>(path, options);
}

StudyRecord find_study(Storage& storage, const std::string& name, const std::string& path) {
  if (std::optional<StudyRecord> s = storage.find_study(name)) return *s;
  std::string names;
  for (const StudyRecord& s : storage.list_studies()) names += (names.empty() ? "" : ", ") + s.name;
  throw Error(ErrorCode::kNotFound, "no study '" + name + "' in " + path +
                                        " (its studies: " + (names.empty() ? "none" : names) + ")");
}

int count_infeasible(const std::vector<FrozenTrial>& trials) {
  return static_cast<int>(std::count_if(trials.begin(), trials.end(), [](const FrozenTrial& t) {
    return t.state == TrialState::kComplete && !is_feasible(t);
  }));
}

TrialColumns trial_columns(const std::vector<FrozenTrial>& trials) {
  TrialColumns columns;
  for (const FrozenTrial& t : trials) {
    columns.constraints |= has_constraints(t);
    columns.sampler |= !sampler_of(t).empty();
    columns.gpu_memory |= t.system_attrs.contains(kGpuMemoryPeakAttr);
    columns.pbt |= pbt_lineage(t).has_value();
    columns.fail_reason |= t.state == TrialState::kFail && !fail_reason(t).empty();
  }
  return columns;
}

std::set<int> front_numbers(Storage& storage, const StudyRecord& study) {
  std::set<int> numbers;
  const std::vector<FrozenTrial> complete =
      storage.get_trials(study.study_id, {.states = std::vector{TrialState::kComplete}});
  for (const FrozenTrial& t : pareto_front_trials(complete, study.directions)) {
    numbers.insert(t.number);
  }
  return numbers;
}

std::string trial_json(const FrozenTrial& t, const std::set<int>* front,
                       const std::vector<StepMetrics>* step_metrics) {
  std::string out;
  auto field = [&out](std::string_view key, const std::string& json) {
    out += (out.empty() ? "{" : ",") + Json(key).dump() + ":" + json;
  };
  field("number", std::to_string(t.number));
  field("state", Json(std::string(to_string(t.state))).dump());
  std::string values;
  for (double v : t.values) values += (values.empty() ? "" : ",") + number_json(v);
  field("values", "[" + values + "]");
  Json params = Json::object();
  for (const auto& [name, value] : t.params) params[name] = param_json(value);
  field("params", params.dump());
  std::string steps;
  for (const auto& [step, value] : t.intermediate_values) {
    steps +=
        (steps.empty() ? "" : ",") + Json(std::to_string(step)).dump() + ":" + number_json(value);
  }
  field("intermediate_values", "{" + steps + "}");
  if (step_metrics && !step_metrics->empty()) {
    std::string all;
    for (const StepMetrics& step : *step_metrics) {
      std::string metrics;
      for (const auto& [name, value] : step.metrics) {
        metrics += (metrics.empty() ? "" : ",") + Json(name).dump() + ":" + number_json(value);
      }
      all +=
          (all.empty() ? "" : ",") + Json(std::to_string(step.step)).dump() + ":{" + metrics + "}";
    }
    field("step_metrics", "{" + all + "}");
  }
  if (const std::string sampler = sampler_of(t); !sampler.empty()) {
    field("sampler", Json(sampler).dump());
  }
  if (const std::optional<uint64_t> peak = gpu_memory_peak(t)) {
    field("gpu_memory_peak_bytes", std::to_string(*peak));
  }
  if (has_constraints(t)) {
    const std::vector<ConstraintValue> constraints = constraints_of(t);
    std::string list;
    for (const ConstraintValue& c : constraints) {
      list += (list.empty() ? "" : ",") + number_json(c.value);
    }
    field("constraints", "[" + list + "]");
    field("feasible", constraint_violation(constraints) == 0 ? "true" : "false");
  }
  if (front) field("front", front->contains(t.number) ? "true" : "false");
  if (const std::optional<PbtLineage> lineage = pbt_lineage(t)) {
    field("pbt", Json{{"member", lineage->member},
                      {"segment", lineage->segment},
                      {"parent", lineage->parent ? Json(*lineage->parent) : Json(nullptr)}}
                     .dump());
  }
  if (t.state == TrialState::kFail) {
    if (const std::string reason = fail_reason(t); !reason.empty()) {
      field("fail_reason", Json(reason).dump());
    }
    if (const std::string tail = log_tail(t); !tail.empty()) field("log_tail", Json(tail).dump());
  }
  Json attrs = Json::object();
  for (const auto& [key, text] : t.user_attrs) {
    // Text that is not JSON, or nests too deep to copy safely, is shown as a string.
    attrs[key] = json_nests_deeper_than(text, kMaxJsonDepth)
                     ? Json(text)
                     : Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (attrs[key].is_discarded()) attrs[key] = text;
  }
  field("user_attrs", attrs.dump());
  auto datetime = [](const std::optional<TimePoint>& d) {
    return d ? Json(optuna_schema::format_datetime(*d)).dump() : std::string("null");
  };
  field("datetime_start", datetime(t.datetime_start));
  field("datetime_complete", datetime(t.datetime_complete));
  const std::string seconds = duration_seconds(t);
  field("duration_seconds", seconds.empty() ? "null" : seconds);
  return out + "}";
}

std::vector<std::string> trial_header(const std::vector<std::string>& names, TrialColumns columns) {
  std::vector<std::string> header = {"number", "state", "value"};
  if (columns.constraints) header.insert(header.end(), {"feasible", "constraints"});
  if (columns.front) header.push_back("front");
  header.push_back("seconds");
  if (columns.gpu_memory) header.push_back("GPU memory");
  if (columns.sampler) header.push_back("sampler");
  if (columns.pbt) header.insert(header.end(), {"member", "segment", "parent"});
  header.insert(header.end(), names.begin(), names.end());
  if (columns.fail_reason) header.push_back("fail reason");
  return header;
}

std::vector<std::string> trial_row(const FrozenTrial& t, const std::vector<std::string>& names,
                                   Cells cells, TrialColumns columns) {
  std::string values;
  for (double v : t.values) {
    values += (values.empty() ? "" : " ") +
              (cells == Cells::kExact ? to_string(ParamValue(v)) : number_text(v));
  }
  std::vector<std::string> row = {std::to_string(t.number), std::string(to_string(t.state)),
                                  values};
  if (columns.constraints) {
    const bool finished = t.state == TrialState::kComplete || t.state == TrialState::kPruned;
    std::string cell;
    std::vector<ConstraintValue> c;
    if (has_constraints(t)) c = constraints_of(t);
    for (const ConstraintValue& v : c) {
      cell += (cell.empty() ? "" : " ") +
              (cells == Cells::kExact ? to_string(ParamValue(v.value)) : number_text(v.value));
    }
    row.push_back(!finished ? "" : constraint_violation(c) == 0 ? "yes" : "no");
    row.push_back(cell);
  }
  if (columns.front) row.push_back(columns.front->contains(t.number) ? "yes" : "");
  row.push_back(duration_seconds(t));
  if (columns.gpu_memory) {
    const std::optional<uint64_t> peak = gpu_memory_peak(t);
    row.push_back(!peak                    ? std::string()
                  : cells == Cells::kExact ? std::to_string(*peak)
                                           : byte_size_text(*peak));
  }
  if (columns.sampler) row.push_back(sampler_of(t));
  if (columns.pbt) {
    const std::optional<PbtLineage> lineage = pbt_lineage(t);
    row.push_back(lineage ? std::to_string(lineage->member) : "");
    row.push_back(lineage ? std::to_string(lineage->segment) : "");
    row.push_back(lineage && lineage->parent ? std::to_string(*lineage->parent) : "");
  }
  for (const std::string& name : names) {
    auto it = t.params.find(name);
    // Strings as they are: a quoted "adam" would keep its quotes in a spreadsheet or pandas.
    const std::string* text =
        it == t.params.end() ? nullptr : std::get_if<std::string>(&it->second);
    row.push_back(it == t.params.end() ? "" : text ? *text : to_string(it->second));
  }
  if (columns.fail_reason) {
    const std::string reason = t.state == TrialState::kFail ? failure_summary(t) : std::string();
    row.push_back(cells == Cells::kExact ? reason : shorten(reason, kReasonWidth));
  }
  return row;
}

std::vector<std::string> param_names(const std::vector<FrozenTrial>& trials) {
  std::set<std::string> names;
  for (const FrozenTrial& t : trials) {
    for (const auto& [name, value] : t.params) names.insert(name);
  }
  return {names.begin(), names.end()};
}

std::vector<std::string> pbt_schedule(const std::vector<FrozenTrial>& trials, int number) {
  auto find = [&](int n) -> const FrozenTrial* {
    auto it = std::lower_bound(trials.begin(), trials.end(), n,
                               [](const FrozenTrial& t, int v) { return t.number < v; });
    return it != trials.end() && it->number == n ? &*it : nullptr;
  };
  std::vector<std::string> lines;
  const FrozenTrial* t = find(number);
  std::set<int> seen;  // a malformed parent chain ends instead of looping
  while (t && seen.insert(t->number).second) {
    const std::optional<PbtLineage> lineage = pbt_lineage(*t);
    if (!lineage) break;
    std::string line = "segment " + std::to_string(lineage->segment) + "  trial " +
                       std::to_string(t->number) + "  member " + std::to_string(lineage->member) +
                       " ";
    for (const auto& [name, value] : t->params) {
      const std::string* text = std::get_if<std::string>(&value);
      line += " " + name + "=" + (text ? *text : to_string(value));
    }
    lines.push_back(std::move(line));
    t = lineage->parent ? find(*lineage->parent) : nullptr;
  }
  std::reverse(lines.begin(), lines.end());
  return lines;
}

}  // namespace tuner::cli
