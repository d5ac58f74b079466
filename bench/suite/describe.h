// The suite's problems as JSON (bench/suite/problems.h): what `sampler_suite --describe` prints
// and bench_suite_describe() returns to the Optuna side.
#ifndef TUNER_BENCH_SUITE_DESCRIBE_H_
#define TUNER_BENCH_SUITE_DESCRIBE_H_

#include <nlohmann/json.hpp>

namespace tuner::bench::suite {

// {"problems": [{"name", "group", "summary", "optimum", "noise_sd", "minimizer" (a point, or
// [] when none is listed; NaN, inactive, as null), "params": [{"name",
// "type": "float" | "int" | "categorical", "low", "high", "log", "choices", "parent",
// "parent_choices"}]}]}; parent is "" for a parameter that is always active.
nlohmann::json describe_json();

}  // namespace tuner::bench::suite

#endif  // TUNER_BENCH_SUITE_DESCRIBE_H_
