#include "search/samplers/grid_sampler.h"

#include <gtest/gtest.h>

#include <set>

#include "trials/error.h"

namespace tuner {
namespace {

SearchSpace conditional_space() {
  SearchSpace s;
  s.add_categorical("opt", {std::string("sgd"), std::string("adam")});
  s.add({"momentum", FloatDistribution{0.0, 0.9, false, 0.45},
         Condition{"opt", {std::string("sgd")}}});
  s.add_int("layers", 1, 3);
  return s;
}

FrozenTrial trial_with(int number, TrialState state, const Params& params) {
  FrozenTrial t;
  t.number = number;
  t.state = state;
  t.params = params;
  return t;
}

TEST(GridSampler, EnumeratesOnlyActiveCombinations) {
  GridSampler grid(conditional_space());
  // sgd: 3 momentum values x 3 layers; adam: 3 layers.
  EXPECT_EQ(grid.size(), 12u);
  std::set<std::string> distinct;
  for (const Params& p : grid.points()) {
    conditional_space().check_assignment(p);
    std::string key;
    for (const auto& [k, v] : p) key += k + "=" + to_string(v) + ";";
    distinct.insert(key);
  }
  EXPECT_EQ(distinct.size(), 12u);
}

TEST(GridSampler, RejectsParametersWithoutAGrid) {
  SearchSpace s;
  s.add_float("lr", 1e-3, 1.0, true);
  try {
    GridSampler grid(s);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "grid: parameter 'lr' float[0.001, 1.0, log] cannot be enumerated: give the float a step");
  }
}

TEST(GridSampler, NeverRepeatsAPointTakenByAnyTrialAndReportsExhaustion) {
  SearchSpace s;
  s.add_int("a", 0, 2);
  s.add_categorical("b", {true, false});
  GridSampler grid(s);
  std::vector<FrozenTrial> trials;
  std::vector<StudyDirection> directions{StudyDirection::kMinimize};
  std::set<std::pair<int64_t, bool>> seen;
  for (int n = 0; n < 6; ++n) {
    History history{trials, directions};
    ASSERT_FALSE(grid.exhausted(history));
    Rng rng = Rng::for_trial(7, n);
    Params p = grid.sample(s, history, TrialContext{n}, rng);
    EXPECT_TRUE(seen.insert({std::get<int64_t>(p.at("a")), std::get<bool>(p.at("b"))}).second);
    // Alternate RUNNING and FAIL: both hold their point.
    trials.push_back(trial_with(n, n % 2 ? TrialState::kRunning : TrialState::kFail, p));
  }
  History history{trials, directions};
  EXPECT_TRUE(grid.exhausted(history));
  Rng rng(1);
  EXPECT_THROW(grid.sample(s, history, TrialContext{6}, rng), Error);
}

TEST(GridSampler, SameSeedSameOrder) {
  GridSampler grid(conditional_space());
  std::vector<StudyDirection> directions{StudyDirection::kMinimize};
  auto order = [&](uint64_t seed) {
    std::vector<FrozenTrial> trials;
    std::vector<Params> out;
    for (int n = 0; n < 12; ++n) {
      Rng rng = Rng::for_trial(seed, n);
      out.push_back(grid.sample(grid.space(), History{trials, directions}, TrialContext{n}, rng));
      trials.push_back(trial_with(n, TrialState::kComplete, out.back()));
    }
    return out;
  };
  EXPECT_EQ(order(3), order(3));
  EXPECT_NE(order(3), order(4));
}

}  // namespace
}  // namespace tuner
