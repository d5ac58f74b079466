#include "search/space/import_nni.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <variant>

#include "trials/error.h"
#include "trials/json_reader.h"
#include "util/strings.h"

namespace tuner {

namespace {

const std::vector<std::string> kNniTypes = {
    "choice",      "randint", "uniform", "quniform",  "loguniform",
    "qloguniform", "normal",  "qnormal", "lognormal", "qlognormal",
};

// Same tolerance as the distributions' own grid check (trials/distribution.cc).
constexpr double kGridTolerance = 1e-8;

bool is_multiple(double x, double q) {
  double k = x / q;
  return std::abs(k - std::round(k)) <= kGridTolerance * std::max(1.0, std::abs(k));
}

bool is_whole(double x) { return std::isfinite(x) && std::floor(x) == x && std::abs(x) < 9.2e18; }

// The text a choice value contributes to the names of its nested parameters.
std::string label(const ParamValue& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  return to_string(value);
}

class NniImporter {
 public:
  SearchSpace take() { return std::move(space_); }

  // Imports the parameter `name` defined by `definition` ({"_type": ..., "_value": ...}).
  void import_param(const std::string& name, const Json& definition, const std::string& path,
                    const std::optional<Condition>& condition) {
    expect_object(definition, path, "{\"_type\": TYPE, \"_value\": [...]}");
    check_fields(definition, path, {"_type", "_value"});
    const std::string type_path = child_path(path, "_type");
    const std::string& type = read_string(
        require_field(definition, path, "_type", " (one of " + join(kNniTypes) + ")"), type_path);
    if (std::find(kNniTypes.begin(), kNniTypes.end(), type) == kNniTypes.end()) {
      fail_at(type_path, "unknown type " + Json(type).dump() + ", expected one of " +
                             join(kNniTypes) + did_you_mean(type, kNniTypes));
    }
    const std::string value_path = child_path(path, "_value");
    const Json& value = expect_array(require_field(definition, path, "_value"), value_path);
    if (type == "choice") {
      import_choice(name, value, path, value_path, condition);
    } else {
      add(ParamSpec{name, numeric_distribution(type, value, value_path), condition, false}, path,
          value_path, value.size());
    }
  }

 private:
  // Checks the number of elements of `_value` and reads them as numbers.
  static std::vector<double> numbers(const Json& value, const std::string& value_path,
                                     const std::string& type, size_t count, const char* shape) {
    if (value.size() != count) {
      fail_at(value_path, type + " needs " + std::to_string(count) + " numbers " + shape +
                              ", not " + std::to_string(value.size()));
    }
    std::vector<double> out;
    for (size_t i = 0; i < count; ++i) {
      out.push_back(read_number(value[i], index_path(value_path, i)));
    }
    return out;
  }

  static void check(const Distribution& d, const std::string& value_path, size_t size) {
    if (auto problem = find_problem(d))
      fail_at(field_path(value_path, problem->field, size), problem->message);
  }

  // `_value[i]` for a distribution field.
  static std::string field_path(const std::string& value_path, const std::string& field,
                                size_t size) {
    size_t index = 0;
    if (field == "high" || field == "sigma") index = 1;
    if (field == "step" || field == "q") index = 2;
    return index_path(value_path, std::min(index, size == 0 ? 0 : size - 1));
  }

  static Distribution numeric_distribution(const std::string& type, const Json& value,
                                           const std::string& value_path) {
    if (type == "randint") {
      if (value.size() != 1 && value.size() != 2) {
        fail_at(value_path, "randint needs [lower, upper] (or the older [upper]), not " +
                                std::to_string(value.size()) + " numbers");
      }
      int64_t lower = 0;
      if (value.size() == 2) lower = read_integer(value[0], index_path(value_path, 0));
      size_t upper_index = value.size() - 1;
      int64_t upper = read_integer(value[upper_index], index_path(value_path, upper_index));
      if (upper <= lower) {
        fail_at(index_path(value_path, upper_index),
                "upper (" + std::to_string(upper) + ") must be greater than lower (" +
                    std::to_string(lower) + "): randint draws from [lower, upper), upper excluded");
      }
      return IntDistribution{lower, upper - 1, false, 1};
    }
    if (type == "uniform" || type == "loguniform") {
      auto v = numbers(value, value_path, type, 2, "[low, high]");
      return FloatDistribution{v[0], v[1], type == "loguniform", std::nullopt};
    }
    if (type == "quniform") {
      auto v = numbers(value, value_path, type, 3, "[low, high, q]");
      check_q_and_bounds(v, value_path);
      if (!is_multiple(v[0], v[2]) || !is_multiple(v[1], v[2])) {
        fail_at(value_path,
                "quniform " + value.dump() +
                    " takes the values clip(round(x / q) * q, low, high), which are an evenly "
                    "spaced grid only when low and high are multiples of q; make them multiples "
                    "of q, or use uniform");
      }
      return FloatDistribution{v[0], v[1], false, v[2]};
    }
    if (type == "qloguniform") {
      auto v = numbers(value, value_path, type, 3, "[low, high, q]");
      check_q_and_bounds(v, value_path);
      if (v[2] != 1.0 || !is_whole(v[0]) || !is_whole(v[1])) {
        fail_at(value_path,
                "qloguniform " + value.dump() +
                    " (a grid of step q on a log scale) is representable only with q = 1 and "
                    "whole-number low and high, as an int with a log scale; use loguniform, or "
                    "quniform for a linear grid");
      }
      return IntDistribution{static_cast<int64_t>(v[0]), static_cast<int64_t>(v[1]), true, 1};
    }
    bool log = type == "lognormal" || type == "qlognormal";
    if (type == "normal" || type == "lognormal") {
      auto v = numbers(value, value_path, type, 2, "[mu, sigma]");
      return NormalDistribution{v[0], v[1], log, std::nullopt};
    }
    auto v = numbers(value, value_path, type, 3, "[mu, sigma, q]");  // qnormal, qlognormal
    return NormalDistribution{v[0], v[1], log, v[2]};
  }

  // q > 0 and low <= high, before the grid checks (which divide by q).
  static void check_q_and_bounds(const std::vector<double>& v, const std::string& value_path) {
    if (!std::isfinite(v[2]) || v[2] <= 0) fail_at(index_path(value_path, 2), "q must be > 0");
    check(FloatDistribution{v[0], v[1], false, std::nullopt}, value_path, 3);
  }

  void import_choice(const std::string& name, const Json& options, const std::string& path,
                     const std::string& value_path, const std::optional<Condition>& condition) {
    if (options.empty()) fail_at(value_path, "a choice must have at least one option");
    CategoricalDistribution d;
    std::vector<size_t> nested;  // options that are nested search spaces
    for (size_t i = 0; i < options.size(); ++i) {
      const std::string option_path = index_path(value_path, i);
      const Json& option = options[i];
      if (option.is_object()) {
        const Json& option_name = require_field(
            option, option_path, "_name",
            " (an option that is an object is a nested search space and is named by \"_name\")");
        d.choices.push_back(read_scalar(option_name, child_path(option_path, "_name")));
        nested.push_back(i);
      } else if (option.is_array()) {
        fail_at(option_path,
                "an option must be a string, number, boolean or a nested search "
                "space {\"_name\": ..., ...}, not an array");
      } else {
        d.choices.push_back(read_scalar(option, option_path));
      }
    }
    if (auto problem = find_problem(d)) {  // "choices[i]": a repeated option
      size_t open = problem->field.find('[');
      size_t i = open == std::string::npos ? 0 : std::stoul(problem->field.substr(open + 1));
      std::string where = index_path(value_path, i);
      if (options[i].is_object()) where = child_path(where, "_name");
      fail_at(where, problem->message);
    }
    add(ParamSpec{name, d, condition, false}, path, value_path, options.size());
    for (size_t i : nested) {
      const ParamValue& chosen = d.choices[i];
      Condition child_condition{name, {chosen}};
      const std::string option_path = index_path(value_path, i);
      const std::string prefix = name + "/" + label(chosen) + "/";
      for (const auto& [key, child] : options[i].items()) {
        if (key == "_name") continue;
        const std::string child_at = child_path(option_path, key);
        if (key.empty()) fail_at(child_at, "a parameter name must not be empty");
        if (child.is_object()) {
          import_param(prefix + key, child, child_at, child_condition);
        } else if (child.is_array() || child.is_null()) {
          fail_at(child_at,
                  "must be a parameter {\"_type\": ..., \"_value\": [...]} or a "
                  "constant, not " +
                      json_type_name(child));
        } else {  // a constant inside an option: a fixed parameter
          CategoricalDistribution single{{read_scalar(child, child_at)}};
          add(ParamSpec{prefix + key, std::move(single), child_condition, true}, child_at, child_at,
              1);
        }
      }
    }
  }

  void add(ParamSpec spec, const std::string& path, const std::string& value_path, size_t size) {
    check(spec.distribution, value_path, size);
    if (space_.find(spec.name)) {
      fail_at(path, "the parameter name " + Json(spec.name).dump() +
                        " is already used by another parameter");
    }
    try {
      space_.add(std::move(spec));
    } catch (const Error& e) {  // every rule of add() is checked above; kept as a safety net
      fail_at(path, e.what());
    }
  }

  SearchSpace space_;
};

}  // namespace

SearchSpace import_nni_search_space(std::string_view json_text, std::string_view source) {
  Json root = parse_json_text(json_text, source);
  try {
    expect_object(root, "", "an NNI search space: name -> {\"_type\": ..., \"_value\": [...]}");
    NniImporter importer;
    for (const auto& [name, definition] : root.items()) {
      std::string path = child_path("", name);
      if (name.empty()) fail_at(path, "a parameter name must not be empty");
      importer.import_param(name, definition, path, std::nullopt);
    }
    return importer.take();
  } catch (const Error& e) {
    throw with_source(e, source);
  }
}

SearchSpace load_nni_search_space(const std::filesystem::path& file) {
  return import_nni_search_space(read_text_file(file), file.string());
}

}  // namespace tuner
