#include "search/samplers/nsga2_sampler.h"

#include <gtest/gtest.h>

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

using multi_objective_test::optimize_multi;
using multi_objective_test::trials_hypervolume;
using multi_objective_test::zdt1;
using multi_objective_test::zdt_space;
const std::vector<StudyDirection>& kTwo = multi_objective_test::kMinimizeTwo;

TEST(Nsga2Sampler, CrowdingDistances) {
  // (0, 3), (1, 1), (3, 0), (2, 0.5): the ends of each objective are infinitely far; (1, 1):
  // (2 - 0) / 3 + (3 - 0.5) / 3; (2, 0.5): (3 - 1) / 3 + (1 - 0) / 3.
  const std::vector<double> d =
      crowding_distances(std::vector<double>{0, 3, 1, 1, 3, 0, 2, 0.5}, 2);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0], INFINITY);
  EXPECT_DOUBLE_EQ(d[1], 2.0 / 3 + 2.5 / 3);
  EXPECT_EQ(d[2], INFINITY);
  EXPECT_DOUBLE_EQ(d[3], 2.0 / 3 + 1.0 / 3);
  // An objective with one value adds nothing.
  EXPECT_EQ(crowding_distances(std::vector<double>{1, 0, 1, 1, 1, 2}, 2)[1], 2.0 / 2);
}

TEST(Nsga2Sampler, EliteTakesWholeRanksThenTheLeastCrowded) {
  const std::vector<double> points = {
      0,   1, 1,   0,            // rank 0: 0, 1
      0.5, 3, 1.2, 2.4, 2.5, 1,  // rank 1: 2, 3, 4 (3 between the two others: the most crowded)
      5,   5,                    // rank 2: 5
  };
  const std::vector<double> feasible(6, 0.0);
  EXPECT_EQ(nsga2_elite(points, 2, feasible, 4), (std::vector<size_t>{0, 1, 2, 4}));
  EXPECT_EQ(nsga2_elite(points, 2, feasible, 2), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(nsga2_elite(points, 2, feasible, 9).size(), 6u);
  // Constrained domination: point 5 is the only feasible one, and 0 the least infeasible.
  std::vector<double> violations = {1, 2, 3, 3, 3, 0};
  EXPECT_EQ(nsga2_elite(points, 2, violations, 2), (std::vector<size_t>{0, 5}));
}

TEST(Nsga2Sampler, FirstGenerationIsRandom) {
  Nsga2Options o;
  o.population_size = 10;
  Nsga2Sampler nsga2(o);
  RandomSampler random;
  const SearchSpace space = zdt_space(3);
  auto a = optimize_multi(nsga2, space, 3, 10, zdt1);
  auto b = optimize_multi(random, space, 3, 10, zdt1);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a[i].params, b[i].params) << i;
}

TEST(Nsga2Sampler, ParentsAreTheEliteOfThePreviousGeneration) {
  Nsga2Options o;
  o.population_size = 4;
  Nsga2Sampler sampler(o);
  SearchSpace space;
  space.add_float("x", 0, 1);
  // Generation 0: trials 0-3; generation 1: 4-7 (trial 6 failed).
  const std::vector<std::vector<double>> values = {{0, 3}, {5, 5}, {3, 0}, {2, 2},
                                                   {1, 1}, {6, 6}, {},     {0.5, 2.9}};
  std::vector<FrozenTrial> trials;
  for (int i = 0; i < 8; ++i) {
    trials.push_back(multi_objective_test::complete_trial(i, space, {{"x", 0.1 * i}},
                                                          values[static_cast<size_t>(i)]));
    if (values[static_cast<size_t>(i)].empty()) trials.back().state = TrialState::kFail;
  }
  History history{trials, kTwo};
  EXPECT_TRUE(sampler.parents(history, 0).empty());
  EXPECT_EQ(sampler.parents(history, 1), (std::vector<int>{0, 1, 2, 3}));
  // The pool {0, 1, 2, 3} + {4, 5, 7}: rank 0 is 0, 2, 4, 7; all four fit.
  EXPECT_EQ(sampler.parents(history, 2), (std::vector<int>{0, 2, 4, 7}));
}

TEST(Nsga2Sampler, ChildrenComeFromTheParents) {
  // Without mutation, a child's values are its parents': with crossover_prob 0 all of one
  // parent's, with uniform crossover each of one of the two.
  const SearchSpace space = zdt_space(4);
  for (double crossover : {0.0, 1.0}) {
    Nsga2Options o;
    o.population_size = 8;
    o.crossover_prob = crossover;
    o.mutation_prob = 0.0;
    Nsga2Sampler sampler(o);
    auto trials = optimize_multi(sampler, space, 11, 24, zdt1);
    History history{trials, kTwo};
    for (int i = 8; i < 24; ++i) {
      const std::vector<int> parents = sampler.parents(history, i / 8);
      int whole = 0;
      for (const auto& [name, value] : trials[static_cast<size_t>(i)].params) {
        bool found = false;
        for (int p : parents) found |= trials[static_cast<size_t>(p)].params.at(name) == value;
        EXPECT_TRUE(found) << "trial " << i << " " << name;
      }
      for (int p : parents)
        whole += trials[static_cast<size_t>(p)].params == trials[static_cast<size_t>(i)].params;
      if (crossover == 0.0) {
        EXPECT_GE(whole, 1) << "trial " << i;
      }
    }
  }
}

TEST(Nsga2Sampler, SbxStaysInsideEveryKindOfDistribution) {
  SearchSpace space;
  space.add_float("f", -1, 1);
  space.add_float("flog", 1e-5, 1e-1, true);
  space.add_float("fstep", 0, 1, false, 0.125);
  space.add_int("i", -3, 7);
  space.add_int("ilog", 1, 1024, true);
  space.add_int("istep", 0, 100, false, 5);
  space.add_categorical("c", {std::string("a"), int64_t{2}, 3.5, true});
  auto objective = [](const Params& p) {
    const double f = std::get<double>(p.at("f"));
    const double i = static_cast<double>(std::get<int64_t>(p.at("i")));
    return std::vector<double>{f * f + i, (f - 1) * (f - 1) - i};
  };
  // SBX makes new values (for about half the parameters of a child); uniform crossover only
  // copies its parents' and mutation's.
  size_t distinct[2] = {0, 0};
  for (Nsga2Crossover crossover : {Nsga2Crossover::kUniform, Nsga2Crossover::kSbx}) {
    Nsga2Options o;
    o.population_size = 10;
    o.crossover = crossover;
    Nsga2Sampler sampler(o);
    auto trials = optimize_multi(sampler, space, 5, 60, objective);  // check_assignment() inside
    std::set<double> seen;
    for (const FrozenTrial& t : trials) seen.insert(std::get<double>(t.params.at("f")));
    distinct[crossover == Nsga2Crossover::kSbx] = seen.size();
  }
  EXPECT_GT(distinct[1], distinct[0] + 10) << distinct[0] << " " << distinct[1];
}

TEST(Nsga2Sampler, BeatsRandomOnZdt1) {
  // ZDT1 with 6 variables, 300 trials (6 generations of 50), 4 seeds, both crossovers.
  const SearchSpace space = zdt_space(6);
  const std::vector<double> reference = {1.1, 7.0};
  for (Nsga2Crossover crossover : {Nsga2Crossover::kUniform, Nsga2Crossover::kSbx}) {
    int wins = 0;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      Nsga2Options o;
      o.crossover = crossover;
      Nsga2Sampler nsga2(o);
      RandomSampler random;
      wins += trials_hypervolume(optimize_multi(nsga2, space, seed, 300, zdt1), reference) >
              trials_hypervolume(optimize_multi(random, space, seed, 300, zdt1), reference);
    }
    EXPECT_EQ(wins, 4) << (crossover == Nsga2Crossover::kSbx ? "sbx" : "uniform");
  }
}

TEST(Nsga2Sampler, ConstraintsDrawTrialsIntoTheFeasibleRegion) {
  // ZDT1 with mean(x1, x2, x3) >= 0.5 required (its front, at x1 = x2 = x3 = 0, is not).
  const SearchSpace space = zdt_space(4);
  const auto constraint = multi_objective_test::zdt_mean_constraint;
  int feasible = 0, feasible_ignored = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    Nsga2Options o;
    o.population_size = 20;
    Nsga2Sampler constrained(o), ignoring(o);
    auto a = optimize_multi(constrained, space, seed, 160, zdt1, kTwo, constraint);
    auto b = optimize_multi(ignoring, space, seed, 160, zdt1);
    for (int i = 120; i < 160; ++i) {
      feasible += is_feasible(a[static_cast<size_t>(i)]);
      feasible_ignored += constraint(b[static_cast<size_t>(i)].params) <= 0;
    }
  }
  // Of the last 40 trials of 3 seeds (120): 75 and 5 (the parents crowd at the boundary, and
  // about half their children cross it).
  EXPECT_GE(feasible, 60) << "ignoring the constraint: " << feasible_ignored;
  EXPECT_LE(feasible_ignored, 25);
}

TEST(Nsga2Sampler, SameRngSameValuesAndConditionalSpaces) {
  SearchSpace space = zdt_space(3);
  space.add_categorical("kind", {std::string("a"), std::string("b")});
  space.add({"extra", FloatDistribution{0, 1}, Condition{"kind", {std::string("b")}}});
  Nsga2Options o;
  o.population_size = 6;
  o.crossover = Nsga2Crossover::kSbx;
  Nsga2Sampler a(o), b(o);
  auto objective = [](const Params& p) {
    std::vector<double> v = zdt1({{"x0", p.at("x0")}, {"x1", p.at("x1")}, {"x2", p.at("x2")}});
    if (p.contains("extra")) v[1] += std::get<double>(p.at("extra"));
    return v;
  };
  auto first = optimize_multi(a, space, 9, 40, objective);
  auto second = optimize_multi(b, space, 9, 40, objective);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(first[i].params, second[i].params) << i;
  // "extra" is not in every trial: never crossed, drawn at random when active.
  EXPECT_FALSE(a.relative_space(History{first, kTwo}).find("extra"));
  EXPECT_TRUE(a.relative_space(History{first, kTwo}).find("x0"));
}

TEST(Nsga2Sampler, OneObjective) {
  const SearchSpace space = zdt_space(3);
  Nsga2Options o;
  o.population_size = 10;
  Nsga2Sampler sampler(o);
  auto objective = [](const Params& p) {
    double s = 0.0;
    for (const auto& [name, v] : p) s += (std::get<double>(v) - 0.3) * (std::get<double>(v) - 0.3);
    return std::vector<double>{s};
  };
  auto trials = optimize_multi(sampler, space, 2, 100, objective, {StudyDirection::kMinimize});
  double first = INFINITY, last = INFINITY;
  for (int i = 0; i < 10; ++i) first = std::min(first, trials[static_cast<size_t>(i)].values[0]);
  for (int i = 0; i < 100; ++i) last = std::min(last, trials[static_cast<size_t>(i)].values[0]);
  EXPECT_LT(last, first);
}

TEST(Nsga2Sampler, RejectsBadOptions) {
  auto make = [](auto change) {
    Nsga2Options o;
    change(o);
    return Nsga2Sampler(o);
  };
  EXPECT_THROW(make([](Nsga2Options& o) { o.population_size = 1; }), Error);
  EXPECT_THROW(make([](Nsga2Options& o) { o.crossover_prob = 1.5; }), Error);
  EXPECT_THROW(make([](Nsga2Options& o) { o.swapping_prob = -0.1; }), Error);
  EXPECT_THROW(make([](Nsga2Options& o) { o.mutation_prob = 2.0; }), Error);
  EXPECT_THROW(make([](Nsga2Options& o) { o.sbx_eta = -1.0; }), Error);
  EXPECT_NO_THROW(make([](Nsga2Options&) {}));
}

}  // namespace
}  // namespace tuner
