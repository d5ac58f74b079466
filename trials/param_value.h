// ParamValue: the value a trial holds for one hyperparameter.
//
// Floats and integers of numeric distributions, and the choices of categorical ones (strings,
// integers, floats, booleans). An integer choice 1 and a float choice 1.0 are different values,
// as they are in JSON and in Optuna.
#ifndef TUNER_TRIALS_PARAM_VALUE_H_
#define TUNER_TRIALS_PARAM_VALUE_H_

#include <cstdint>
#include <map>
#include <string>
#include <variant>

namespace tuner {

using ParamValue = std::variant<bool, int64_t, double, std::string>;

// Parameters of one trial by name.
using Params = std::map<std::string, ParamValue, std::less<>>;

// A readable form: strings quoted, booleans true/false, floats as Python prints them (round-trip
// precision, always with a point or an exponent: 3.0, 0.25, 1e-05).
std::string to_string(const ParamValue& value);

// The value as a double: floats as they are, integers and booleans converted.
// Throws Error(kInvalidArgument) for a string.
double as_double(const ParamValue& value);

}  // namespace tuner

#endif  // TUNER_TRIALS_PARAM_VALUE_H_
