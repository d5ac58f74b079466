#include "search/space/search_space_json.h"

#include <unordered_map>
#include <variant>

#include "search/space/search_space_json_value.h"
#include "trials/error.h"
#include "trials/json_reader.h"
#include "trials/overloaded.h"

namespace tuner {

namespace {

const std::vector<std::string> kTypes = {"float", "int", "categorical", "normal", "fixed"};

// The JSON path of a DistributionProblem field ("low", "choices[2]") below `path`.
std::string field_path(const std::string& path, const std::string& field, bool fixed) {
  if (fixed) return child_path(path, "value");
  auto bracket = field.find('[');
  if (bracket == std::string::npos) return child_path(path, field);
  return child_path(path, field.substr(0, bracket)) + field.substr(bracket);
}

std::optional<bool> optional_bool(const Json& object, const std::string& path, const char* key) {
  const Json* field = find_field(object, key);
  if (!field) return std::nullopt;
  return read_bool(*field, child_path(path, key));
}

double required_number(const Json& object, const std::string& path, const char* key) {
  return read_number(require_field(object, path, key), child_path(path, key));
}

int64_t required_integer(const Json& object, const std::string& path, const char* key) {
  return read_integer(require_field(object, path, key), child_path(path, key));
}

const Json& required_array(const Json& object, const std::string& path, const char* key) {
  return expect_array(require_field(object, path, key), child_path(path, key));
}

// Reads the distribution of the parameter at `path` (the object holds a valid "type").
ParamSpec read_spec(const std::string& name, const Json& definition, const std::string& path) {
  // "default" (ParamSpec::default_value) is read below, for every type but fixed; the fields of
  // each type are checked without it.
  Json object = definition;
  const bool has_default = object.erase("default") > 0;
  const Json& type_field =
      require_field(object, path, "type", " (one of " + choice_list(kTypes) + ")");
  const std::string& type = kTypes[read_choice(type_field, child_path(path, "type"), kTypes)];
  ParamSpec spec;
  spec.name = name;
  if (type == "float") {
    check_fields(object, path, {"type", "low", "high", "log", "step", "condition"},
                 "for type float");
    FloatDistribution d;
    d.low = required_number(object, path, "low");
    d.high = required_number(object, path, "high");
    d.log = optional_bool(object, path, "log").value_or(false);
    if (const Json* step = find_field(object, "step")) {
      d.step = read_number(*step, child_path(path, "step"));
    }
    spec.distribution = d;
  } else if (type == "int") {
    check_fields(object, path, {"type", "low", "high", "log", "step", "condition"}, "for type int");
    IntDistribution d;
    d.low = required_integer(object, path, "low");
    d.high = required_integer(object, path, "high");
    d.log = optional_bool(object, path, "log").value_or(false);
    if (const Json* step = find_field(object, "step")) {
      d.step = read_integer(*step, child_path(path, "step"));
    }
    spec.distribution = d;
  } else if (type == "categorical") {
    check_fields(object, path, {"type", "choices", "condition"}, "for type categorical");
    const Json& choices = required_array(object, path, "choices");
    const std::string choices_path = child_path(path, "choices");
    CategoricalDistribution d;
    for (size_t i = 0; i < choices.size(); ++i) {
      d.choices.push_back(read_scalar(choices[i], index_path(choices_path, i)));
    }
    spec.distribution = std::move(d);
  } else if (type == "normal") {
    check_fields(object, path, {"type", "mu", "sigma", "log", "q", "condition"}, "for type normal");
    NormalDistribution d;
    d.mu = required_number(object, path, "mu");
    d.sigma = required_number(object, path, "sigma");
    d.log = optional_bool(object, path, "log").value_or(false);
    if (const Json* q = find_field(object, "q")) d.q = read_number(*q, child_path(path, "q"));
    spec.distribution = d;
  } else {  // "fixed"
    check_fields(object, path, {"type", "value", "condition"}, "for type fixed");
    const Json& value = require_field(object, path, "value");
    spec.distribution = CategoricalDistribution{{read_scalar(value, child_path(path, "value"))}};
    spec.fixed = true;
  }
  if (auto problem = find_problem(spec.distribution)) {
    fail_at(field_path(path, problem->field, spec.fixed), problem->message);
  }
  if (has_default) {
    // The value the trials made before this parameter existed had (docs/search_space.md).
    const std::string default_path = child_path(path, "default");
    if (spec.fixed) fail_at(default_path, "a fixed parameter has no default (it has one value)");
    const Json* value = find_field(definition, "default");
    ParamValue v = read_scalar(*value, default_path);
    if (const auto* i = std::get_if<int64_t>(&v);
        i && std::holds_alternative<FloatDistribution>(spec.distribution)) {
      v = static_cast<double>(*i);
    }
    if (const auto* i = std::get_if<int64_t>(&v);
        i && std::holds_alternative<NormalDistribution>(spec.distribution)) {
      v = static_cast<double>(*i);
    }
    if (!contains(spec.distribution, v)) {
      fail_at(default_path,
              to_string(v) + " is not a value of the parameter " + to_string(spec.distribution));
    }
    spec.default_value = std::move(v);
  }
  return spec;
}

// One entry of "params" between reading and adding to the space.
struct Pending {
  ParamSpec spec;  // without its condition; moved into the space once read
  std::string name;
  std::string path;
  const Json* condition = nullptr;  // the "condition" object, when present
  std::string condition_path;
  std::optional<size_t> parent;  // index into the pending list
};

// A condition's values, read against the parent's distribution: an integer given for a float
// parent is the float of the same value.
Condition read_condition_values(const Pending& p, const ParamSpec& parent) {
  const Json& values = required_array(*p.condition, p.condition_path, "values");
  const std::string values_path = child_path(p.condition_path, "values");
  if (values.empty()) fail_at(values_path, "must not be empty");
  Condition condition{parent.name, {}};
  bool numeric_parent = std::holds_alternative<FloatDistribution>(parent.distribution) ||
                        std::holds_alternative<NormalDistribution>(parent.distribution);
  for (size_t i = 0; i < values.size(); ++i) {
    ParamValue v = read_scalar(values[i], index_path(values_path, i));
    if (numeric_parent && std::holds_alternative<int64_t>(v)) {
      v = static_cast<double>(std::get<int64_t>(v));
    }
    if (!contains(parent.distribution, v)) {
      fail_at(index_path(values_path, i), to_string(v) + " is not a value of " +
                                              Json(parent.name).dump() + " " +
                                              to_string(parent.distribution));
    }
    condition.values.push_back(std::move(v));
  }
  return condition;
}

// Resolves each condition's parent, refusing unknown parents and cycles.
void resolve_parents(std::vector<Pending>& pending) {
  std::unordered_map<std::string, size_t> index;
  std::vector<std::string> names;
  for (size_t i = 0; i < pending.size(); ++i) {
    index.emplace(pending[i].name, i);
    names.push_back(pending[i].name);
  }
  for (auto& p : pending) {
    if (!p.condition) continue;
    const std::string parent_path = child_path(p.condition_path, "parent");
    const std::string& parent =
        read_string(require_field(*p.condition, p.condition_path, "parent"), parent_path);
    auto it = index.find(parent);
    if (it == index.end()) {
      fail_at(parent_path,
              "no parameter is named " + Json(parent).dump() + did_you_mean(parent, names));
    }
    if (parent == p.name) fail_at(parent_path, "a parameter cannot be its own parent");
    p.parent = it->second;
  }
  for (size_t i = 0; i < pending.size(); ++i) {
    // Each parameter has at most one parent: walking up either ends or comes back.
    std::string chain = pending[i].name;
    std::optional<size_t> at = pending[i].parent;
    for (size_t steps = 0; at && steps <= pending.size(); ++steps) {
      chain += " -> " + pending[*at].name;
      if (*at == i) {
        fail_at(child_path(pending[i].condition_path, "parent"),
                "conditions form a cycle: " + chain);
      }
      at = pending[*at].parent;
    }
  }
}

// Declaration order, except that a parent declared after its child moves up to just before it.
std::vector<size_t> parents_first(const std::vector<Pending>& pending) {
  std::vector<size_t> order;
  std::vector<bool> placed(pending.size(), false);
  for (size_t i = 0; i < pending.size(); ++i) {
    std::vector<size_t> chain;  // i and its unplaced ancestors, child first
    for (std::optional<size_t> at = i; at && !placed[*at]; at = pending[*at].parent) {
      chain.push_back(*at);
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      placed[*it] = true;
      order.push_back(*it);
    }
  }
  return order;
}

Json distribution_to_json(const ParamSpec& spec) {
  Json out = Json::object();
  const auto* categorical = std::get_if<CategoricalDistribution>(&spec.distribution);
  if (spec.fixed && categorical && categorical->choices.size() == 1) {
    out["type"] = "fixed";
    out["value"] = scalar_to_json(categorical->choices[0]);
    return out;
  }
  std::visit(Overloaded{
                 [&](const FloatDistribution& d) {
                   out["type"] = "float";
                   out["low"] = d.low;
                   out["high"] = d.high;
                   if (d.log) out["log"] = true;
                   if (d.step) out["step"] = *d.step;
                 },
                 [&](const IntDistribution& d) {
                   out["type"] = "int";
                   out["low"] = d.low;
                   out["high"] = d.high;
                   if (d.log) out["log"] = true;
                   if (d.step != 1) out["step"] = d.step;
                 },
                 [&](const CategoricalDistribution& d) {
                   out["type"] = "categorical";
                   Json choices = Json::array();
                   for (const auto& c : d.choices) choices.push_back(scalar_to_json(c));
                   out["choices"] = std::move(choices);
                 },
                 [&](const NormalDistribution& d) {
                   out["type"] = "normal";
                   out["mu"] = d.mu;
                   out["sigma"] = d.sigma;
                   if (d.log) out["log"] = true;
                   if (d.q) out["q"] = *d.q;
                 },
             },
             spec.distribution);
  return out;
}

}  // namespace

SearchSpace search_space_from_json(const Json& value, const std::string& path) {
  expect_object(value, path, "a search space with a \"params\" object");
  check_fields(value, path, {"params"});
  const std::string params_path = child_path(path, "params");
  const Json& params = require_field(value, path, "params");
  expect_object(params, params_path, "parameter name -> definition");

  std::vector<Pending> pending;
  for (const auto& [name, definition] : params.items()) {
    Pending p;
    p.path = child_path(params_path, name);
    if (name.empty()) fail_at(p.path, "a parameter name must not be empty");
    expect_object(definition, p.path);
    p.name = name;
    p.spec = read_spec(name, definition, p.path);
    if (const Json* condition = find_field(definition, "condition")) {
      p.condition_path = child_path(p.path, "condition");
      expect_object(*condition, p.condition_path, "{\"parent\": NAME, \"values\": [...]}");
      check_fields(*condition, p.condition_path, {"parent", "values"});
      p.condition = condition;
    }
    pending.push_back(std::move(p));
  }
  resolve_parents(pending);

  SearchSpace space;
  for (size_t i : parents_first(pending)) {
    Pending& p = pending[i];
    if (p.parent) {  // parents come first: the parent is in the space
      if (p.spec.default_value) {
        fail_at(child_path(p.path, "default"),
                "only a parameter without a condition may have a default (a trial where a "
                "conditional parameter is inactive lacks it on purpose)");
      }
      p.spec.condition = read_condition_values(p, *space.find(pending[*p.parent].name));
    }
    try {
      space.add(std::move(p.spec));
    } catch (const Error& e) {  // every rule of add() is checked above; kept as a safety net
      fail_at(p.path, e.what());
    }
  }
  return space;
}

Json search_space_to_json_value(const SearchSpace& space) {
  Json params = Json::object();
  for (const auto& spec : space.params()) {
    Json p = distribution_to_json(spec);
    if (spec.default_value) p["default"] = scalar_to_json(*spec.default_value);
    if (spec.condition) {
      Json values = Json::array();
      for (const auto& v : spec.condition->values) values.push_back(scalar_to_json(v));
      p["condition"] = Json{{"parent", spec.condition->parent}, {"values", std::move(values)}};
    }
    params[spec.name] = std::move(p);
  }
  Json out = Json::object();
  out["params"] = std::move(params);
  return out;
}

SearchSpace parse_search_space(std::string_view json_text, std::string_view source) {
  Json value = parse_json_text(json_text, source);
  try {
    return search_space_from_json(value, "");
  } catch (const Error& e) {
    throw with_source(e, source);
  }
}

SearchSpace load_search_space(const std::filesystem::path& file) {
  return parse_search_space(read_text_file(file), file.string());
}

std::string to_json(const SearchSpace& space) {
  try {
    return search_space_to_json_value(space).dump(2) + "\n";
  } catch (const Json::exception& e) {  // a name or a string choice that is not UTF-8
    throw Error(ErrorCode::kInvalidArgument,
                std::string("cannot write the search space as JSON: ") + e.what());
  }
}

}  // namespace tuner
