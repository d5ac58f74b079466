// Shared pieces of the sampler benchmarks: samplers by name, the 10-dimensional mixed space of
// sampler_overhead, the test functions of sampler_quality, statistics and a small flag parser.
//
// The workloads must stay identical to their Optuna peers in bench/optuna/common.py: same
// parameter names, bounds and order, same objective, same functions and optima.
#ifndef TUNER_BENCH_BENCH_COMMON_H_
#define TUNER_BENCH_BENCH_COMMON_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numbers>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bench/test_functions.h"
#include "search/registry.h"
#include "tuner/tuner.h"

namespace tuner::bench {

// --- Samplers ------------------------------------------------------------------------------

// The samplers of search/registry.h by their names (random, tpe, gp, auto, nsga2), with these
// variants:
// tpe      TpeSampler, univariate (independent) Parzen estimators
// tpe-mv   TpeSampler{.multivariate = true}
// default  no sampler given: what Study::create picks (the auto sampler)
inline const std::vector<std::string>& sampler_names() {
  static const std::vector<std::string> names = {"random", "tpe", "tpe-mv", "default"};
  return names;
}

// Null for "default". Throws std::invalid_argument for an unknown name.
inline std::shared_ptr<Sampler> make_sampler(const std::string& name) {
  if (name == "default") return nullptr;
  SamplerSpec spec;
  if (name == "tpe" || name == "tpe-mv") {
    spec.type = SamplerType::kTpe;
    spec.tpe.multivariate = name == "tpe-mv";  // "tpe": the classic univariate TPE
    return tuner::make_sampler(spec);
  }
  const std::optional<SamplerType> type = sampler_type_named(name);
  if (!type || *type == SamplerType::kGrid) {
    throw std::invalid_argument("unknown sampler '" + name +
                                "': expected random, tpe, tpe-mv, gp, auto, nsga2 or default");
  }
  spec.type = *type;
  return tuner::make_sampler(spec);
}

// --- The 10-dimensional mixed space of sampler_overhead -------------------------------------

inline const std::vector<std::string>& optimizers() {
  static const std::vector<std::string> v = {"sgd", "adam", "rmsprop", "adagrad"};
  return v;
}
inline const std::vector<std::string>& activations() {
  static const std::vector<std::string> v = {"relu", "tanh", "gelu"};
  return v;
}

// 3 floats, 2 log floats, 2 ints, 1 log int, 2 categoricals; in suggestion order.
inline SearchSpace mixed_space() {
  SearchSpace space;
  space.add_float("x0", -5.0, 5.0);
  space.add_float("x1", -5.0, 5.0);
  space.add_float("x2", -5.0, 5.0);
  space.add_float("lr", 1e-5, 1e-1, /*log=*/true);
  space.add_float("weight_decay", 1e-6, 1e-2, /*log=*/true);
  space.add_int("layers", 1, 8);
  space.add_int("units", 16, 1024, /*log=*/true);
  space.add_int("batch", 1, 100);
  std::vector<ParamValue> opts(optimizers().begin(), optimizers().end());
  space.add_categorical("optimizer", opts);
  std::vector<ParamValue> acts(activations().begin(), activations().end());
  space.add_categorical("activation", acts);
  return space;
}

inline size_t index_of(const std::vector<std::string>& choices, const std::string& value) {
  return static_cast<size_t>(std::find(choices.begin(), choices.end(), value) - choices.begin());
}

// A cheap deterministic function of the mixed space (minimum 0).
inline double mixed_objective(const Params& p) {
  auto num = [&](const char* name) { return as_double(p.find(name)->second); };
  auto str = [&](const char* name) { return std::get<std::string>(p.find(name)->second); };
  double v =
      std::pow(num("x0") - 1.0, 2) + std::pow(num("x1") + 2.0, 2) + 0.5 * std::pow(num("x2"), 2);
  v += std::pow(std::log10(num("lr")) + 3.0, 2) +
       0.1 * std::pow(std::log10(num("weight_decay")) + 4.0, 2);
  v += 0.2 * std::pow(num("layers") - 4.0, 2) + std::pow(std::log2(num("units")) - 8.0, 2) / 4.0;
  v += std::pow((num("batch") - 32.0) / 32.0, 2);
  v += 0.5 * static_cast<double>(index_of(optimizers(), str("optimizer"))) +
       0.25 * static_cast<double>(index_of(activations(), str("activation")));
  return v;
}

// Define-by-run: suggests every parameter of mixed_space() in order through the Trial API.
inline Params suggest_mixed(Trial& trial) {
  Params p;
  p["x0"] = trial.suggest_float("x0", -5.0, 5.0);
  p["x1"] = trial.suggest_float("x1", -5.0, 5.0);
  p["x2"] = trial.suggest_float("x2", -5.0, 5.0);
  p["lr"] = trial.suggest_float("lr", 1e-5, 1e-1, {.log = true});
  p["weight_decay"] = trial.suggest_float("weight_decay", 1e-6, 1e-2, {.log = true});
  p["layers"] = trial.suggest_int("layers", 1, 8);
  p["units"] = trial.suggest_int("units", 16, 1024, {.log = true});
  p["batch"] = trial.suggest_int("batch", 1, 100);
  p["optimizer"] = ParamValue(trial.suggest_categorical<std::string>("optimizer", optimizers()));
  p["activation"] = ParamValue(trial.suggest_categorical<std::string>("activation", activations()));
  return p;
}

// --- The test functions of sampler_quality --------------------------------------------------

struct Bounds {
  double low;
  double high;
};

struct TestFunction {
  std::string name;
  double (*f)(const std::vector<double>& x);
  std::vector<Bounds> bounds;  // one per dimension
  double optimum;              // the known global minimum
};

inline const std::vector<TestFunction>& test_functions() {
  static const std::vector<TestFunction> functions = {
      {"branin", branin, {{-5.0, 10.0}, {0.0, 15.0}}, 0.397887357729738},
      {"rosenbrock10", rosenbrock, std::vector<Bounds>(10, {-5.0, 10.0}), 0.0},
      {"ackley10", ackley, std::vector<Bounds>(10, {-32.768, 32.768}), 0.0},
      {"hartmann6", hartmann6, std::vector<Bounds>(6, {0.0, 1.0}), -3.32237},
  };
  return functions;
}

// --- Statistics -----------------------------------------------------------------------------

// The q-quantile with linear interpolation between order statistics (numpy's default), so the
// C++ tables and the driver's agree. REQUIRES: values not empty, 0 <= q <= 1.
inline double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

inline double mean(const std::vector<double>& values) {
  double s = 0.0;
  for (double v : values) s += v;
  return s / static_cast<double>(values.size());
}

// A double as JSON (round-trip precision; JSON has no NaN or infinity).
inline std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// --- Flags ----------------------------------------------------------------------------------

// --name value and --name=value flags; bare --name is a boolean. Unknown flags are errors.
class Flags {
 public:
  Flags(int argc, char** argv, std::vector<std::string> known) : known_(std::move(known)) {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg.rfind("--", 0) != 0) fail("unexpected argument '" + arg + "'");
      std::string name = arg.substr(2), value;
      bool has_value = false;
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      if (std::find(known_.begin(), known_.end(), name) == known_.end()) {
        fail("unknown flag --" + name);
      }
      if (!has_value && i + 1 < argc && std::string_view(argv[i + 1]).rfind("--", 0) != 0) {
        value = argv[++i];
        has_value = true;
      }
      values_.emplace_back(name, has_value ? value : "true");
    }
  }

  bool has(const std::string& name) const { return find(name) != nullptr; }
  std::string get(const std::string& name, const std::string& fallback) const {
    const std::string* v = find(name);
    return v ? *v : fallback;
  }
  int get_int(const std::string& name, int fallback) const {
    const std::string* v = find(name);
    return v ? std::stoi(*v) : fallback;
  }
  double get_double(const std::string& name, double fallback) const {
    const std::string* v = find(name);
    return v ? std::stod(*v) : fallback;
  }

  [[noreturn]] static void fail(const std::string& message) {
    std::fprintf(stderr, "error: %s (see --help)\n", message.c_str());
    std::exit(2);
  }

 private:
  const std::string* find(const std::string& name) const {
    const std::string* found = nullptr;
    for (const auto& [n, v] : values_) {
      if (n == name) found = &v;  // the last one wins
    }
    return found;
  }

  std::vector<std::string> known_;
  std::vector<std::pair<std::string, std::string>> values_;
};

inline std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

inline std::vector<int> split_ints(const std::string& text) {
  std::vector<int> out;
  for (const auto& item : split(text)) out.push_back(std::stoi(item));
  return out;
}

}  // namespace tuner::bench

#endif  // TUNER_BENCH_BENCH_COMMON_H_
