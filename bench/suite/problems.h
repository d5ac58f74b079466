// The problems of the function suite (bench/README.md, "Function suite"): each a search space, a
// noiseless objective with a known minimum, and optionally observation noise.
//
// Defined once, here: bench/suite/sampler_suite.cc runs tuner's samplers on them, and
// bench/optuna/sampler_suite.py runs Optuna's on the same objectives through the C functions of
// suite_c_api.cc (a shared library loaded with ctypes), so both sides evaluate identical
// functions and draw identical noise. Standard library only.
//
// A point is one double per parameter, in the order of Problem::params: floats and integers as
// their value, a categorical as the index of its choice, NaN for a parameter that is not active
// (its parent categorical took another choice).
//
// Thread-safe: problems() is built once and const after.
#ifndef TUNER_BENCH_SUITE_PROBLEMS_H_
#define TUNER_BENCH_SUITE_PROBLEMS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tuner::bench::suite {

enum class ParamType { kFloat, kInt, kCategorical };

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kFloat;
  double low = 0.0;  // floats and integers (integers: integral values)
  double high = 1.0;
  bool log = false;
  std::vector<std::string> choices;  // categoricals
  // Conditional: active only when the categorical `parent` (an earlier parameter) has one of
  // these choice indices. Empty parent: always active.
  std::string parent;
  std::vector<int> parent_choices;
};

struct Problem {
  std::string name;
  std::string group;    // "bbob", "classic", "mixed", "conditional" or "noisy"
  std::string summary;  // one line: the function, its space and its optimum
  std::vector<ParamSpec> params;
  double optimum = 0.0;  // the minimum of the noiseless objective
  // A point where the objective is (within 1e-5 of) the optimum; empty when none is listed.
  std::vector<double> minimizer;
  double noise_sd = 0.0;  // observed = noiseless + noise_sd * N(0, 1)
  std::function<double(const std::vector<double>&)> objective;  // noiseless, of a point
};

// The whole suite, in a fixed order.
const std::vector<Problem>& problems();
// Null when there is no problem of that name.
const Problem* find_problem(std::string_view name);

// The problems a comma-separated list names, in its order, each once: problem names, groups
// ("bbob", "classic", "mixed", "conditional", "noisy") and sets: "all"; "core", 28 problems
// that span every group (14 BBOB ones in 2 to 20 dimensions), in the order a time-limited run
// should take them; "quick", 4 problems for a smoke test. Throws std::invalid_argument naming
// an unknown item.
std::vector<const Problem*> select_problems(std::string_view spec);

// The noise of trial `trial_number` in a study of seed `seed`: noise_sd * N(0, 1), drawn from a
// hash of (problem name, seed, trial number), so both sides of the benchmark see the same noise
// for the same trial; 0 for a noiseless problem.
double noise(const Problem& problem, uint64_t seed, int trial_number);

// Whether parameter `index` is active given the values before it. REQUIRES: the values of
// earlier parameters are set (their parents' choice indices).
bool is_active(const Problem& problem, size_t index, const std::vector<double>& point);

// Throws std::invalid_argument naming the problem and parameter when `point` does not fit the
// space: the wrong size, a value out of bounds, a non-integral integer or choice index, an
// active parameter that is NaN or an inactive one that is not.
void check_point(const Problem& problem, const std::vector<double>& point);

}  // namespace tuner::bench::suite

#endif  // TUNER_BENCH_SUITE_PROBLEMS_H_
