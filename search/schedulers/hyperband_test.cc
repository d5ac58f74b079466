#include "search/schedulers/hyperband.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "search/schedulers/scheduler_test_util.h"
#include "trials/error.h"

namespace tuner {
namespace {

using scheduler_test::curve;
using scheduler_test::StudyFixture;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(HyperbandTest, CountsBracketsExactly) {
  // floor(log_3(27 / 1)) + 1 = 4.
  EXPECT_EQ(HyperbandScheduler({.max_resource = 27}).n_brackets(), 4);
  EXPECT_EQ(HyperbandScheduler({.max_resource = 26}).n_brackets(), 3);
  EXPECT_EQ(HyperbandScheduler({.max_resource = 81}).n_brackets(), 5);
  // 243 = 3^5 exactly (a floating-point log_3 gives 4.999...): 6 brackets.
  EXPECT_EQ(HyperbandScheduler({.max_resource = 243}).n_brackets(), 6);
  EXPECT_EQ(HyperbandScheduler({.min_resource = 2, .max_resource = 18}).n_brackets(), 3);
  EXPECT_EQ(HyperbandScheduler({.max_resource = 2}).n_brackets(), 1);
  EXPECT_EQ(HyperbandScheduler({.max_resource = 100, .reduction_factor = 2}).n_brackets(), 7);
}

TEST(HyperbandTest, BracketsAreSuccessiveHalvingWithIncreasingEarlyStoppingRate) {
  HyperbandScheduler hyperband({.max_resource = 27});
  EXPECT_THAT(hyperband.bracket(0).rungs(), ElementsAre(1, 3, 9));
  EXPECT_THAT(hyperband.bracket(1).rungs(), ElementsAre(3, 9));
  EXPECT_THAT(hyperband.bracket(2).rungs(), ElementsAre(9));
  EXPECT_THAT(hyperband.bracket(3).rungs(), ElementsAre());  // runs every trial to 27
  // Budgets ceil(4 * 3^s / (s + 1)) for s = 3, 2, 1, 0: 27, 12, 6, 4.
  EXPECT_EQ(hyperband.budget(0), 27);
  EXPECT_EQ(hyperband.budget(1), 12);
  EXPECT_EQ(hyperband.budget(2), 6);
  EXPECT_EQ(hyperband.budget(3), 4);
}

TEST(HyperbandTest, BracketAssignmentIsPinned) {
  // T = 49 and the stride is 30 (nearest 49 * 0.618 = 30.3, coprime with 49); trial i goes to
  // position 30 * i mod 49: 0, 30, 11, 41, 22, 3, 33, 14, 44, 25, 6, 36, 17, 47, and bracket
  // b holds positions [0, 27), [27, 39), [39, 45), [45, 49). Stored studies rely on this
  // assignment: changing it changes the decisions of resumed studies.
  HyperbandScheduler hyperband({.max_resource = 27});
  std::vector<int> first;
  for (int i = 0; i < 14; ++i) first.push_back(hyperband.bracket_of(i));
  EXPECT_THAT(first, ElementsAre(0, 1, 0, 2, 0, 0, 1, 0, 2, 0, 0, 1, 0, 3));
}

TEST(HyperbandTest, BracketAssignmentIsDeterministicAndBalanced) {
  for (const HyperbandOptions& options :
       {HyperbandOptions{.max_resource = 27}, HyperbandOptions{.max_resource = 81},
        HyperbandOptions{.min_resource = 2, .max_resource = 1000, .reduction_factor = 2},
        HyperbandOptions{.max_resource = 5, .reduction_factor = 4}}) {
    HyperbandScheduler a(options);
    HyperbandScheduler b(options);
    int64_t total = 0;
    for (int k = 0; k < a.n_brackets(); ++k) total += a.budget(k);
    // Any `total` consecutive trial numbers hold exactly budget(k) trials of bracket k.
    for (int start : {0, 1, 17, 1000003}) {
      std::vector<int64_t> counts(static_cast<size_t>(a.n_brackets()), 0);
      for (int i = start; i < start + total; ++i) {
        const int bracket = a.bracket_of(i);
        ASSERT_EQ(bracket, b.bracket_of(i)) << "trial " << i;
        ASSERT_GE(bracket, 0);
        ASSERT_LT(bracket, a.n_brackets());
        ++counts[static_cast<size_t>(bracket)];
      }
      for (int k = 0; k < a.n_brackets(); ++k) {
        EXPECT_EQ(counts[static_cast<size_t>(k)], a.budget(k))
            << "bracket " << k << ", max_resource " << options.max_resource;
      }
    }
  }
}

TEST(HyperbandTest, TrialsCompeteOnlyWithinTheirBracket) {
  HyperbandScheduler hyperband({.max_resource = 27});
  ASSERT_EQ(hyperband.bracket_of(0), 0);
  ASSERT_EQ(hyperband.bracket_of(1), 1);
  ASSERT_EQ(hyperband.bracket_of(2), 0);
  StudyFixture study;
  study.complete(curve({20}));  // trial 0, bracket 0
  study.complete(curve({1}));   // trial 1, bracket 1
  // Trial 2, bracket 0.
  const FrozenTrial current = study.next_running(curve({10}));
  // In bracket 0, rung 1 holds {20, 10}: 10 is the best: continue. Plain ASHA over the whole
  // study would see {20, 1, 10} and stop it.
  EXPECT_EQ(hyperband.on_report(current, 1, study.history()), Decision::kContinue);
  EXPECT_EQ(AshaScheduler().on_report(current, 1, study.history()), Decision::kStop);
  // In bracket 0, a worse trial 4 stops: trials 0, 2 (now stored) and 4 at rung 1 are
  // {20, 10, 15}: the bar is the best, 10.
  ASSERT_EQ(hyperband.bracket_of(4), 0);
  study.complete(curve({10}));                  // trial 2
  study.add(TrialState::kRunning, curve({0}));  // trial 3, bracket 2
  EXPECT_EQ(hyperband.on_report(study.next_running(curve({15})), 1, study.history()),
            Decision::kStop);
}

TEST(HyperbandTest, BracketsStopLaterAndTheLastNever) {
  HyperbandScheduler hyperband({.max_resource = 27});
  StudyFixture study;
  for (int i = 0; i < 14; ++i) study.complete(curve(std::vector<double>(27, 1.0)));
  // Trial 14 onwards report 100 at every step: far worse than everyone.
  const std::vector<double> bad(27, 100.0);
  auto first_stop = [&](int number) -> int64_t {
    const FrozenTrial trial = scheduler_test::make_trial(number, TrialState::kRunning, curve(bad));
    for (int64_t step = 1; step <= 27; ++step) {
      if (hyperband.on_report(trial, step, study.history()) == Decision::kStop) return step;
    }
    return -1;
  };
  // Trial 14 is at position 14 * 30 mod 49 = 28: bracket 1, first rung 3.
  ASSERT_EQ(hyperband.bracket_of(14), 1);
  EXPECT_EQ(first_stop(14), 3);
  // Trial 15 (position 9): bracket 0, first rung 1.
  ASSERT_EQ(hyperband.bracket_of(15), 0);
  EXPECT_EQ(first_stop(15), 1);
  // Trial 13's bracket 3 has no rung below 27: never stopped. Check it as a new trial 62
  // (62 = 13 + 49, the same position).
  ASSERT_EQ(hyperband.bracket_of(62), 3);
  EXPECT_EQ(first_stop(62), -1);
}

TEST(HyperbandTest, RejectsInvalidOptions) {
  auto message_of = [](const HyperbandOptions& options) {
    return scheduler_test::construction_error<HyperbandScheduler>(options);
  };
  EXPECT_THAT(message_of({}), HasSubstr("hyperband.max_resource: required"));
  EXPECT_THAT(message_of({.min_resource = 5, .max_resource = 5}),
              HasSubstr("hyperband.max_resource: required, must be > min_resource (5)"));
  EXPECT_THAT(message_of({.min_resource = 0, .max_resource = 5}),
              HasSubstr("hyperband.min_resource: must be >= 1"));
  EXPECT_THAT(message_of({.max_resource = 5, .reduction_factor = 1}),
              HasSubstr("hyperband.reduction_factor: must be >= 2"));
  EXPECT_THAT(message_of({.max_resource = 5, .bootstrap_count = -1}),
              HasSubstr("hyperband.bootstrap_count: must be >= 0"));
  EXPECT_THAT(
      message_of({.max_resource = std::numeric_limits<int64_t>::max(), .reduction_factor = 2}),
      HasSubstr("hyperband.max_resource: max_resource / min_resource"));
  EXPECT_EQ(message_of({.max_resource = 1'000'000'000, .reduction_factor = 2}), "no error");
}

}  // namespace
}  // namespace tuner
