// Test helpers for samplers of several objectives: ZDT1, a sampler's run over it, and the
// hypervolume of the trials it gave (shared by the TPE and NSGA-II tests).
#ifndef TUNER_SEARCH_MULTI_OBJECTIVE_TEST_UTIL_H_
#define TUNER_SEARCH_MULTI_OBJECTIVE_TEST_UTIL_H_

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "search/history.h"
#include "search/pareto.h"
#include "search/rng.h"
#include "search/samplers/sampler.h"
#include "search/space/search_space.h"
#include "trials/constraints.h"
#include "trials/frozen_trial.h"

namespace tuner::multi_objective_test {

inline const std::vector<StudyDirection> kMinimizeTwo{StudyDirection::kMinimize,
                                                      StudyDirection::kMinimize};

// ZDT1 on [0, 1]^d: f1 = x0, f2 = g (1 - sqrt(x0 / g)), g = 1 + 9 mean(x1..).
inline SearchSpace zdt_space(int d) {
  SearchSpace space;
  for (int i = 0; i < d; ++i) space.add_float("x" + std::to_string(i), 0, 1);
  return space;
}

inline std::vector<double> zdt1(const Params& p) {
  const size_t d = p.size();
  double sum = 0.0;
  for (size_t i = 1; i < d; ++i) sum += std::get<double>(p.at("x" + std::to_string(i)));
  const double f1 = std::get<double>(p.at("x0"));
  const double g = 1.0 + 9.0 * sum / static_cast<double>(d - 1);
  return {f1, g * (1.0 - std::sqrt(f1 / g))};
}

// A constraint on ZDT: mean(x1, x2, x3) >= 0.5 (<= 0 when it holds), which its front (x1 = x2 =
// x3 = 0) breaks.
inline double zdt_mean_constraint(const Params& p) {
  double sum = 0.0;
  for (int i = 1; i < 4; ++i) sum += std::get<double>(p.at("x" + std::to_string(i)));
  return 0.5 - sum / 3.0;
}

// A COMPLETE trial with these params (over `space`) and values.
inline FrozenTrial complete_trial(int number, const SearchSpace& space, const Params& params,
                                  std::vector<double> values) {
  FrozenTrial t;
  t.trial_id = 1000 + number;
  t.number = number;
  t.state = TrialState::kComplete;
  t.params = params;
  for (const auto& [name, value] : params) t.distributions[name] = space.find(name)->distribution;
  t.values = std::move(values);
  return t;
}

// Runs `n` trials of `objective` with `sampler` (each COMPLETE at once; with `constraint`, its
// one constraint value stored); returns the trials.
inline std::vector<FrozenTrial> optimize_multi(
    Sampler& sampler, const SearchSpace& space, uint64_t seed, int n,
    const std::function<std::vector<double>(const Params&)>& objective,
    const std::vector<StudyDirection>& directions = kMinimizeTwo,
    const std::function<double(const Params&)>& constraint = nullptr) {
  std::vector<FrozenTrial> trials;
  for (int i = 0; i < n; ++i) {
    History history{trials, directions};
    Rng rng = Rng::for_trial(seed, i);
    Params params = sampler.sample(space, history, TrialContext{i}, rng);
    space.check_assignment(params);
    FrozenTrial t = complete_trial(i, space, params, objective(params));
    if (constraint) {
      t.system_attrs[kConstraintsAttr] =
          constraints_to_json(std::vector<double>{constraint(params)});
    }
    trials.push_back(std::move(t));
  }
  return trials;
}

// The hypervolume of the trials' (minimized) values against `reference`.
inline double trials_hypervolume(const std::vector<FrozenTrial>& trials,
                                 const std::vector<double>& reference, bool feasible_only = false) {
  std::vector<double> losses;
  for (const FrozenTrial& t : trials) {
    if (feasible_only && !is_feasible(t)) continue;
    losses.insert(losses.end(), t.values.begin(), t.values.end());
  }
  return hypervolume(losses, reference.size(), reference);
}

}  // namespace tuner::multi_objective_test

#endif  // TUNER_SEARCH_MULTI_OBJECTIVE_TEST_UTIL_H_
