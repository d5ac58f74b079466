#include "search/space/search_space.h"

#include "trials/error.h"

namespace tuner {

namespace {
Error invalid(const std::string& message) { return Error(ErrorCode::kInvalidArgument, message); }
}  // namespace

void SearchSpace::add(ParamSpec spec) {
  if (spec.name.empty()) throw invalid("a parameter name must not be empty");
  if (find(spec.name)) throw invalid("parameter '" + spec.name + "' is declared twice");
  validate(spec.distribution, spec.name);
  if (spec.fixed && !(std::holds_alternative<CategoricalDistribution>(spec.distribution) &&
                      is_single(spec.distribution))) {
    throw invalid(spec.name + ": a fixed parameter is a categorical with exactly one choice");
  }
  if (spec.default_value) {
    if (spec.condition) {
      throw invalid(spec.name + ".default: only a parameter without a condition may have one");
    }
    if (!contains(spec.distribution, *spec.default_value)) {
      throw invalid(spec.name + ".default: " + to_string(*spec.default_value) +
                    " is not a value of " + to_string(spec.distribution));
    }
  }
  if (spec.condition) {
    const ParamSpec* parent = find(spec.condition->parent);
    if (!parent) {
      throw invalid(spec.name + ".condition.parent: '" + spec.condition->parent +
                    "' is not a parameter declared before '" + spec.name + "'");
    }
    if (spec.condition->values.empty()) {
      throw invalid(spec.name + ".condition.values: must not be empty");
    }
    for (size_t i = 0; i < spec.condition->values.size(); ++i) {
      if (!contains(parent->distribution, spec.condition->values[i])) {
        throw invalid(spec.name + ".condition.values[" + std::to_string(i) +
                      "]: " + to_string(spec.condition->values[i]) + " is not a value of '" +
                      parent->name + "' " + to_string(parent->distribution));
      }
    }
  }
  params_.push_back(std::move(spec));
}

void SearchSpace::add_float(std::string name, double low, double high, bool log,
                            std::optional<double> step) {
  add({std::move(name), FloatDistribution{low, high, log, step}, std::nullopt, false});
}

void SearchSpace::add_int(std::string name, int64_t low, int64_t high, bool log, int64_t step) {
  add({std::move(name), IntDistribution{low, high, log, step}, std::nullopt, false});
}

void SearchSpace::add_categorical(std::string name, std::vector<ParamValue> choices) {
  add({std::move(name), CategoricalDistribution{std::move(choices)}, std::nullopt, false});
}

const ParamSpec* SearchSpace::find(std::string_view name) const {
  for (const auto& p : params_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

bool SearchSpace::has_conditions() const {
  for (const auto& p : params_) {
    if (p.condition) return true;
  }
  return false;
}

bool SearchSpace::is_active(const ParamSpec& spec, const Params& chosen) const {
  if (!spec.condition) return true;
  auto it = chosen.find(spec.condition->parent);
  if (it == chosen.end()) return false;  // the parent is inactive, so is the child
  for (const auto& v : spec.condition->values) {
    if (v == it->second) return true;
  }
  return false;
}

void SearchSpace::check_assignment(const Params& params) const {
  Params seen;
  for (const auto& spec : params_) {
    auto it = params.find(spec.name);
    bool active = is_active(spec, seen);
    if (active && it == params.end()) throw invalid("parameter '" + spec.name + "' is missing");
    if (!active && it != params.end()) {
      throw invalid("parameter '" + spec.name + "' is set but inactive (its condition on '" +
                    spec.condition->parent + "' does not hold)");
    }
    if (it == params.end()) continue;
    if (!contains(spec.distribution, it->second)) {
      throw invalid("parameter '" + spec.name + "' = " + to_string(it->second) + " is not in " +
                    to_string(spec.distribution));
    }
    seen.insert(*it);
  }
  for (const auto& [name, value] : params) {
    if (!find(name)) throw invalid("parameter '" + name + "' is not in the search space");
  }
}

}  // namespace tuner
