#include "search/space/import_wandb.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <variant>

#include "trials/error.h"
#include "trials/json_reader.h"

namespace tuner {

namespace {

const std::vector<std::string> kDistributions = {
    "constant",
    "categorical",
    "categorical_w_probabilities",
    "int_uniform",
    "uniform",
    "q_uniform",
    "log_uniform",
    "log_uniform_values",
    "inv_log_uniform",
    "inv_log_uniform_values",
    "q_log_uniform",
    "q_log_uniform_values",
    "normal",
    "q_normal",
    "log_normal",
    "q_log_normal",
    "beta",
    "q_beta",
};

// Keys of a whole sweep configuration that mark it as one (next to "parameters").
const std::vector<std::string> kSweepKeys = {"method",          "program", "metric",  "command",
                                             "early_terminate", "run_cap", "project", "entity"};

// Keys of a parameter definition.
const std::vector<std::string> kParamKeys = {
    "distribution", "values", "value", "min", "max", "q", "mu", "sigma", "probabilities"};

// Same tolerance as the distributions' own grid check (trials/distribution.cc).
constexpr double kGridTolerance = 1e-8;

bool is_multiple(double x, double q) {
  double k = x / q;
  return std::abs(k - std::round(k)) <= kGridTolerance * std::max(1.0, std::abs(k));
}

bool is_whole(double x) { return std::isfinite(x) && std::floor(x) == x && std::abs(x) < 9.2e18; }

bool has(const Json& object, const std::string& key) { return object.contains(key); }

std::string num(double x) { return to_string(ParamValue(x)); }

// Reads one parameter definition of W&B's schema (one distribution).
class ParamReader {
 public:
  ParamReader(const Json& object, std::string path) : object_(object), path_(std::move(path)) {}

  std::string at(const char* key) const { return child_path(path_, key); }

  const std::string& path() const { return path_; }

  // The field `key`; an error naming it when it is absent.
  const Json& field(const char* key) const { return require_field(object_, path_, key); }

  double number(const char* key, std::optional<double> fallback = std::nullopt) const {
    const Json* field = find_field(object_, key);
    if (!field && fallback) return *fallback;
    return read_number(field ? *field : require_field(object_, path_, key), at(key));
  }

  // True when q is given as a JSON integer (W&B then returns integers); false for a float q or
  // for the default q, 1.0.
  bool has_q() const { return object_.contains("q"); }

  bool integer_q() const {
    const Json* q = find_field(object_, "q");
    return q && is_json_integer(*q);
  }

  double q() const {
    double q = number("q", 1.0);
    if (!std::isfinite(q) || q <= 0) fail_at(at("q"), "must be > 0");
    return q;
  }

  // min and max, with W&B's rule that min < max.
  std::pair<double, double> min_max() const {
    double min = number("min");
    double max = number("max");
    if (!(min < max)) fail_at(at("max"), "must be greater than min (" + num(min) + ")");
    return {min, max};
  }

 private:
  const Json& object_;
  std::string path_;
};

class WandbImporter {
 public:
  SearchSpace take() { return std::move(space_); }

  void import_block(const Json& block, const std::string& path, const std::string& prefix) {
    expect_object(block, path, "parameter name -> definition");
    if (block.empty()) fail_at(path, "must hold at least one parameter");
    for (const auto& [key, definition] : block.items()) {
      const std::string param_path = child_path(path, key);
      if (key.empty()) fail_at(param_path, "a parameter name must not be empty");
      import_param(prefix + key, definition, param_path);
    }
  }

 private:
  void import_param(const std::string& name, const Json& object, const std::string& path) {
    expect_object(object, path,
                  "a parameter: {\"values\": [...]}, {\"value\": ...}, {\"min\": ..., \"max\": "
                  "...}, {\"distribution\": ...} or {\"parameters\": {...}}");
    if (has(object, "parameters")) {  // a nested dict of parameters: dotted names
      check_fields(object, path, {"parameters"},
                   "in a nested parameter dict (it holds only \"parameters\")");
      import_block(object["parameters"], child_path(path, "parameters"), name + ".");
      return;
    }
    const std::string distribution = distribution_of(object, path);
    check_fields_for(object, path, distribution);
    ParamReader r(object, path);
    if (has(object, "probabilities")) {
      fail_at(r.at("probabilities"),
              "weighted choices are not representable: a categorical parameter here draws every "
              "choice with the same probability");
    }
    ParamSpec spec{name, FloatDistribution{}, std::nullopt, false};
    spec.distribution = to_distribution(distribution, r, spec.fixed);
    if (auto problem = find_problem(spec.distribution)) {
      fail_at(field_path(path, problem->field, spec.fixed, distribution), problem->message);
    }
    if (space_.find(name)) {
      fail_at(path, "the parameter name " + Json(name).dump() +
                        " (nested names are joined with '.') is already used");
    }
    try {
      space_.add(std::move(spec));
    } catch (const Error& e) {  // every rule of add() is checked above; kept as a safety net
      fail_at(path, e.what());
    }
  }

  // The explicit distribution, or the one W&B infers from the fields.
  static std::string distribution_of(const Json& object, const std::string& path) {
    if (const Json* field = find_field(object, "distribution")) {
      const std::string at = child_path(path, "distribution");
      const std::string& d = read_string(*field, at);
      if (std::find(kDistributions.begin(), kDistributions.end(), d) == kDistributions.end()) {
        fail_at(at, "unknown distribution " + field->dump() + did_you_mean(d, kDistributions));
      }
      return d;
    }
    if (has(object, "values")) {
      return has(object, "probabilities") ? "categorical_w_probabilities" : "categorical";
    }
    if (has(object, "value")) return "constant";
    if (has(object, "min") && has(object, "max")) {
      return is_json_integer(object["min"]) && is_json_integer(object["max"]) ? "int_uniform"
                                                                              : "uniform";
    }
    check_fields(object, path,
                 {"distribution", "values", "value", "min", "max", "q", "mu", "sigma",
                  "probabilities", "parameters"});
    fail_at(path,
            "cannot tell the distribution: give \"values\", \"value\", \"min\" and \"max\", or "
            "\"distribution\"");
  }

  static void check_fields_for(const Json& object, const std::string& path, const std::string& d) {
    const std::string context = "for distribution " + d;
    if (d == "constant") {
      check_fields(object, path, {"distribution", "value"}, context);
    } else if (d == "categorical" || d == "categorical_w_probabilities") {
      check_fields(object, path, {"distribution", "values", "probabilities"}, context);
    } else if (d == "q_uniform" || d == "q_log_uniform" || d == "q_log_uniform_values") {
      check_fields(object, path, {"distribution", "min", "max", "q"}, context);
    } else if (d.find("uniform") != std::string::npos) {
      check_fields(object, path, {"distribution", "min", "max"}, context);
    } else if (d == "normal" || d == "log_normal") {
      check_fields(object, path, {"distribution", "mu", "sigma"}, context);
    } else if (d == "q_normal" || d == "q_log_normal") {
      check_fields(object, path, {"distribution", "mu", "sigma", "q"}, context);
    } else if (d == "beta") {
      check_fields(object, path, {"distribution", "a", "b"}, context);
    } else {
      check_fields(object, path, {"distribution", "a", "b", "q"}, context);
    }
  }

  static Distribution to_distribution(const std::string& d, const ParamReader& r, bool& fixed) {
    if (d == "constant") {
      fixed = true;
      const Json& value = r.field("value");
      if (value.is_null() || value.is_array() || value.is_object()) {
        fail_at(r.at("value"), "a constant " + json_type_name(value) +
                                   " is not representable: a parameter value is a string, "
                                   "number or boolean");
      }
      return CategoricalDistribution{{read_scalar(value, r.at("value"))}};
    }
    if (d == "categorical" || d == "categorical_w_probabilities") {
      const Json& values = expect_array(r.field("values"), r.at("values"));
      CategoricalDistribution c;
      for (size_t i = 0; i < values.size(); ++i) {
        const std::string at = index_path(r.at("values"), i);
        if (values[i].is_null() || values[i].is_array() || values[i].is_object()) {
          fail_at(at, "a value that is " + json_type_name(values[i]) +
                          " is not representable: a choice is a string, number or boolean");
        }
        c.choices.push_back(read_scalar(values[i], at));
      }
      return c;
    }
    if (d == "int_uniform") {
      int64_t min = read_integer(r.field("min"), r.at("min"));
      int64_t max = read_integer(r.field("max"), r.at("max"));
      if (!(min < max))
        fail_at(r.at("max"), "must be greater than min (" + std::to_string(min) + ")");
      return IntDistribution{min, max, false, 1};
    }
    if (d == "uniform") {
      auto [min, max] = r.min_max();
      return FloatDistribution{min, max, false, std::nullopt};
    }
    if (d == "q_uniform") return q_uniform(r);
    if (d == "log_uniform" || d == "inv_log_uniform") {
      // log_uniform: exp(uniform(min, max)). inv_log_uniform: exp(-uniform(min, max)), whose
      // logarithm is uniform on [-max, -min]: the same log-uniform law on [exp(-max), exp(-min)].
      auto [min, max] = r.min_max();
      bool inverse = d == "inv_log_uniform";
      return FloatDistribution{exp_bound(inverse ? -max : min, r, inverse ? "max" : "min"),
                               exp_bound(inverse ? -min : max, r, inverse ? "min" : "max"), true,
                               std::nullopt};
    }
    if (d == "log_uniform_values" || d == "inv_log_uniform_values") {
      // inv_log_uniform_values draws exp(-uniform(-log(max), -log(min))): log-uniform on
      // [min, max], exactly as log_uniform_values does.
      auto [min, max] = r.min_max();
      return FloatDistribution{min, max, true, std::nullopt};
    }
    if (d == "q_log_uniform" || d == "q_log_uniform_values") return q_log_uniform(d, r);
    if (d == "normal" || d == "log_normal") {
      return NormalDistribution{r.number("mu", 0.0), r.number("sigma", 1.0), d == "log_normal",
                                std::nullopt};
    }
    if (d == "q_normal" || d == "q_log_normal") {
      if (r.integer_q()) {
        fail_at(r.at("q"), d + " with an integer q gives integers, which a normal distribution "
                               "here (floats) cannot represent; write q as a float (e.g. 1.0) "
                               "to get float values");
      }
      return NormalDistribution{r.number("mu", 0.0), r.number("sigma", 1.0), d == "q_log_normal",
                                r.q()};
    }
    if (d == "categorical_w_probabilities") {  // unreachable: refused for its probabilities
      fail_at(r.at("probabilities"), "weighted choices are not representable");
    }
    fail_at(r.at("distribution"), "the " + d +
                                      " distribution is not representable: the "
                                      "distributions here are uniform, log-uniform, "
                                      "normal and categorical");
  }

  static double exp_bound(double exponent, const ParamReader& r, const char* key) {
    double x = std::exp(exponent);
    if (!std::isfinite(x) || x <= 0) {
      fail_at(r.at(key), "exp(" + num(exponent) +
                             ") is out of the range of a double "
                             "(log_uniform's min and max are exponents of e; for the values "
                             "themselves use log_uniform_values)");
    }
    return x;
  }

  // round(uniform(min, max) / q) * q, integers when q is an integer. A grid from min to max only
  // when min and max are multiples of q.
  static Distribution q_uniform(const ParamReader& r) {
    auto [min, max] = r.min_max();
    double q = r.q();
    if (!is_multiple(min, q) || !is_multiple(max, q)) {
      fail_at(r.at("q"),
              "q_uniform rounds uniform(min, max) to multiples of q, which is the "
              "grid min, min + q, ..., max only when min and max are multiples of q "
              "(here min = " +
                  num(min) + ", max = " + num(max) + ", q = " + num(q) +
                  "); make them multiples of q");
    }
    if (r.integer_q()) {
      if (!is_whole(min) || !is_whole(max)) {
        fail_at(r.at("min"),
                "with an integer q the values are integers: min and max must be "
                "whole numbers");
      }
      return IntDistribution{static_cast<int64_t>(min), static_cast<int64_t>(max), false,
                             static_cast<int64_t>(q)};
    }
    return FloatDistribution{min, max, false, q};
  }

  // round(exp(uniform(...)) / q) * q: representable only for integers (q the integer 1) between
  // whole-number bounds, as an int with a log scale.
  static Distribution q_log_uniform(const std::string& d, const ParamReader& r) {
    auto [min, max] = r.min_max();
    bool exponents = d == "q_log_uniform";
    double low = exponents ? exp_bound(min, r, "min") : min;
    double high = exponents ? exp_bound(max, r, "max") : max;
    if (exponents) {  // exp(log(100)) is 100.00000000000004
      auto snap = [](double x) {
        double k = std::round(x);
        return std::abs(x - k) <= 1e-9 * std::max(1.0, std::abs(x)) ? k : x;
      };
      low = snap(low);
      high = snap(high);
    }
    if (!r.integer_q() || r.q() != 1.0 || !is_whole(low) || !is_whole(high)) {
      fail_at(r.has_q() ? r.at("q") : r.path(),
              d +
                  " (a grid of step q on a log scale) is representable only as integers: q "
                  "written as the integer 1, with whole-number bounds (here " +
                  num(low) + " to " + num(high) + (r.integer_q() ? "" : ", with a float q") +
                  "); use log_uniform_values for floats");
    }
    return IntDistribution{static_cast<int64_t>(low), static_cast<int64_t>(high), true, 1};
  }

  // The JSON path of a DistributionProblem field of the distribution made from `d`.
  static std::string field_path(const std::string& path, const std::string& field, bool fixed,
                                const std::string& d) {
    if (fixed) return child_path(path, "value");
    if (field.rfind("choices", 0) == 0) return child_path(path, "values") + field.substr(7);
    if (field == "low") return child_path(path, d == "inv_log_uniform" ? "max" : "min");
    if (field == "high") return child_path(path, d == "inv_log_uniform" ? "min" : "max");
    if (field == "step") return child_path(path, "q");
    return child_path(path, field);  // mu, sigma, q
  }

  SearchSpace space_;
};

// The parameters block of `root`: root["parameters"] for a whole sweep configuration, else root.
const Json& parameters_block(const Json& root, std::string& path) {
  expect_object(root, "", "a W&B sweep configuration or its parameters block");
  const Json* parameters = find_field(root, "parameters");
  if (!parameters || !parameters->is_object()) return root;
  bool sweep = std::any_of(kSweepKeys.begin(), kSweepKeys.end(),
                           [&](const std::string& k) { return root.contains(k); });
  if (!sweep && root.size() == 1) {  // {"parameters": {...}}: a sweep, unless it is a definition
    sweep = std::none_of(kParamKeys.begin(), kParamKeys.end(),
                         [&](const std::string& k) { return parameters->contains(k); });
  }
  if (!sweep) return root;
  path = "parameters";
  return *parameters;
}

}  // namespace

SearchSpace import_wandb_parameters(std::string_view json_text, std::string_view source) {
  Json root = parse_json_text(json_text, source);
  try {
    std::string path;
    const Json& block = parameters_block(root, path);
    WandbImporter importer;
    importer.import_block(block, path, "");
    return importer.take();
  } catch (const Error& e) {
    throw with_source(e, source);
  }
}

SearchSpace load_wandb_parameters(const std::filesystem::path& file) {
  return import_wandb_parameters(read_text_file(file), file.string());
}

}  // namespace tuner
