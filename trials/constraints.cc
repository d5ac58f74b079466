#include "trials/constraints.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "trials/error.h"

namespace tuner {

namespace {

std::string_view trimmed(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// A number as JSON or Python's json module writes it (Infinity, -Infinity, NaN included);
// nullopt for anything else.
std::optional<double> number_of(std::string_view text) {
  text = trimmed(text);
  if (text.empty()) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

[[noreturn]] void corrupt(const FrozenTrial& t, std::string_view key, std::string_view text,
                          std::string_view want) {
  std::string shown(text.substr(0, 80));
  if (text.size() > 80) shown += "...";
  throw Error(ErrorCode::kDataLoss, "trial " + std::to_string(t.number) + ": system attribute \"" +
                                        std::string(key) + "\" is " + shown + ", not " +
                                        std::string(want) +
                                        " (Optuna's constraint values; fix or remove it)");
}

}  // namespace

std::string constraints_to_json(std::span<const double> values) {
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      throw Error(ErrorCode::kInvalidArgument, "constraint " + std::to_string(i) + " is " +
                                                   (std::isnan(values[i]) ? "NaN"
                                                    : values[i] > 0       ? "inf"
                                                                          : "-inf") +
                                                   "; a constraint value must be a finite number");
    }
    list.push_back(values[i]);
  }
  return list.dump();
}

bool has_constraints(const FrozenTrial& trial) {
  for (auto it = trial.system_attrs.lower_bound(kConstraintsAttr);
       it != trial.system_attrs.end() && it->first.starts_with(kConstraintsAttr); ++it) {
    if (it->first == kConstraintsAttr) {
      if (trimmed(it->second) != "null" && trimmed(it->second) != "[]") return true;
    } else if (it->first.starts_with(kConstraintPrefix)) {
      return true;
    }
  }
  return false;
}

std::vector<ConstraintValue> constraints_of(const FrozenTrial& trial) {
  std::vector<ConstraintValue> out;
  if (auto it = trial.system_attrs.find(kConstraintsAttr); it != trial.system_attrs.end()) {
    std::string_view text = trimmed(it->second);
    constexpr std::string_view kWant = "a list of numbers";
    if (text != "null") {
      if (text.size() < 2 || text.front() != '[' || text.back() != ']') {
        corrupt(trial, kConstraintsAttr, it->second, kWant);
      }
      std::string_view items = trimmed(text.substr(1, text.size() - 2));
      while (!items.empty()) {
        const size_t comma = items.find(',');
        std::optional<double> v = number_of(items.substr(0, comma));
        if (!v) corrupt(trial, kConstraintsAttr, it->second, kWant);
        out.push_back({std::to_string(out.size()), *v});
        if (comma == std::string_view::npos) break;
        items.remove_prefix(comma + 1);
        if (trimmed(items).empty()) corrupt(trial, kConstraintsAttr, it->second, kWant);
      }
    }
  }
  const size_t from_list = out.size();
  for (auto it = trial.system_attrs.lower_bound(kConstraintPrefix);
       it != trial.system_attrs.end() && it->first.starts_with(kConstraintPrefix); ++it) {
    std::optional<double> v = number_of(it->second);
    if (!v) corrupt(trial, it->first, it->second, "a number");
    std::string name = it->first.substr(std::string_view(kConstraintPrefix).size());
    bool replaced = false;
    for (size_t i = 0; i < from_list; ++i) {
      if (out[i].name == name) {
        out[i].value = *v;
        replaced = true;
      }
    }
    if (!replaced) out.push_back({std::move(name), *v});
  }
  return out;
}

double constraint_violation(std::span<const ConstraintValue> values) {
  double sum = 0;
  for (const ConstraintValue& c : values) {
    if (std::isnan(c.value)) return std::numeric_limits<double>::infinity();
    if (c.value > 0) sum += c.value;
  }
  return sum;
}

bool is_feasible(const FrozenTrial& trial) {
  if (!has_constraints(trial)) return true;
  return constraint_violation(constraints_of(trial)) == 0;
}

const FrozenTrial* best_feasible(std::span<const FrozenTrial> trials, StudyDirection direction) {
  const FrozenTrial* best = nullptr;
  for (const FrozenTrial& t : trials) {
    if (t.state != TrialState::kComplete || t.values.size() != 1 || !is_feasible(t)) continue;
    if (best == nullptr || is_better(direction, t.values[0], best->values[0])) best = &t;
  }
  return best;
}

}  // namespace tuner
