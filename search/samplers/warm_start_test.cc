// Warm start on the sampler side (History::prior): TPE, the GP and the AutoSampler learn from
// an earlier study's observations from the first trial on; random ignores them.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "search/samplers/auto_sampler.h"
#include "search/samplers/gp/gp_sampler.h"
#include "search/samplers/random_sampler.h"
#include "search/samplers/tpe/tpe_sampler.h"

namespace tuner {
namespace {

const std::vector<StudyDirection> kMinimize{StudyDirection::kMinimize};

SearchSpace space_xy() {
  SearchSpace space;
  space.add_float("x", -10, 10);
  space.add_float("y", -10, 10);
  return space;
}

// Minimum 0 at x = 1.5, y = -2.
double quadratic(const Params& p) {
  const double x = std::get<double>(p.at("x")) - 1.5;
  const double y = p.contains("y") ? std::get<double>(p.at("y")) + 2.0 : 0.0;
  return x * x + y * y;
}

// `n` observations of the quadratic at random points of `space` (an earlier study), numbered
// 0, 1, ... and valued by `objective`.
std::vector<FrozenTrial> prior_of(const SearchSpace& space, int n, uint64_t seed) {
  std::vector<FrozenTrial> prior;
  RandomSampler random;
  for (int i = 0; i < n; ++i) {
    Rng rng = Rng::for_trial(seed, i);
    FrozenTrial t;
    t.trial_id = 5000 + i;
    t.number = i;
    t.state = TrialState::kComplete;
    t.params = random.sample(space, History{{}, kMinimize}, TrialContext{i}, rng);
    for (const ParamSpec& spec : space.params()) t.distributions[spec.name] = spec.distribution;
    t.values = {quadratic(t.params)};
    prior.push_back(std::move(t));
  }
  return prior;
}

double best_of(const std::vector<FrozenTrial>& trials) {
  double best = INFINITY;
  for (const FrozenTrial& t : trials) best = std::min(best, t.values[0]);
  return best;
}

// The mean objective of the first proposal of a study with no trials of its own, over `seeds`
// seeds, each with its own prior of `n_prior` observations over `prior_space`.
double mean_first_value(Sampler& sampler, const SearchSpace& space, const SearchSpace& prior_space,
                        int n_prior, int seeds) {
  double sum = 0;
  for (int s = 0; s < seeds; ++s) {
    const std::vector<FrozenTrial> prior = prior_of(prior_space, n_prior, 100 + s);
    History history{.trials = {}, .directions = kMinimize, .prior = prior};
    Rng rng = Rng::for_trial(7 + s, 0);
    const Params params = sampler.sample(space, history, TrialContext{0}, rng);
    space.check_assignment(params);
    sum += quadratic(params);
  }
  return sum / seeds;
}

// The same without a prior: the startup trials' random points.
double mean_first_value_without(Sampler& sampler, const SearchSpace& space, int seeds) {
  double sum = 0;
  for (int s = 0; s < seeds; ++s) {
    History history{.trials = {}, .directions = kMinimize};
    Rng rng = Rng::for_trial(7 + s, 0);
    sum += quadratic(sampler.sample(space, history, TrialContext{0}, rng));
  }
  return sum / seeds;
}

TEST(WarmStart, TpeProposesNearThePriorOptimumFromTheFirstTrial) {
  TpeSampler tpe;
  const SearchSpace space = space_xy();
  const double with = mean_first_value(tpe, space, space, 40, 12);
  const double without = mean_first_value_without(tpe, space, 12);
  // The prior's best of 40 random points is about 1; random points average about 70.
  EXPECT_LT(with, 10.0);
  EXPECT_LT(with, without / 4);
  const std::vector<FrozenTrial> prior = prior_of(space, 40, 1);
  EXPECT_EQ(tpe.origin(space, History{.trials = {}, .directions = kMinimize, .prior = prior}),
            "tpe");
  EXPECT_EQ(tpe.origin(space, History{.trials = {}, .directions = kMinimize}), "random");
}

TEST(WarmStart, GpProposesNearThePriorOptimumFromTheFirstTrial) {
  GpSampler gp;
  const SearchSpace space = space_xy();
  const double with = mean_first_value(gp, space, space, 30, 4);
  const double without = mean_first_value_without(gp, space, 4);
  EXPECT_LT(with, 5.0);
  EXPECT_LT(with, without / 4);
  const std::vector<FrozenTrial> prior = prior_of(space, 30, 1);
  EXPECT_EQ(gp.origin(space, History{.trials = {}, .directions = kMinimize, .prior = prior}), "gp");
}

TEST(WarmStart, AutoSamplerModelsFromTheFirstTrialWithTheGp) {
  AutoSampler sampler;
  const SearchSpace space = space_xy();
  const std::vector<FrozenTrial> prior = prior_of(space, 30, 1);
  const History history{.trials = {}, .directions = kMinimize, .prior = prior};
  EXPECT_EQ(sampler.origin(space, history), "gp");
  EXPECT_LT(mean_first_value(sampler, space, space, 30, 3), 5.0);
}

// The study's own trials after the prior: numbered from 0 (History's contract), the samplers
// go on learning from both.
TEST(WarmStart, StudyTrialsFollowThePrior) {
  const SearchSpace space = space_xy();
  const std::vector<FrozenTrial> prior = prior_of(space, 30, 3);
  for (const bool gp : {false, true}) {
    std::unique_ptr<Sampler> sampler;
    if (gp) {
      sampler = std::make_unique<GpSampler>();
    } else {
      sampler = std::make_unique<TpeSampler>();
    }
    std::vector<FrozenTrial> trials;
    for (int i = 0; i < 8; ++i) {
      History history{.trials = trials, .directions = kMinimize, .prior = prior};
      Rng rng = Rng::for_trial(11, i);
      FrozenTrial t;
      t.trial_id = i;
      t.number = i;
      t.state = TrialState::kComplete;
      t.params = sampler->sample(space, history, TrialContext{i}, rng);
      for (const ParamSpec& spec : space.params()) t.distributions[spec.name] = spec.distribution;
      t.values = {quadratic(t.params)};
      trials.push_back(std::move(t));
    }
    EXPECT_LT(best_of(trials), best_of(prior)) << (gp ? "gp" : "tpe");
  }
}

// A parameter the earlier study lacks is missing from its observations: TPE models the others
// (and samples that one on its own), the GP imputes it at its range's centre.
TEST(WarmStart, ParameterTheEarlierStudyLacks) {
  SearchSpace only_x;
  only_x.add_float("x", -10, 10);
  const SearchSpace space = space_xy();
  TpeSampler tpe;
  GpSampler gp;
  for (Sampler* sampler : std::vector<Sampler*>{&tpe, &gp}) {
    double x_error = 0;
    for (int s = 0; s < 12; ++s) {
      const std::vector<FrozenTrial> prior = prior_of(only_x, 30, 200 + s);
      History history{.trials = {}, .directions = kMinimize, .prior = prior};
      Rng rng = Rng::for_trial(3 + s, 0);
      const Params params = sampler->sample(space, history, TrialContext{0}, rng);
      space.check_assignment(params);
      x_error += std::abs(std::get<double>(params.at("x")) - 1.5) / 12;
    }
    // A random x is 5.1 away on average.
    EXPECT_LT(x_error, 2.5) << sampler->name();
  }
}

// A parameter only the earlier study has is ignored.
TEST(WarmStart, ParameterOnlyTheEarlierStudyHas) {
  SearchSpace wider = space_xy();
  wider.add_categorical("act", {std::string("relu"), std::string("tanh")});
  const SearchSpace space = space_xy();
  TpeSampler tpe;
  GpSampler gp;
  EXPECT_LT(mean_first_value(tpe, space, wider, 40, 8), 10.0);
  EXPECT_LT(mean_first_value(gp, space, wider, 30, 3), 5.0);
}

// Observations of another distribution (a define-by-run study's, read as stored) whose values
// lie outside the proposal's are not read as if inside it: TPE leaves them out of that
// parameter's estimators, the GP leaves the observation out.
TEST(WarmStart, ValuesOutsideTheSpaceAreNotRead) {
  SearchSpace wide;
  wide.add_float("x", -100, 100);
  wide.add_float("y", -10, 10);
  SearchSpace narrow = space_xy();
  const std::vector<FrozenTrial> prior = prior_of(wide, 30, 9);
  TpeSampler tpe;
  GpSampler gp;
  for (Sampler* sampler : std::vector<Sampler*>{&tpe, &gp}) {
    History history{.trials = {}, .directions = kMinimize, .prior = prior};
    Rng rng = Rng::for_trial(1, 0);
    narrow.check_assignment(sampler->sample(narrow, history, TrialContext{0}, rng));
  }
}

// Observations of two priors may carry the same trial ids (each from its own storage): a sampler
// given one prior and then the other proposes what a fresh one does.
TEST(WarmStart, AnotherPriorWithTheSameTrialIdsIsNotMistakenForTheFirst) {
  const SearchSpace space = space_xy();
  const std::vector<FrozenTrial> first = prior_of(space, 30, 100);
  const std::vector<FrozenTrial> second = prior_of(space, 30, 101);
  ASSERT_EQ(first[0].trial_id, second[0].trial_id);
  TpeSampler used, fresh;
  Rng rng = Rng::for_trial(1, 0);
  used.sample(space, History{.trials = {}, .directions = kMinimize, .prior = first},
              TrialContext{0}, rng);
  Rng a = Rng::for_trial(2, 0), b = Rng::for_trial(2, 0);
  EXPECT_EQ(used.sample(space, History{.trials = {}, .directions = kMinimize, .prior = second},
                        TrialContext{0}, a),
            fresh.sample(space, History{.trials = {}, .directions = kMinimize, .prior = second},
                         TrialContext{0}, b));
}

TEST(WarmStart, RandomIgnoresThePrior) {
  RandomSampler random;
  const SearchSpace space = space_xy();
  const std::vector<FrozenTrial> prior = prior_of(space, 30, 1);
  Rng a = Rng::for_trial(5, 0), b = Rng::for_trial(5, 0);
  EXPECT_EQ(
      random.sample(space, History{.trials = {}, .directions = kMinimize, .prior = prior},
                    TrialContext{0}, a),
      random.sample(space, History{.trials = {}, .directions = kMinimize}, TrialContext{0}, b));
}

}  // namespace
}  // namespace tuner
