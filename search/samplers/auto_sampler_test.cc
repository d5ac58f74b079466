#include "search/samplers/auto_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "search/samplers/multi_fidelity/budget_targets.h"
#include "trials/error.h"

namespace tuner {
namespace {

const std::vector<StudyDirection> kMinimize{StudyDirection::kMinimize};

SearchSpace floats(int n) {
  SearchSpace space;
  for (int i = 0; i < n; ++i) space.add_float("x" + std::to_string(i), -5, 5);
  return space;
}

double sphere(const Params& p) {
  double sum = 0;
  for (const auto& [name, value] : p) sum += std::get<double>(value) * std::get<double>(value);
  return sum;
}

FrozenTrial trial(int number, TrialState state, Params params, const SearchSpace& space) {
  FrozenTrial t;
  t.trial_id = t.number = number;
  t.state = state;
  for (const auto& [name, value] : params) t.distributions[name] = space.find(name)->distribution;
  if (state == TrialState::kComplete) t.values = {sphere(params)};
  t.params = std::move(params);
  return t;
}

// `n` trials proposed by `sampler` over `space`, each COMPLETE (or PRUNED when `pruned(i)`).
std::vector<FrozenTrial> run(Sampler& sampler, const SearchSpace& space, int n,
                             bool (*pruned)(int) = nullptr) {
  std::vector<FrozenTrial> trials;
  for (int i = 0; i < n; ++i) {
    Rng rng = Rng::for_trial(3, i);
    Params p = sampler.sample(space, History{trials, kMinimize}, TrialContext{i}, rng);
    trials.push_back(
        trial(i, pruned && pruned(i) ? TrialState::kPruned : TrialState::kComplete, p, space));
  }
  return trials;
}

std::string delegate(const AutoSampler& sampler, const SearchSpace& space,
                     const std::vector<FrozenTrial>& trials,
                     const std::vector<StudyDirection>& directions = kMinimize) {
  return sampler.delegate(space, History{trials, directions});
}

TEST(AutoSampler, TakesTheGpForAFewUnconditionalParameters) {
  AutoSampler sampler;
  const SearchSpace space = floats(3);
  EXPECT_EQ(delegate(sampler, space, {}), "gp");
  EXPECT_EQ(delegate(sampler, space, run(sampler, space, 15)), "gp");
}

// A trial's origin is the delegate's: its startup trials are random.
TEST(AutoSampler, NamesTheDelegatesStartupTrialsRandom) {
  AutoSampler sampler;
  const SearchSpace space = floats(3);
  EXPECT_EQ(sampler.origin(space, History{{}, kMinimize}), "random");
  EXPECT_EQ(sampler.origin(space, History{run(sampler, space, 9), kMinimize}), "random");
  EXPECT_EQ(sampler.origin(space, History{run(sampler, space, 10), kMinimize}), "gp");
}

TEST(AutoSampler, ProposesExactlyWhatItsDelegateProposes) {
  AutoSampler automatic;
  GpSampler gp;
  const SearchSpace space = floats(2);
  const std::vector<FrozenTrial> a = run(automatic, space, 14);
  const std::vector<FrozenTrial> b = run(gp, space, 14);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].params, b[i].params) << "trial " << i;
}

// A deterministic objective over a few integers (16 points): the default sampler proposes each
// point once before any twice, its random startup trials included, and the RUNNING trials' points
// count as taken.
TEST(AutoSampler, ProposesEveryPointOfASmallIntegerSpaceOnce) {
  SearchSpace space;
  space.add_int("a", 0, 3);
  space.add_int("b", -6, 6, /*log=*/false, /*step=*/4);
  AutoSampler sampler;
  std::vector<FrozenTrial> trials;
  std::set<Params> seen;
  for (int i = 0; i < 16; ++i) {
    Rng rng = Rng::for_trial(4, i);
    const Params p = sampler.sample(space, History{trials, kMinimize}, TrialContext{i}, rng);
    EXPECT_TRUE(seen.insert(p).second) << "trial " << i << " repeats a point";
    FrozenTrial t;
    t.trial_id = t.number = i;
    t.params = p;
    for (const auto& [name, value] : p) t.distributions[name] = space.find(name)->distribution;
    // Every third trial still RUNNING.
    t.state = i % 3 == 2 ? TrialState::kRunning : TrialState::kComplete;
    if (t.state == TrialState::kComplete) {
      const double a = static_cast<double>(std::get<int64_t>(p.at("a")));
      const double b = static_cast<double>(std::get<int64_t>(p.at("b")));
      t.values = {(a - 1) * (a - 1) + (b - 2) * (b - 2)};
    }
    trials.push_back(std::move(t));
  }
}

TEST(AutoSampler, TakesTpeForAConditionalSpace) {
  AutoSampler sampler;
  SearchSpace space;
  space.add_categorical("kind", {std::string("a"), std::string("b")});
  space.add({"x", FloatDistribution{0, 1}, Condition{"kind", {std::string("a")}}});
  EXPECT_EQ(delegate(sampler, space, {}), "tpe");
}

TEST(AutoSampler, TakesTpeForManyParameters) {
  AutoSampler sampler({.max_gp_params = 4});
  EXPECT_EQ(delegate(sampler, floats(4), {}), "gp");
  EXPECT_EQ(delegate(sampler, floats(5), {}), "tpe");
  // The default bound is the most parameters the benchmarks measured the GP on (40).
  EXPECT_EQ(delegate(AutoSampler(), floats(40), {}), "gp");
  EXPECT_EQ(delegate(AutoSampler(), floats(41), {}), "tpe");
}

// With several objectives the GP (expected hypervolume improvement) did better than
// multi-objective TPE on the multi-objective benchmark (bench/mo), so the same rules pick it; a
// conditional space still goes to TPE.
TEST(AutoSampler, TakesTheGpForSeveralObjectivesUnderTheSameRules) {
  AutoSampler sampler;
  const std::vector<StudyDirection> two{StudyDirection::kMinimize, StudyDirection::kMaximize};
  EXPECT_EQ(delegate(sampler, floats(2), {}, two), "gp");
  SearchSpace conditional;
  conditional.add_categorical("kind", {std::string("a"), std::string("b")});
  conditional.add({"x", FloatDistribution{0, 1}, Condition{"kind", {std::string("a")}}});
  EXPECT_EQ(delegate(sampler, conditional, {}, two), "tpe");
  EXPECT_EQ(delegate(AutoSampler({.max_gp_params = 1}), floats(2), {}, two), "tpe");
}

TEST(AutoSampler, HandsALongStudyToTpe) {
  AutoSampler sampler({.max_gp_trials = 12});
  const SearchSpace space = floats(2);
  std::vector<FrozenTrial> trials = run(sampler, space, 11);
  EXPECT_EQ(delegate(sampler, space, trials), "gp");
  trials.push_back(trial(11, TrialState::kComplete, trials[0].params, space));
  EXPECT_EQ(delegate(sampler, space, trials), "tpe");
  // A RUNNING trial is not finished: it does not count.
  trials.pop_back();
  trials.push_back(trial(11, TrialState::kRunning, {}, space));
  EXPECT_EQ(delegate(sampler, space, trials), "gp");
}

// Under ASHA most trials are PRUNED: the GP, fitted to COMPLETE trials only, would hardly learn.
TEST(AutoSampler, TakesTpeWhenMostTrialsArePruned) {
  AutoSampler sampler;
  const SearchSpace space = floats(2);
  EXPECT_EQ(delegate(sampler, space, run(sampler, space, 12, [](int i) { return i % 3 == 0; })),
            "gp");
  EXPECT_EQ(delegate(sampler, space, run(sampler, space, 12, [](int i) { return i % 3 != 0; })),
            "tpe");
}

// Define-by-run: the space it is given is the relative one, without conditions; the trials show
// that the objective branches.
TEST(AutoSampler, TakesTpeWhenDefineByRunTrialsBranch) {
  AutoSampler sampler;
  SearchSpace space = floats(2);
  space.add_float("extra", 0, 1);
  std::vector<FrozenTrial> trials;
  for (int i = 0; i < 12; ++i) {
    Params p{{"x0", 0.1 * i}, {"x1", -0.1 * i}};
    if (i % 2 == 1) p["extra"] = 0.5;
    trials.push_back(trial(i, TrialState::kComplete, p, space));
  }
  const History history{trials, kMinimize};
  const SearchSpace relative = sampler.relative_space(history);
  EXPECT_EQ(relative.size(), 2u);  // the parameters every trial has
  EXPECT_EQ(sampler.delegate(relative, history), "tpe");
  trials.resize(1);
  EXPECT_EQ(sampler.delegate(floats(2), History{trials, kMinimize}), "gp");
}

// Successive halving on a synthetic objective observed at budgets 1, 3 and 9 (a loss that falls
// with the budget and ranks points at every budget as at the largest one): a trial goes on
// from a budget while it is among the best third there (the first one always does). Returns
// the trials, and stops once a COMPLETE trial is within `tolerance` of the optimum.
struct HalvingRun {
  std::vector<FrozenTrial> trials;
  int trials_to_optimum = -1;  // trials run until one near the optimum completed; -1: none
};

HalvingRun run_halving(Sampler& sampler, int n, double tolerance) {
  const SearchSpace space = floats(2);
  const auto loss = [](const Params& p, int64_t budget) {
    const double a = std::get<double>(p.at("x0")) - 1.5, b = std::get<double>(p.at("x1")) + 2;
    return a * a + b * b + 4.0 / static_cast<double>(budget);
  };
  HalvingRun run;
  for (int i = 0; i < n; ++i) {
    Rng rng = Rng::for_trial(5, i);
    FrozenTrial t;
    t.trial_id = t.number = i;
    run.trials.push_back(t);  // RUNNING while it is sampled
    const Params p = sampler.sample(space, History{run.trials, kMinimize}, TrialContext{i}, rng);
    t.state = TrialState::kComplete;
    for (int64_t budget : {1, 3, 9}) {
      const double v = loss(p, budget);
      t.intermediate_values[budget] = v;
      if (budget == 9) break;
      int better = 0, there = 1;
      for (const FrozenTrial& other : run.trials) {
        auto it = other.intermediate_values.find(budget);
        if (other.number == i || it == other.intermediate_values.end()) continue;
        ++there;
        better += it->second < v;
      }
      if (better >= std::max(1, there / 3)) {
        t.state = TrialState::kPruned;
        break;
      }
    }
    for (const auto& [name, value] : p) t.distributions[name] = space.find(name)->distribution;
    t.params = p;
    t.values = {t.intermediate_values.rbegin()->second};
    run.trials.back() = t;
    const double a = std::get<double>(p.at("x0")) - 1.5, b = std::get<double>(p.at("x1")) + 2;
    if (t.state == TrialState::kComplete && run.trials_to_optimum < 0 &&
        a * a + b * b < tolerance * tolerance) {
      run.trials_to_optimum = i + 1;
    }
  }
  return run;
}

// Under early stopping most trials are PRUNED after the lowest budget. Carried to the largest
// budget, their values tell the GP where the optimum is: a trial near it completes sooner than
// when the study goes to TPE (which ranks PRUNED trials after COMPLETE ones) or to a GP of the
// COMPLETE trials alone.
TEST(AutoSampler, ModelsPrunedTrialsAtTheirBudgetUnderEarlyStopping) {
  AutoSampler with_rungs;
  AutoSampler without_rungs({.multi_fidelity = false});
  GpSampler complete_only;
  const HalvingRun with = run_halving(with_rungs, 40, 0.5);
  const HalvingRun tpe = run_halving(without_rungs, 40, 0.5);
  const HalvingRun gp = run_halving(complete_only, 40, 0.5);
  EXPECT_EQ(with_rungs.delegate(floats(2), History{with.trials, kMinimize}), "gp");
  EXPECT_EQ(without_rungs.delegate(floats(2), History{tpe.trials, kMinimize}), "tpe");
  ASSERT_GT(with.trials_to_optimum, 0);
  EXPECT_LT(with.trials_to_optimum, tpe.trials_to_optimum < 0 ? 41 : tpe.trials_to_optimum);
  EXPECT_LT(with.trials_to_optimum, gp.trials_to_optimum < 0 ? 41 : gp.trials_to_optimum);
}

// The carried values are a function of the stored trials: a fresh sampler (a resumed study)
// proposes what the one that ran the study proposes.
TEST(AutoSampler, ProposesFromRungValuesAsAFreshSamplerWould) {
  AutoSampler ran;
  const HalvingRun run = run_halving(ran, 25, 0.0);
  std::vector<FrozenTrial> trials(run.trials.begin(), run.trials.begin() + 20);
  FrozenTrial next;
  next.trial_id = next.number = 20;
  trials.push_back(next);
  const History history{trials, kMinimize};
  AutoSampler fresh;
  Rng a = Rng::for_trial(5, 20), b = Rng::for_trial(5, 20);
  EXPECT_EQ(ran.delegate(floats(2), history), "gp");
  EXPECT_EQ(ran.sample(floats(2), history, TrialContext{20}, a),
            fresh.sample(floats(2), history, TrialContext{20}, b));
}

// The calls of one ask share the budget targets they build; a history of as many trials that
// differs in a PRUNED trial's rung value gets its own, as a fresh sampler would.
TEST(AutoSampler, ProposesFromRungValuesOfTheHistoryGivenNotOfAnEarlierOneOfTheSameSize) {
  AutoSampler ran;
  const HalvingRun halving = run_halving(ran, 25, 0.0);
  std::vector<FrozenTrial> first(halving.trials.begin(), halving.trials.begin() + 20);
  FrozenTrial next;
  next.trial_id = next.number = 20;
  first.push_back(next);
  std::vector<FrozenTrial> second = first;
  auto pruned = std::find_if(second.begin(), second.end(), [](const FrozenTrial& t) {
    return t.state == TrialState::kPruned && t.number >= 10;
  });
  ASSERT_NE(pruned, second.end());
  pruned->intermediate_values.rbegin()->second -= 100;  // now far better at its rung
  pruned->values = {pruned->intermediate_values.rbegin()->second};
  AutoSampler sampler;
  for (const std::vector<FrozenTrial>* trials : {&first, &second, &first}) {
    const History history{*trials, kMinimize};
    ASSERT_EQ(sampler.delegate(floats(2), history), "gp");
    EXPECT_EQ(sampler.origin(floats(2), history), "gp");
    Rng a = Rng::for_trial(5, 20), b = Rng::for_trial(5, 20);
    EXPECT_EQ(sampler.sample(floats(2), history, TrialContext{20}, a),
              AutoSampler().sample(floats(2), history, TrialContext{20}, b));
  }
  Rng a = Rng::for_trial(5, 20), b = Rng::for_trial(5, 20);
  EXPECT_NE(sampler.sample(floats(2), History{first, kMinimize}, TrialContext{20}, a),
            sampler.sample(floats(2), History{second, kMinimize}, TrialContext{20}, b));
}

// The calls of one ask (origin, relative_space, sample) share one build of the budget targets:
// each proposal is the GP's from targets built afresh from the history it is given.
TEST(AutoSampler, ProposesFromBudgetTargetsOfTheHistoryAtEveryCallOfAnAsk) {
  AutoSampler ran;
  const HalvingRun halving = run_halving(ran, 24, 0.0);
  AutoSampler sampler;
  GpSampler gp;
  for (int n : {12, 20, 13, 23, 23, 12}) {
    std::vector<FrozenTrial> trials(halving.trials.begin(), halving.trials.begin() + n);
    FrozenTrial next;
    next.trial_id = next.number = n;
    trials.push_back(next);
    const History history{trials, kMinimize};
    ASSERT_EQ(sampler.origin(floats(2), history), "gp") << n;
    EXPECT_EQ(sampler.relative_space(history).size(), 2u) << n;
    const BudgetTargetHistory targets(history);
    Rng a = Rng::for_trial(5, n), b = Rng::for_trial(5, n);
    EXPECT_EQ(sampler.sample(floats(2), history, TrialContext{n}, a),
              gp.sample(floats(2), targets.history(), TrialContext{n}, b))
        << n;
  }
}

// The rung values change what the GP sees, not what a study of several objectives or one whose
// PRUNED trials reported nothing gets.
TEST(AutoSampler, KeepsTpeWhenPrunedTrialsHaveNoRungValues) {
  AutoSampler sampler;
  const SearchSpace space = floats(2);
  std::vector<FrozenTrial> trials = run(sampler, space, 12, [](int i) { return i % 3 != 0; });
  EXPECT_EQ(delegate(sampler, space, trials), "tpe");
  for (FrozenTrial& t : trials) {
    if (t.state == TrialState::kPruned) t.intermediate_values[1] = 1.0 + t.number;
  }
  EXPECT_EQ(delegate(sampler, space, trials), "gp");
  EXPECT_EQ(AutoSampler({.multi_fidelity = false}).delegate(space, History{trials, kMinimize}),
            "tpe");
}

TEST(AutoSampler, RefusesOptionsOutOfRange) {
  EXPECT_THROW(AutoSampler({.max_gp_params = 0}), Error);
  EXPECT_THROW(AutoSampler({.max_gp_trials = -1}), Error);
}

}  // namespace
}  // namespace tuner
