#include "search/schedulers/pbt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "search/schedulers/scheduler_test_util.h"
#include "trials/error.h"

namespace tuner {
namespace {

using scheduler_test::curve;

constexpr int64_t kInterval = 2;

PbtOptions options(int population = 4) {
  return PbtOptions{.population_size = population, .perturbation_interval = kInterval, .seed = 7};
}

// A population's segment trials, numbered in the order they are added.
class Population {
 public:
  explicit Population(StudyDirection direction = StudyDirection::kMinimize)
      : directions_{direction} {}

  // A segment trial of `member`: `state`, its values at the segment's steps (a COMPLETE one's
  // value is its last), params lr (float in [1e-4, 1]) and width (int in [8, 64] step 8).
  int add(int member, int segment, TrialState state, std::vector<double> values,
          std::optional<int> parent = std::nullopt, double lr = 0.1, int64_t width = 32) {
    FrozenTrial t = scheduler_test::make_trial(static_cast<int>(trials_.size()), state,
                                               curve(values, segment * kInterval + 1));
    for (auto& [key, json] :
         pbt_attrs(PbtLineage{.member = member, .segment = segment, .parent = parent})) {
      t.system_attrs[key] = json;
    }
    t.params = {{"lr", lr}, {"width", width}, {"opt", std::string("adam")}};
    t.distributions = {
        {"lr", FloatDistribution{.low = 1e-4, .high = 1.0, .log = true}},
        {"width", IntDistribution{.low = 8, .high = 64, .step = 8}},
        {"opt", CategoricalDistribution{
                    .choices = {std::string("sgd"), std::string("adam"), std::string("rmsprop")}}}};
    trials_.push_back(std::move(t));
    return trials_.back().number;
  }
  History history() const { return History{trials_, directions_}; }

 private:
  std::vector<FrozenTrial> trials_;
  std::vector<StudyDirection> directions_;
};

const PbtNextSegment* of_member(const std::vector<PbtNextSegment>& next, int member) {
  for (const PbtNextSegment& s : next) {
    if (s.lineage.member == member) return &s;
  }
  return nullptr;
}

TEST(Pbt, OptionsOutOfRangeNameTheOption) {
  auto message = [](PbtOptions o) {
    try {
      PbtScheduler scheduler(o);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  PbtOptions o = options();
  o.population_size = 1;
  EXPECT_NE(message(o).find("pbt.population_size"), std::string::npos);
  o = options();
  o.perturbation_interval = 0;
  EXPECT_NE(message(o).find("pbt.perturbation_interval"), std::string::npos);
  o = options();
  o.quantile = 0.6;
  EXPECT_NE(message(o).find("pbt.quantile"), std::string::npos);
  o = options();
  o.resample_probability = 1.5;
  EXPECT_NE(message(o).find("pbt.resample_probability"), std::string::npos);
  o = options();
  o.perturbation_factors = {1.2, -1};
  EXPECT_NE(message(o).find("pbt.perturbation_factors[1]"), std::string::npos);
  o = options();
  o.max_steps = 0;
  EXPECT_NE(message(o).find("pbt.max_steps"), std::string::npos);
  EXPECT_EQ(message(options()), "accepted");
}

TEST(Pbt, PausesASegmentAtItsEnd) {
  PbtOptions o = options();
  o.max_steps = 5;
  PbtScheduler pbt(o);
  Population p;
  p.add(0, 0, TrialState::kRunning, {1.0});
  p.add(0, 2, TrialState::kRunning, {1.0});
  const History h = p.history();
  EXPECT_EQ(pbt.on_report(h.trials[0], 1, h), Decision::kContinue);
  EXPECT_EQ(pbt.on_report(h.trials[0], 2, h), Decision::kPause);
  EXPECT_EQ(pbt.on_report(h.trials[0], 3, h), Decision::kPause);  // a report past the end
  EXPECT_EQ(pbt.segment_end(2), 5);                               // max_steps comes first
  EXPECT_EQ(pbt.on_report(h.trials[1], 5, h), Decision::kPause);
  FrozenTrial plain = scheduler_test::make_trial(9, TrialState::kRunning, curve({1.0}));
  EXPECT_EQ(pbt.on_report(plain, 100, h), Decision::kContinue);
}

TEST(Pbt, LineageRoundTripsThroughItsAttributes) {
  FrozenTrial t;
  for (auto& [key, json] : pbt_attrs(PbtLineage{.member = 3, .segment = 2, .parent = 11})) {
    t.system_attrs[key] = json;
  }
  EXPECT_EQ(t.system_attrs.at(kPbtParentAttr), "11");
  EXPECT_EQ(pbt_lineage(t), (PbtLineage{.member = 3, .segment = 2, .parent = 11}));
  t.system_attrs[kPbtSegmentAttr] = "\"two\"";
  EXPECT_FALSE(pbt_lineage(t));
}

// Four members finished segment 0 (minimize): 0 best, 3 worst. Asynchronously the one at the
// end is decided at once; with quantile 0.25, q = 1: member 3 exploits member 0.
TEST(Pbt, BottomMemberExploitsATopMember) {
  PbtScheduler pbt(options());
  Population p;
  const int best = p.add(0, 0, TrialState::kComplete, {0.5, 0.1}, std::nullopt, 0.5);
  p.add(1, 0, TrialState::kComplete, {0.5, 0.2});
  p.add(2, 0, TrialState::kComplete, {0.5, 0.3});
  p.add(3, 0, TrialState::kComplete, {0.9, 0.8}, std::nullopt, 0.001);
  const std::vector<PbtNextSegment> next = pbt.next_segments(p.history());
  ASSERT_EQ(next.size(), 4u);
  const PbtNextSegment* worst = of_member(next, 3);
  ASSERT_NE(worst, nullptr);
  EXPECT_TRUE(worst->exploited);
  EXPECT_EQ(worst->lineage.parent, best);
  EXPECT_EQ(worst->lineage.segment, 1);
  // Explored from the top member's lr 0.5: perturbed by 0.8 or 1.2, or resampled in bounds.
  const double lr = std::get<double>(worst->params.at("lr"));
  EXPECT_NE(lr, 0.001);
  EXPECT_GE(lr, 1e-4);
  EXPECT_LE(lr, 1.0);
  // The others continue from their own checkpoints with their own params.
  for (int member : {0, 1, 2}) {
    const PbtNextSegment* s = of_member(next, member);
    ASSERT_NE(s, nullptr);
    EXPECT_FALSE(s->exploited);
    EXPECT_EQ(s->lineage.parent, member);
  }
  EXPECT_EQ(std::get<double>(of_member(next, 0)->params.at("lr")), 0.5);
}

TEST(Pbt, MaximizeRanksTheHighestFirst) {
  PbtScheduler pbt(options());
  Population p(StudyDirection::kMaximize);
  p.add(0, 0, TrialState::kComplete, {0.5, 0.1});
  p.add(1, 0, TrialState::kComplete, {0.5, 0.2});
  p.add(2, 0, TrialState::kComplete, {0.5, 0.3});
  const int best = p.add(3, 0, TrialState::kComplete, {0.9, 0.8});
  const std::vector<PbtNextSegment> next = pbt.next_segments(p.history());
  ASSERT_NE(of_member(next, 0), nullptr);
  EXPECT_TRUE(of_member(next, 0)->exploited);
  EXPECT_EQ(of_member(next, 0)->lineage.parent, best);
  EXPECT_FALSE(of_member(next, 3)->exploited);
}

TEST(Pbt, NothingIsDueWhileSegmentsRunOrHaveANextOne) {
  PbtScheduler pbt(options());
  Population p;
  p.add(0, 0, TrialState::kRunning, {0.5});
  const int done = p.add(1, 0, TrialState::kComplete, {0.5, 0.2});
  p.add(1, 1, TrialState::kWaiting, {}, done);
  p.add(2, 0, TrialState::kComplete, {0.5});  // ended by itself before the segment's end
  p.add(3, 0, TrialState::kPruned, {0.5, 0.4});
  EXPECT_TRUE(pbt.next_segments(p.history()).empty());
}

TEST(Pbt, AsynchronousDecidesEachMemberAsItArrives) {
  PbtScheduler pbt(options());
  Population p;
  p.add(0, 0, TrialState::kComplete, {0.5, 0.1});
  p.add(1, 0, TrialState::kRunning, {0.5});
  p.add(2, 0, TrialState::kComplete, {0.5, 0.9});
  p.add(3, 0, TrialState::kRunning, {0.5});
  const std::vector<PbtNextSegment> next = pbt.next_segments(p.history());
  ASSERT_EQ(next.size(), 2u);
  // Two ranked members: q = 1; member 2 is the bottom one.
  EXPECT_TRUE(of_member(next, 2)->exploited);
  EXPECT_EQ(of_member(next, 2)->lineage.parent, 0);
  EXPECT_FALSE(of_member(next, 0)->exploited);
}

// Member 1 ends segment 1 while member 0 is ahead (segment 2 running) and member 2 is behind
// (segment 0 done only): it is ranked against the segment 1 trials alone, and exploits member
// 0's segment 1 trial, a checkpoint at the same step.
TEST(Pbt, AsynchronousRanksAtTheSameSegmentEnd) {
  PbtScheduler pbt(options());
  Population p;
  const int a0 = p.add(0, 0, TrialState::kComplete, {0.5, 0.1});
  p.add(1, 0, TrialState::kComplete, {0.5, 0.2});
  p.add(2, 0, TrialState::kComplete, {0.5, 0.01});  // the best at step 2, not at step 4
  const int a1 = p.add(0, 1, TrialState::kComplete, {0.1, 0.05}, a0);
  p.add(0, 2, TrialState::kRunning, {0.04}, a1);
  p.add(1, 1, TrialState::kComplete, {0.2, 0.3}, 1);
  p.add(2, 1, TrialState::kRunning, {0.01}, 2);
  const std::vector<PbtNextSegment> next = pbt.next_segments(p.history());
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].lineage.member, 1);
  EXPECT_EQ(next[0].lineage.segment, 2);
  EXPECT_TRUE(next[0].exploited);
  EXPECT_EQ(next[0].lineage.parent, a1);
}

TEST(Pbt, SynchronousWaitsForEveryLiveMember) {
  PbtOptions o = options();
  o.synchronous = true;
  PbtScheduler pbt(o);
  Population p;
  p.add(0, 0, TrialState::kComplete, {0.5, 0.1});
  p.add(1, 0, TrialState::kComplete, {0.5, 0.2});
  p.add(2, 0, TrialState::kComplete, {0.5, 0.9});
  EXPECT_TRUE(pbt.next_segments(p.history()).empty());  // member 3 not started yet
  p.add(3, 0, TrialState::kRunning, {0.5});
  EXPECT_TRUE(pbt.next_segments(p.history()).empty());  // member 3 still running

  Population q;
  q.add(0, 0, TrialState::kComplete, {0.5, 0.1});
  q.add(1, 0, TrialState::kComplete, {0.5, 0.2});
  q.add(2, 0, TrialState::kComplete, {0.5, 0.9});
  q.add(3, 0, TrialState::kFail, {0.5});  // ended: it does not hold the others back
  const std::vector<PbtNextSegment> next = pbt.next_segments(q.history());
  ASSERT_EQ(next.size(), 3u);
  // Three ranked: q = ceil(0.75) = 1: member 2 exploits member 0.
  EXPECT_TRUE(of_member(next, 2)->exploited);
  EXPECT_EQ(of_member(next, 2)->lineage.parent, 0);
}

TEST(Pbt, NoNextSegmentPastMaxSteps) {
  PbtOptions o = options();
  o.max_steps = 4;
  PbtScheduler pbt(o);
  Population p;
  p.add(0, 1, TrialState::kComplete, {0.5, 0.1});
  p.add(1, 1, TrialState::kComplete, {0.5, 0.2});
  EXPECT_TRUE(pbt.next_segments(p.history()).empty());
}

TEST(Pbt, ARerunTakesItsFailedAttemptsPlace) {
  PbtScheduler pbt(options());
  Population p;
  p.add(0, 0, TrialState::kComplete, {0.5, 0.1});
  p.add(1, 0, TrialState::kFail, {0.5});
  p.add(1, 0, TrialState::kRunning, {0.5});  // the re-run
  const std::vector<PbtNextSegment> next = pbt.next_segments(p.history());
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].lineage.member, 0);
}

TEST(Pbt, TheSameSeedDecidesTheSameAndAnotherMayNot) {
  Population p;
  for (int m = 0; m < 8; ++m) p.add(m, 0, TrialState::kComplete, {0.5, 0.1 * m}, std::nullopt, 0.5);
  std::set<std::vector<double>> seen;
  for (uint64_t seed : {1, 2, 3, 4}) {
    PbtOptions o = options(8);
    o.seed = seed;
    const std::vector<PbtNextSegment> a = PbtScheduler(o).next_segments(p.history());
    const std::vector<PbtNextSegment> b = PbtScheduler(o).next_segments(p.history());
    EXPECT_EQ(a, b);
    std::vector<double> lrs;
    for (const PbtNextSegment& s : a) lrs.push_back(std::get<double>(s.params.at("lr")));
    seen.insert(lrs);
  }
  EXPECT_GT(seen.size(), 1u);
}

TEST(Pbt, ExploreStaysInBoundsAndOnSteps) {
  PbtOptions o = options();
  o.resample_probability = 0;
  o.perturbation_factors = {0.5, 3.0};
  PbtScheduler pbt(o);
  const std::map<std::string, Distribution, std::less<>> distributions = {
      {"lr", FloatDistribution{.low = 0.25, .high = 1.0, .step = 0.25}},
      {"width", IntDistribution{.low = 8, .high = 64, .step = 8}},
      {"n", IntDistribution{.low = 1, .high = 4}}};
  Rng rng(3);
  std::set<int64_t> ns;
  for (int i = 0; i < 200; ++i) {
    const Params out =
        pbt.explore({{"lr", 0.75}, {"width", int64_t{56}}, {"n", int64_t{1}}, {"free", 2.5}},
                    distributions, rng);
    const double lr = std::get<double>(out.at("lr"));
    EXPECT_TRUE(lr == 0.5 || lr == 1.0) << lr;  // 0.375 rounds to the step 0.5; 2.25 clips to 1
    const int64_t width = std::get<int64_t>(out.at("width"));
    EXPECT_TRUE(width == 64 || width == 32) << width;  // 168 clips to 64; 28 rounds to 32
    ns.insert(std::get<int64_t>(out.at("n")));
    EXPECT_EQ(std::get<double>(out.at("free")), 2.5);  // no distribution: kept
  }
  // 1 * 0.5 rounds back to 1, which is the low end: it stays; 1 * 3 = 3.
  EXPECT_EQ(ns, (std::set<int64_t>{1, 3}));
}

TEST(Pbt, AnIntegerTheRoundingKeepsMovesOneStep) {
  PbtOptions o = options();
  o.resample_probability = 0;
  o.perturbation_factors = {1.2};
  PbtScheduler pbt(o);
  Rng rng(1);
  const Params out =
      pbt.explore({{"n", int64_t{2}}}, {{"n", IntDistribution{.low = 1, .high = 4}}}, rng);
  EXPECT_EQ(std::get<int64_t>(out.at("n")), 3);  // 2.4 rounds to 2: one step up instead
}

TEST(Pbt, ExploreMovesACategoricalToANeighbour) {
  PbtOptions o = options();
  o.resample_probability = 0;
  PbtScheduler pbt(o);
  const std::map<std::string, Distribution, std::less<>> distributions = {
      {"opt", CategoricalDistribution{
                  .choices = {std::string("sgd"), std::string("adam"), std::string("rmsprop")}}}};
  Rng rng(5);
  std::set<std::string> from_middle;
  for (int i = 0; i < 100; ++i) {
    from_middle.insert(std::get<std::string>(
        pbt.explore({{"opt", std::string("adam")}}, distributions, rng).at("opt")));
    EXPECT_EQ(std::get<std::string>(
                  pbt.explore({{"opt", std::string("sgd")}}, distributions, rng).at("opt")),
              "adam");
    EXPECT_EQ(std::get<std::string>(
                  pbt.explore({{"opt", std::string("rmsprop")}}, distributions, rng).at("opt")),
              "adam");
  }
  EXPECT_EQ(from_middle, (std::set<std::string>{"sgd", "rmsprop"}));
}

TEST(Pbt, ResampleDrawsFromTheWholeDistribution) {
  PbtOptions o = options();
  o.resample_probability = 1;
  PbtScheduler pbt(o);
  Rng rng(9);
  std::set<int64_t> seen;
  for (int i = 0; i < 200; ++i) {
    seen.insert(std::get<int64_t>(
        pbt.explore({{"n", int64_t{1}}}, {{"n", IntDistribution{.low = 1, .high = 8}}}, rng)
            .at("n")));
  }
  EXPECT_EQ(seen.size(), 8u);
}

// PB2. Eight members ran segment 0 at lrs spread over [1e-4, 1]; a segment improves most at lr
// 0.03 (gain(lr)). Member 0 (lr 0.5) is the best at the segment's end only because it started
// lower. The worst member exploits it: PBT perturbs lr 0.5 (or draws it again), PB2 moves it
// toward 0.03, where the segments improved most.
double gain(double lr) {
  const double d = std::log10(lr) - std::log10(0.03);
  return std::exp(-d * d);
}

Population lr_population() {
  Population p;
  p.add(0, 0, TrialState::kComplete, {0.5, 0.45}, std::nullopt, 0.5);
  for (double lr : {1e-4, 4e-4, 2e-3, 0.01, 0.03, 0.1, 0.3}) {
    p.add(PbtScheduler::members(p.history()), 0, TrialState::kComplete, {1.0, 1.0 - 0.5 * gain(lr)},
          std::nullopt, lr);
  }
  return p;
}

TEST(Pbt, Pb2MovesTowardWhereSegmentsImprovedMoreThanPerturbing) {
  const Population p = lr_population();
  auto distance = [&](PbtExplore explore, uint64_t seed) {
    PbtOptions o = options(8);
    o.quantile = 0.125;
    o.explore = explore;
    o.seed = seed;
    const std::vector<PbtNextSegment> next = PbtScheduler(o).next_segments(p.history());
    const PbtNextSegment* worst = of_member(next, 1);  // lr 1e-4
    EXPECT_TRUE(worst && worst->exploited && worst->lineage.parent == 0);
    if (!worst) return 0.0;
    return std::abs(std::log10(std::get<double>(worst->params.at("lr"))) - std::log10(0.03));
  };
  double pbt = 0, pb2 = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const double bandit = distance(PbtExplore::kBandit, seed);
    EXPECT_LT(bandit, 0.5) << "seed " << seed;  // within a factor of 3 of lr 0.03
    pb2 += bandit;
    pbt += distance(PbtExplore::kPerturb, seed);
  }
  EXPECT_LT(pb2, pbt / 2);
}

TEST(Pbt, Pb2TheSameTrialsAndSeedDecideTheSame) {
  const Population p = lr_population();
  PbtOptions o = options(8);
  o.explore = PbtExplore::kBandit;
  o.synchronous = true;
  const std::vector<PbtNextSegment> a = PbtScheduler(o).next_segments(p.history());
  const std::vector<PbtNextSegment> b = PbtScheduler(o).next_segments(p.history());
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(a, b);
  // Two members exploit in the round (q = 2); the second sees the first pending.
  std::vector<const PbtNextSegment*> exploited;
  for (const PbtNextSegment& s : a) {
    if (s.exploited) exploited.push_back(&s);
  }
  ASSERT_EQ(exploited.size(), 2u);
  EXPECT_NE(exploited[0]->params.at("lr"), exploited[1]->params.at("lr"));
}

TEST(Pbt, Pb2WithoutObservationsExploresAsPbt) {
  // Segments of one report each: no improvement to learn from, so PB2 perturbs as PBT does.
  PbtOptions o = options();
  o.perturbation_interval = 1;
  o.explore = PbtExplore::kBandit;
  PbtOptions perturb = o;
  perturb.explore = PbtExplore::kPerturb;
  Population p;
  p.add(0, 0, TrialState::kComplete, {0.1});
  p.add(1, 0, TrialState::kComplete, {0.2});
  p.add(2, 0, TrialState::kComplete, {0.3});
  p.add(3, 0, TrialState::kComplete, {0.4});
  EXPECT_EQ(PbtScheduler(o).next_segments(p.history()),
            PbtScheduler(perturb).next_segments(p.history()));
}

TEST(Pbt, Pb2KappaOutOfRangeNamesPb2) {
  PbtOptions o = options();
  o.explore = PbtExplore::kBandit;
  o.kappa = -1;
  try {
    PbtScheduler scheduler(o);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pb2.kappa"), std::string::npos) << e.what();
  }
}

TEST(Pbt, MembersCountsTheHighestMemberIndex) {
  Population p;
  EXPECT_EQ(PbtScheduler::members(p.history()), 0);
  p.add(0, 0, TrialState::kComplete, {0.5});
  p.add(2, 0, TrialState::kRunning, {0.5});
  EXPECT_EQ(PbtScheduler::members(p.history()), 3);
}

}  // namespace
}  // namespace tuner
