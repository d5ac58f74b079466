// The suite's problems as C functions, for bench/optuna/sampler_suite.py (ctypes): the Optuna
// side evaluates the very objectives, and draws the very noise, that the C++ side does.
//
// Strings returned stay valid until the next call of the same function on the same thread.
// Thread-safe.
#include <cmath>
#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/suite/bbob.h"
#include "bench/suite/describe.h"
#include "bench/suite/problems.h"

namespace {

thread_local std::string last_error;

}  // namespace

extern "C" {

// The last error of this thread ("" when none).
const char* bench_suite_error() { return last_error.c_str(); }

// Every problem: {"problems": [{"name", "group", "summary", "optimum", "noise_sd",
// "params": [{"name", "type", "low", "high", "log", "choices", "parent", "parent_choices"}]}]}.
const char* bench_suite_describe() {
  static const std::string text = tuner::bench::suite::describe_json().dump();
  return text.c_str();
}

// A JSON list of the names that select_problems(spec) gives, or null (bench_suite_error()).
const char* bench_suite_select(const char* spec) {
  thread_local std::string text;
  try {
    nlohmann::json names = nlohmann::json::array();
    for (const auto* p : tuner::bench::suite::select_problems(spec)) names.push_back(p->name);
    text = names.dump();
    return text.c_str();
  } catch (const std::exception& e) {
    last_error = e.what();
    return nullptr;
  }
}

// Evaluates problem `name` at `point` (n values, problems.h's encoding) for trial
// `trial_number` of a study of seed `seed`: *noiseless gets the objective, *observed the
// objective plus that trial's noise. Returns 0, or -1 with bench_suite_error() set (an unknown
// problem, a point that does not fit the space).
int bench_suite_evaluate(const char* name, const double* point, int n, uint64_t seed,
                         int trial_number, double* noiseless, double* observed) {
  try {
    const auto* problem = tuner::bench::suite::find_problem(name);
    if (problem == nullptr) {
      last_error = std::string("unknown problem '") + name + "'";
      return -1;
    }
    std::vector<double> x(point, point + n);
    tuner::bench::suite::check_point(*problem, x);
    *noiseless = problem->objective(x);
    *observed = *noiseless + tuner::bench::suite::noise(*problem, seed, trial_number);
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
    return -1;
  }
}

// BBOB function `id` (bench/suite/bbob.h: 1, 2, 3, 5, 8 or 20) in `dim` dimensions with its
// optimum at `x_opt` (dim values), at `x`: *value gets f(x) - f_opt. Returns 0, or -1 with
// bench_suite_error() set (an id that needs more than its optimum, dim < 2).
int bench_suite_bbob_at(int id, int dim, const double* x_opt, const double* x, double* value) {
  try {
    const tuner::bench::suite::BbobFunction f(id, std::vector<double>(x_opt, x_opt + dim));
    *value = f(std::vector<double>(x, x + dim));
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
    return -1;
  }
}

}  // extern "C"
