// Distributions: the domain of one hyperparameter.
//
// The three Optuna distributions (float, int, categorical) with Optuna's meaning of every field,
// plus a normal prior (Hyperopt's normal/lognormal, W&B's normal/log_normal), which has no
// bounds. A value has an *internal representation* as a double, the one Optuna stores in
// trial_params.param_value: the number itself for float, int and normal, the index of the choice
// for categorical. Samplers work on internal representations.
#ifndef TUNER_TRIALS_DISTRIBUTION_H_
#define TUNER_TRIALS_DISTRIBUTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "trials/param_value.h"

namespace tuner {

// Uniform on [low, high], or log-uniform when `log` (REQUIRES low > 0), or on the grid
// low, low + step, ..., high when `step` is set (REQUIRES step divides high - low; not with log).
struct FloatDistribution {
  double low = 0.0;
  double high = 0.0;
  bool log = false;
  std::optional<double> step;
  bool operator==(const FloatDistribution&) const = default;
};

// Integers in [low, high] on the grid low, low + step, ... (REQUIRES step divides high - low);
// log-uniform when `log` (REQUIRES low >= 1 and step == 1).
struct IntDistribution {
  int64_t low = 0;
  int64_t high = 0;
  bool log = false;
  int64_t step = 1;
  bool operator==(const IntDistribution&) const = default;
};

// One of `choices` (REQUIRES at least one, no two equal).
struct CategoricalDistribution {
  std::vector<ParamValue> choices;
  bool operator==(const CategoricalDistribution&) const = default;
};

// Normal(mu, sigma), or exp(Normal(mu, sigma)) when `log`; rounded to a multiple of `q` when set.
// Unbounded. REQUIRES sigma > 0, q > 0.
struct NormalDistribution {
  double mu = 0.0;
  double sigma = 1.0;
  bool log = false;
  std::optional<double> q;
  bool operator==(const NormalDistribution&) const = default;
};

using Distribution =
    std::variant<FloatDistribution, IntDistribution, CategoricalDistribution, NormalDistribution>;

// What is wrong with a distribution: the field ("low", "step", "choices[2]") and the reason.
struct DistributionProblem {
  std::string field;
  std::string message;
};

// The first problem with `distribution`, or nothing when it is valid.
std::optional<DistributionProblem> find_problem(const Distribution& distribution);

// Throws Error(kInvalidArgument) naming `where` (a parameter name) when invalid.
void validate(const Distribution& distribution, const std::string& where);

// True when `value` is of the right type and inside the distribution (on its step grid).
bool contains(const Distribution& distribution, const ParamValue& value);

// The internal representation (see above). Throws Error(kInvalidArgument) when not contained.
double to_internal(const Distribution& distribution, const ParamValue& value);

// The value of an internal representation; integers and steps are rounded to the nearest
// member. Throws Error(kInvalidArgument) for a categorical index out of range.
ParamValue from_internal(const Distribution& distribution, double internal);

// True when the distribution has exactly one possible value.
bool is_single(const Distribution& distribution);

// A readable form, for messages: float[1e-05, 0.1, log], int[1, 8, step 1], categorical[...].
std::string to_string(const Distribution& distribution);

}  // namespace tuner

#endif  // TUNER_TRIALS_DISTRIBUTION_H_
