#include "search/samplers/tpe/tpe_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "search/multi_objective_test_util.h"
#include "search/pareto.h"
#include "search/samplers/random_sampler.h"
#include "trials/constraints.h"
#include "trials/error.h"

namespace tuner {
namespace {

const std::vector<StudyDirection> kMinimize{StudyDirection::kMinimize};

FrozenTrial make_trial(int number, const SearchSpace& space, const Params& params, TrialState state,
                       std::vector<double> values = {}) {
  FrozenTrial t;
  t.trial_id = 1000 + number;
  t.number = number;
  t.state = state;
  t.params = params;
  for (const auto& [name, value] : params) t.distributions[name] = space.find(name)->distribution;
  t.values = std::move(values);
  return t;
}

// Runs `n` trials of `objective` with `sampler`; returns the trials.
std::vector<FrozenTrial> optimize(Sampler& sampler, const SearchSpace& space, uint64_t seed, int n,
                                  const std::function<double(const Params&)>& objective,
                                  const std::vector<StudyDirection>& directions = kMinimize) {
  std::vector<FrozenTrial> trials;
  for (int i = 0; i < n; ++i) {
    History history{trials, directions};
    Rng rng = Rng::for_trial(seed, i);
    Params params = sampler.sample(space, history, TrialContext{i}, rng);
    space.check_assignment(params);
    trials.push_back(make_trial(i, space, params, TrialState::kComplete, {objective(params)}));
  }
  return trials;
}

double best_value(const std::vector<FrozenTrial>& trials) {
  double best = INFINITY;
  for (const auto& t : trials) best = std::min(best, t.values[0]);
  return best;
}

SearchSpace quadratic_space() {
  SearchSpace space;
  space.add_float("x", -10, 10);
  space.add_float("y", -10, 10);
  return space;
}

double quadratic(const Params& p) {
  double x = std::get<double>(p.at("x")) - 1.5;
  double y = std::get<double>(p.at("y")) + 2.0;
  return x * x + y * y;
}

SearchSpace every_kind_space() {
  SearchSpace space;
  space.add_float("f", -1, 1);
  space.add_float("flog", 1e-5, 1e-1, true);
  space.add_float("fstep", 0, 1, false, 0.125);
  space.add_int("i", -3, 7);
  space.add_int("ilog", 1, 1024, true);
  space.add_int("istep", 0, 100, false, 5);
  space.add_categorical("c", {std::string("a"), int64_t{2}, 3.5, true});
  space.add(ParamSpec{"n", NormalDistribution{0.0, 2.0, false, std::nullopt}, std::nullopt, false});
  space.add(ParamSpec{"nlogq", NormalDistribution{0.0, 1.0, true, 0.25}, std::nullopt, false});
  return space;
}

double every_kind_objective(const Params& p) {
  double v = 0.0;
  for (const auto& [name, value] : p) {
    if (const auto* s = std::get_if<std::string>(&value)) {
      v += static_cast<double>(s->size());
    } else {
      v += std::abs(as_double(value));
    }
  }
  return v;
}

// A deterministic objective over two integers (16 points): no point is proposed twice before
// every point has been; a noisy one may repeat its best points.
TEST(TpeSampler, ProposesNoPointTwiceUnlessTheObjectiveIsNoisy) {
  SearchSpace space;
  space.add_int("a", 0, 3);
  space.add_int("b", -6, 6, /*log=*/false, /*step=*/4);
  auto f = [](const Params& p) {
    const double a = static_cast<double>(std::get<int64_t>(p.at("a")));
    const double b = static_cast<double>(std::get<int64_t>(p.at("b")));
    return (a - 1) * (a - 1) + (b - 2) * (b - 2);
  };
  for (uint64_t seed : {1, 2, 3}) {
    TpeSampler sampler({.n_startup_trials = 4});
    std::set<Params> seen;
    for (const FrozenTrial& t : optimize(sampler, space, seed, 16, f)) {
      EXPECT_TRUE(seen.insert(t.params).second) << "seed " << seed << " trial " << t.number;
    }
  }
  TpeSampler sampler({.n_startup_trials = 4});
  std::vector<FrozenTrial> trials;
  std::set<Params> seen;
  for (int i = 0; i < 16; ++i) {
    Rng rng = Rng::for_trial(1, i);
    const Params params =
        sampler.sample(space, History{trials, kMinimize, /*noisy=*/true}, TrialContext{i}, rng);
    seen.insert(params);
    trials.push_back(make_trial(i, space, params, TrialState::kComplete, {f(params)}));
  }
  EXPECT_LT(seen.size(), 16u);  // TPE draws near its best points, and may draw them again
}

TEST(TpeSampler, SameRngSameValues) {
  for (bool multivariate : {false, true}) {
    TpeOptions options;
    options.multivariate = multivariate;
    TpeSampler a(options), b(options);
    auto ta = optimize(a, every_kind_space(), 42, 40, every_kind_objective);
    auto tb = optimize(b, every_kind_space(), 42, 40, every_kind_objective);
    for (size_t i = 0; i < ta.size(); ++i) EXPECT_EQ(ta[i].params, tb[i].params) << i;
  }
}

TEST(TpeSampler, ValuesStayInsideEveryKindOfDistribution) {
  for (bool multivariate : {false, true}) {
    TpeOptions options;
    options.multivariate = multivariate;
    options.n_startup_trials = 5;
    TpeSampler sampler(options);
    SearchSpace space = every_kind_space();
    auto trials = optimize(sampler, space, 7, 60, every_kind_objective);
    for (const auto& t : trials) {
      for (const auto& [name, value] : t.params) {
        EXPECT_TRUE(contains(space.find(name)->distribution, value))
            << name << " = " << to_string(value) << " in trial " << t.number;
      }
    }
  }
}

TEST(TpeSampler, BeatsRandomOnASmoothFunction) {
  std::vector<double> tpe, random;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    TpeSampler sampler;
    RandomSampler rs;
    tpe.push_back(best_value(optimize(sampler, quadratic_space(), seed, 60, quadratic)));
    random.push_back(best_value(optimize(rs, quadratic_space(), seed, 60, quadratic)));
  }
  std::sort(tpe.begin(), tpe.end());
  std::sort(random.begin(), random.end());
  EXPECT_LT(tpe[2], random[2]);
  EXPECT_LT(tpe[2], 0.5);
}

TEST(TpeSampler, MultivariateAndGroupedRunAndConverge) {
  for (bool group : {false, true}) {
    TpeOptions options;
    options.multivariate = true;
    options.group = group;
    std::vector<double> best;
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      TpeSampler sampler(options);
      best.push_back(best_value(optimize(sampler, quadratic_space(), seed, 60, quadratic)));
    }
    std::sort(best.begin(), best.end());
    EXPECT_LT(best[2], 0.5) << "group " << group;
  }
}

TEST(TpeSampler, MaximizeMovesTowardsTheMaximum) {
  TpeSampler sampler;
  std::vector<StudyDirection> maximize{StudyDirection::kMaximize};
  auto trials = optimize(
      sampler, quadratic_space(), 3, 60, [](const Params& p) { return -quadratic(p); }, maximize);
  double best = -INFINITY;
  for (const auto& t : trials) best = std::max(best, t.values[0]);
  EXPECT_GT(best, -0.5);
}

// 20 complete trials around x = 2 (y, which the objective ignores, spread over its range), and
// `n_running` RUNNING trials sitting at the best point, (2, -6).
std::vector<FrozenTrial> liar_history(const SearchSpace& space, int n_running) {
  std::vector<FrozenTrial> trials;
  for (int i = 0; i < 20; ++i) {
    double x = -10.0 + i;
    double y = -10.0 + (7 * i) % 20;
    Params p{{"x", x}, {"y", y}};
    trials.push_back(make_trial(i, space, p, TrialState::kComplete, {(x - 2) * (x - 2)}));
  }
  for (int i = 0; i < n_running; ++i) {
    Params p{{"x", 2.0}, {"y", -6.0}};
    trials.push_back(make_trial(20 + i, space, p, TrialState::kRunning));
  }
  // The trial being sampled: RUNNING, no params yet.
  trials.push_back(make_trial(20 + n_running, space, {}, TrialState::kRunning));
  return trials;
}

double mean_distance_from_best(ConstantLiar liar, bool multivariate) {
  SearchSpace space = quadratic_space();
  auto trials = liar_history(space, 8);
  History history{trials, kMinimize};
  TpeOptions options;
  options.constant_liar = liar;
  options.multivariate = multivariate;
  TpeSampler sampler(options);
  double sum = 0.0;
  for (int r = 0; r < 40; ++r) {
    Rng rng(static_cast<uint64_t>(r));
    Params p =
        sampler.sample(space, history, TrialContext{static_cast<int>(trials.size()) - 1}, rng);
    sum += std::abs(std::get<double>(p.at("x")) - 2.0);
  }
  return sum / 40;
}

TEST(TpeSampler, ConstantLiarMovesProposalsAwayFromRunningTrials) {
  for (bool multivariate : {false, true}) {
    double off = mean_distance_from_best(ConstantLiar::kOff, multivariate);
    double on = mean_distance_from_best(ConstantLiar::kOn, multivariate);
    double automatic = mean_distance_from_best(ConstantLiar::kAuto, multivariate);
    EXPECT_GT(on, off * (multivariate ? 1.2 : 1.5)) << "multivariate " << multivariate;
    EXPECT_EQ(on, automatic);  // RUNNING trials are present: kAuto is on
  }
}

TEST(TpeSampler, ConditionalSpacesSampleOnlyActiveParameters) {
  SearchSpace space;
  space.add_categorical("opt", {std::string("adam"), std::string("sgd")});
  space.add(ParamSpec{"lr_adam", FloatDistribution{1e-5, 1e-1, true},
                      Condition{"opt", {std::string("adam")}}, false});
  space.add(ParamSpec{"momentum", FloatDistribution{0, 1}, Condition{"opt", {std::string("sgd")}},
                      false});
  space.add_int("layers", 1, 4);
  auto objective = [](const Params& p) {
    double v = static_cast<double>(std::get<int64_t>(p.at("layers")));
    if (auto it = p.find("lr_adam"); it != p.end())
      v += std::abs(std::log10(std::get<double>(it->second)) + 3);
    if (auto it = p.find("momentum"); it != p.end()) v += 1.0 - std::get<double>(it->second);
    return v;
  };
  for (int mode = 0; mode < 3; ++mode) {
    TpeOptions options;
    options.multivariate = mode > 0;
    options.group = mode == 2;
    TpeSampler sampler(options);
    auto trials = optimize(sampler, space, 11, 50, objective);  // check_assignment inside
    bool saw_adam = false, saw_sgd = false;
    for (const auto& t : trials) {
      saw_adam |= t.params.count("lr_adam") > 0;
      saw_sgd |= t.params.count("momentum") > 0;
    }
    EXPECT_TRUE(saw_adam && saw_sgd);
    if (mode > 0) {
      History history{trials, kMinimize};
      SearchSpace relative = sampler.relative_space(history);
      EXPECT_NE(relative.find("opt"), nullptr);
      EXPECT_NE(relative.find("layers"), nullptr);
      if (mode == 1) {
        EXPECT_EQ(relative.find("lr_adam"), nullptr);  // not in every trial
      } else {
        EXPECT_NE(relative.find("lr_adam"), nullptr);  // a group of its own
      }
    }
  }
  EXPECT_TRUE(TpeSampler().relative_space(History{{}, kMinimize}).empty());
}

// The startup trials are random, and their origin says so: FAIL trials and COMPLETE ones without
// a value do not count toward n_startup_trials; PRUNED ones do.
TEST(TpeSampler, StartupTrialsAreNamedRandom) {
  SearchSpace space;
  space.add_float("x", 0, 1);
  TpeSampler sampler({.n_startup_trials = 2});
  std::vector<FrozenTrial> trials;
  auto origin = [&] { return sampler.origin(space, History{trials, kMinimize}); };
  EXPECT_EQ(origin(), "random");
  trials.push_back(make_trial(0, space, {{"x", 0.1}}, TrialState::kFail));
  trials.push_back(make_trial(1, space, {{"x", 0.2}}, TrialState::kComplete, {std::nan("")}));
  trials.push_back(make_trial(2, space, {{"x", 0.3}}, TrialState::kComplete, {0.3}));
  EXPECT_EQ(origin(), "random");
  trials.push_back(make_trial(3, space, {{"x", 0.4}}, TrialState::kPruned));
  EXPECT_EQ(origin(), "tpe");
}

TEST(TpeSampler, FailedTrialsAreIgnored) {
  SearchSpace space = quadratic_space();
  std::vector<FrozenTrial> trials;
  for (int i = 0; i < 30; ++i) {
    trials.push_back(make_trial(i, space, {{"x", 1.0 * i / 3}, {"y", 0.0}}, TrialState::kFail));
  }
  History history{trials, kMinimize};
  TpeSampler sampler;
  Rng a(5), b(5);
  Params p = sampler.sample(space, history, TrialContext{30}, a);
  RandomSampler random;
  EXPECT_EQ(p, random.sample(space, history, TrialContext{30}, b));  // still in startup
}

TEST(TpeSampler, PrunedTrialsAreUsed) {
  // Pruned trials only: the ones that got furthest, with the best last value, are near x = 7.
  SearchSpace space;
  space.add_float("x", -10, 10);
  std::vector<FrozenTrial> trials;
  for (int i = 0; i < 40; ++i) {
    double x = -10.0 + 0.5 * i;
    FrozenTrial t = make_trial(i, space, {{"x", x}}, TrialState::kPruned);
    int64_t steps = std::abs(x - 7.0) < 1.1 ? 5 : 2;
    for (int64_t s = 0; s < steps; ++s) t.intermediate_values[s] = std::abs(x - 7.0);
    t.values = {std::abs(x - 7.0)};
    trials.push_back(t);
  }
  History history{trials, kMinimize};
  TpeSampler sampler;
  double sum = 0.0;
  for (int r = 0; r < 20; ++r) {
    Rng rng(static_cast<uint64_t>(r));
    sum += std::get<double>(sampler.sample(space, history, TrialContext{40}, rng).at("x"));
  }
  EXPECT_NEAR(sum / 20, 7.0, 1.5);
}

// The quadratic (best at x = 1.5, y = -2) under the constraint x >= 3, as a trial stores it:
// "constraints" = [3 - x]. The constrained best is 2.25, at x = 3.
struct ConstrainedRun {
  int feasible_late = 0;  // feasible trials among the last half
  double best_feasible = INFINITY;
};

ConstrainedRun optimize_constrained(Sampler& sampler, uint64_t seed, int n, bool store) {
  SearchSpace space = quadratic_space();
  std::vector<FrozenTrial> trials;
  ConstrainedRun run;
  for (int i = 0; i < n; ++i) {
    History history{trials, kMinimize};
    Rng rng = Rng::for_trial(seed, i);
    Params params = sampler.sample(space, history, TrialContext{i}, rng);
    FrozenTrial t = make_trial(i, space, params, TrialState::kComplete, {quadratic(params)});
    const std::vector<double> c = {3.0 - std::get<double>(params.at("x"))};
    if (store) t.system_attrs[kConstraintsAttr] = constraints_to_json(c);
    if (c[0] <= 0) {
      run.best_feasible = std::min(run.best_feasible, t.values[0]);
      if (i >= n / 2) ++run.feasible_late;
    }
    trials.push_back(std::move(t));
  }
  return run;
}

// TPE honours constraints as Optuna's TPESampler does. Ignoring them, it
// converges on the unconstrained best at x = 1.5, which is infeasible.
TEST(TpeSampler, ConstraintsDrawTrialsIntoTheFeasibleRegion) {
  for (bool multivariate : {true, false}) {
    int feasible = 0, feasible_ignored = 0;
    double best = 0, best_ignored = 0;
    constexpr int kSeeds = 5, kTrials = 60;
    for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
      TpeOptions o;
      o.multivariate = multivariate;
      TpeSampler constrained(o), ignoring(o);
      ConstrainedRun a = optimize_constrained(constrained, seed, kTrials, true);
      ConstrainedRun b = optimize_constrained(ignoring, seed, kTrials, false);
      feasible += a.feasible_late;
      feasible_ignored += b.feasible_late;
      best += a.best_feasible / kSeeds;
      best_ignored += b.best_feasible / kSeeds;
    }
    SCOPED_TRACE(multivariate ? "multivariate" : "univariate");
    // Of the last 30 trials of 5 seeds (150), about 100 are feasible; ignoring the constraint,
    // about 40 (the region is a quarter of the space, and TPE still explores).
    EXPECT_GE(feasible, 85) << "ignoring the constraint: " << feasible_ignored;
    EXPECT_LE(feasible_ignored, 60);
    EXPECT_LT(best, 4.5) << "ignoring the constraint: " << best_ignored;  // 2.25 at best
  }
}

TEST(TpeSampler, InfeasibleTrialsRankAfterFeasibleOnesByTheirViolation) {
  // 20 trials: the feasible ones near x = -8 have the worst values, the infeasible ones near
  // x = 1.5 the best. With gamma(20) = 2 the "below" trials are the feasible ones, so proposals
  // go to x = -8, not to the infeasible optimum.
  SearchSpace space;
  space.add_float("x", -10, 10);
  std::vector<FrozenTrial> trials;
  for (int i = 0; i < 20; ++i) {
    const bool feasible = i % 10 == 0;  // trials 0 and 10
    const double x = feasible ? -8.0 + 0.1 * i : 1.0 + 0.05 * i;
    FrozenTrial t =
        make_trial(i, space, {{"x", x}}, TrialState::kComplete, {(x - 1.5) * (x - 1.5)});
    const std::vector<double> c = {feasible ? -1.0 : 0.1 * i};
    t.system_attrs[kConstraintsAttr] = constraints_to_json(c);
    trials.push_back(t);
  }
  History history{trials, kMinimize};
  TpeSampler sampler;
  double sum = 0.0;
  for (int r = 0; r < 20; ++r) {
    Rng rng(static_cast<uint64_t>(r));
    sum += std::get<double>(sampler.sample(space, history, TrialContext{20}, rng).at("x"));
  }
  EXPECT_LT(sum / 20, -4.0);
}

TEST(TpeSampler, SampleIndependentHandlesAChangedDistribution) {
  SearchSpace space = quadratic_space();
  TpeSampler sampler;
  auto trials = optimize(sampler, space, 2, 20, quadratic);
  History history{trials, kMinimize};
  Rng rng(1);
  Distribution narrow = FloatDistribution{0.0, 1.0};
  for (int i = 0; i < 20; ++i) {
    ParamValue v = sampler.sample_independent("x", narrow, history, TrialContext{20}, rng);
    EXPECT_TRUE(contains(narrow, v));
  }
  ParamValue v = sampler.sample_independent("new", narrow, history, TrialContext{20}, rng);
  EXPECT_TRUE(contains(narrow, v));
}

TEST(TpeSampler, RejectsBadOptions) {
  TpeOptions bad;
  bad.n_ei_candidates = 0;
  EXPECT_THROW(TpeSampler{bad}, Error);
  TpeOptions group;
  group.multivariate = false;
  group.group = true;  // grouping needs multivariate
  EXPECT_THROW(TpeSampler{group}, Error);
}

TEST(TpeSampler, DefaultGammaAndWeightsFollowOptuna) {
  EXPECT_EQ(tpe_default_gamma(0), 0);
  EXPECT_EQ(tpe_default_gamma(11), 2);
  EXPECT_EQ(tpe_default_gamma(1000), 25);
  EXPECT_EQ(tpe_default_weights(3), std::vector<double>(3, 1.0));
  auto w = tpe_default_weights(30);
  ASSERT_EQ(w.size(), 30u);
  EXPECT_DOUBLE_EQ(w[0], 1.0 / 30);
  EXPECT_DOUBLE_EQ(w[4], 1.0);
  EXPECT_LT(w[1], w[2]);
  EXPECT_DOUBLE_EQ(w[29], 1.0);
}

TEST(TpeSampler, ImprovementWeightsScaleWithTheGainOverTheThreshold) {
  // Gains 4, 3, 1 over the threshold 4, scaled to a mean of 1.
  std::vector<double> w = tpe_improvement_weights({0.0, 1.0, 3.0}, 4.0);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_DOUBLE_EQ(w[0], 1.5);
  EXPECT_DOUBLE_EQ(w[1], 1.125);
  EXPECT_DOUBLE_EQ(w[2], 0.375);
  // An affine change of the objective changes nothing.
  std::vector<double> shifted = tpe_improvement_weights({5.0, 15.0, 35.0}, 45.0);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(shifted[i], w[i], 1e-12);
  // A loss that ties the threshold keeps a sliver of weight.
  std::vector<double> tie = tpe_improvement_weights({1.0, 4.0}, 4.0);
  EXPECT_GT(tie[1], 0.0);
  EXPECT_LT(tie[1], 1e-9);
  EXPECT_NEAR(tie[0], 2.0, 1e-9);
  // No gain at all, or gains that overflow: equal weights.
  EXPECT_EQ(tpe_improvement_weights({4.0, 4.0}, 4.0), std::vector<double>(2, 1.0));
  EXPECT_EQ(tpe_improvement_weights({-1e308, 0.0}, 1e308), std::vector<double>(2, 1.0));
  // Large gains whose sum would overflow still give finite weights.
  std::vector<double> large = tpe_improvement_weights({-1.5e308, -1.5e308, 0.0}, 0.0);
  EXPECT_NEAR(large[0], 1.5, 1e-9);
  EXPECT_NEAR(large[2], 1.5e-12, 1e-20);
}

// Two "below" trials, at x = -5 (loss 0) and x = 5 (loss 0.9), and 18 "above" ones placed
// symmetrically (losses from 1): the fraction of proposals on the side of the better one.
double fraction_near_the_best(bool improvement_weights) {
  SearchSpace space;
  space.add_float("x", -10, 10);
  std::vector<FrozenTrial> trials;
  trials.push_back(make_trial(0, space, {{"x", -5.0}}, TrialState::kComplete, {0.0}));
  trials.push_back(make_trial(1, space, {{"x", 5.0}}, TrialState::kComplete, {0.9}));
  const double offsets[] = {0.5, 1.5, 2.5, 3.5, 6.5, 7.5, 8.5, 9.5, 4.5};
  for (int i = 0; i < 18; ++i) {
    double x = (i % 2 == 0 ? 1.0 : -1.0) * offsets[i / 2];
    trials.push_back(make_trial(2 + i, space, {{"x", x}}, TrialState::kComplete, {1.0 + i / 2}));
  }
  History history{trials, kMinimize};
  TpeOptions options;
  options.improvement_weights = improvement_weights;
  TpeSampler sampler(options);
  int near_best = 0;
  for (int r = 0; r < 40; ++r) {
    Rng rng(static_cast<uint64_t>(r));
    const Params p = sampler.sample(space, history, TrialContext{20}, rng);
    near_best += std::get<double>(p.at("x")) < 0.0 ? 1 : 0;
  }
  return near_best / 40.0;
}

TEST(TpeSampler, ImprovementWeightsFavourTheBestBelowTrial) {
  // Weighted by improvement (1 against 0.1), the best trial draws most proposals; with equal
  // weights, the two sides get about as many.
  EXPECT_GT(fraction_near_the_best(true), 0.8);
  EXPECT_LT(fraction_near_the_best(false), 0.7);
}

// ---- Several objectives ----

using multi_objective_test::kMinimizeTwo;
using multi_objective_test::optimize_multi;
using multi_objective_test::trials_hypervolume;
using multi_objective_test::zdt1;
using multi_objective_test::zdt_space;

TEST(TpeSampler, MultiObjectiveBelowTakesWholeRanksThenHypervolume) {
  const std::vector<double> losses = {
      0, 3, 1,   1,   3, 0,        // rank 0: trials 0, 1, 2
      2, 2, 3.5, 1.8, 1, 4, 4, 1,  // rank 1: trials 3, 4, 5, 6
      5, 5,                        // rank 2: trial 7
  };
  EXPECT_EQ(tpe_multi_objective_below(losses, 2, 3), (std::vector<size_t>{0, 1, 2}));
  // Rank 0 and two of rank 1 by hypervolume against (4.4, 4.4): (2, 2) adds 5.76, then (1, 4)
  // and (4, 1) 0.4 each (the lower index wins), (3.5, 1.8) 0.18.
  EXPECT_EQ(tpe_multi_objective_below(losses, 2, 5), (std::vector<size_t>{0, 1, 2, 3, 5}));
  // Two of rank 0 (against (3.3, 3.3)): (1, 1), then (0, 3) and (3, 0) tie.
  EXPECT_EQ(tpe_multi_objective_below(losses, 2, 2), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(tpe_multi_objective_below(losses, 2, 8).size(), 8u);
  EXPECT_TRUE(tpe_multi_objective_below(losses, 2, 0).empty());
  EXPECT_EQ(tpe_default_gamma_multi_objective(1000), 100);  // no cap of 25
}

TEST(TpeSampler, HypervolumeWeightsFollowContributions) {
  // The front (0, 3), (1, 1), (3, 0) and a dominated (2, 2), against (3.3, 3.3): contributions
  // 0.3, 4 and 0.3.
  const std::vector<double> w =
      tpe_hypervolume_weights(std::vector<double>{0, 3, 1, 1, 3, 0, 2, 2}, 2);
  ASSERT_EQ(w.size(), 4u);
  EXPECT_NEAR(w[0], 0.075, 1e-12);
  EXPECT_DOUBLE_EQ(w[1], 1.0);
  EXPECT_NEAR(w[2], 0.075, 1e-12);
  EXPECT_EQ(w[3], 1e-12);
  EXPECT_EQ(tpe_hypervolume_weights(std::vector<double>{1, 1}, 2), std::vector<double>{1.0});
}

TEST(TpeSampler, MultiObjectiveBeatsRandom) {
  // ZDT1 with 5 variables, 100 trials, 6 seeds: the hypervolume against (1.1, 7).
  const SearchSpace space = zdt_space(5);
  const std::vector<double> reference = {1.1, 7.0};
  for (bool by_volume : {false, true}) {
    double tpe = 0, random = 0;
    int wins = 0;
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      TpeOptions o;
      o.hypervolume_weights = by_volume;
      TpeSampler sampler(o);
      RandomSampler rs;
      const double a = trials_hypervolume(
          optimize_multi(sampler, space, seed, 100, zdt1, kMinimizeTwo), reference);
      const double b =
          trials_hypervolume(optimize_multi(rs, space, seed, 100, zdt1, kMinimizeTwo), reference);
      tpe += a;
      random += b;
      wins += a > b;
    }
    EXPECT_GE(wins, 5) << "hypervolume_weights=" << by_volume;
    EXPECT_GT(tpe, 1.05 * random) << "hypervolume_weights=" << by_volume;
  }
}

TEST(TpeSampler, MultiObjectiveSameRngSameValuesAndDirections) {
  const SearchSpace space = zdt_space(3);
  TpeSampler a, b, c;
  auto first = optimize_multi(a, space, 5, 40, zdt1, kMinimizeTwo);
  auto second = optimize_multi(b, space, 5, 40, zdt1, kMinimizeTwo);
  // Maximizing the negated objectives ranks the trials the same way: the same proposals.
  auto negated = optimize_multi(c, space, 5, 40,
                                [](const Params& p) {
                                  std::vector<double> v = zdt1(p);
                                  for (double& x : v) x = -x;
                                  return v;
                                },
                                {StudyDirection::kMaximize, StudyDirection::kMaximize});
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(first[i].params, second[i].params) << i;
    EXPECT_EQ(first[i].params, negated[i].params) << i;
  }
}

TEST(TpeSampler, MultiObjectiveConstraintsDrawTrialsIntoTheFeasibleRegion) {
  // ZDT1 with mean(x1, x2, x3) >= 0.5 required, where its front (x1 = x2 = x3 = 0) is not: after
  // the startup trials most proposals are feasible, which ignoring the constraint they are not,
  // and the feasible front is better.
  const SearchSpace space = zdt_space(4);
  const auto constraint = multi_objective_test::zdt_mean_constraint;
  int feasible = 0, feasible_ignored = 0;
  double constrained_volume = 0, ignoring_volume = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    TpeSampler constrained, ignoring;
    auto a = optimize_multi(constrained, space, seed, 80, zdt1, kMinimizeTwo, constraint);
    auto b = optimize_multi(ignoring, space, seed, 80, zdt1, kMinimizeTwo);
    for (FrozenTrial& t : b) {
      t.system_attrs[kConstraintsAttr] =
          constraints_to_json(std::vector<double>{constraint(t.params)});
    }
    for (int i = 40; i < 80; ++i) {
      feasible += is_feasible(a[static_cast<size_t>(i)]);
      feasible_ignored += is_feasible(b[static_cast<size_t>(i)]);
    }
    constrained_volume += trials_hypervolume(a, {1.1, 7.0}, true);
    ignoring_volume += trials_hypervolume(b, {1.1, 7.0}, true);
  }
  // Seeds 1-4: 96 and 0 of 160.
  EXPECT_GE(feasible, 80) << "ignoring the constraint: " << feasible_ignored;
  EXPECT_LE(feasible_ignored, 30);
  EXPECT_GT(constrained_volume, ignoring_volume);
}

}  // namespace
}  // namespace tuner
