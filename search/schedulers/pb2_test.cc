#include "search/schedulers/pb2.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <string>
#include <vector>

namespace tuner {
namespace {

using Distributions = std::map<std::string, Distribution, std::less<>>;

// The improvement per step of a segment trained at `lr`: largest at lr = 0.03, in log space.
double gain(double lr) {
  const double d = std::log10(lr) - std::log10(0.03);
  return std::exp(-d * d);
}

// Observations of segments at lrs spread over [1e-4, 1] (log), all from the same start, with
// the improvement gain(lr); `params` keeps their params alive.
std::vector<Pb2Observation> observe(std::deque<Params>& params, const std::string& extra = "") {
  std::vector<Pb2Observation> out;
  for (int i = 0; i < 9; ++i) {
    const double lr = std::pow(10.0, -4.0 + 0.5 * i);
    params.push_back({{"lr", lr}});
    if (!extra.empty()) params.back()[extra] = std::string("a");
    out.push_back({.start_step = 2, .gain_per_step = gain(lr), .params = &params.back()});
  }
  return out;
}

const Distributions kLr = {{"lr", FloatDistribution{.low = 1e-4, .high = 1.0, .log = true}}};

TEST(Pb2, ChoosesWhereTheSegmentsImprovedMost) {
  std::deque<Params> kept;
  const std::vector<Pb2Observation> observations = observe(kept);
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    Rng rng(seed);
    const std::optional<Params> out = pb2_select(observations, {}, 4, {{"lr", 0.5}}, kLr, 0.1, rng);
    ASSERT_TRUE(out);
    const double lr = std::get<double>(out->at("lr"));
    EXPECT_GT(lr, 0.01) << seed;  // within a factor 3 of the best, from 0.5
    EXPECT_LT(lr, 0.1) << seed;
  }
}

TEST(Pb2, PendingSegmentsSpreadARound) {
  std::deque<Params> kept;
  const std::vector<Pb2Observation> observations = observe(kept);
  Rng a(3);
  const Params first = *pb2_select(observations, {}, 4, {{"lr", 0.5}}, kLr, 2.0, a);
  // The same choice with the first one pending: the variance there is gone, so it goes elsewhere.
  Rng b(3);
  const std::vector<const Params*> pending = {&first};
  const Params second = *pb2_select(observations, pending, 4, {{"lr", 0.5}}, kLr, 2.0, b);
  Rng c(3);
  EXPECT_EQ(*pb2_select(observations, {}, 4, {{"lr", 0.5}}, kLr, 2.0, c),
            first);  // the same inputs and Rng: the same choice
  EXPECT_NE(std::get<double>(second.at("lr")), std::get<double>(first.at("lr")));
}

TEST(Pb2, StaysOnStepsAndBoundsAndLeavesTheRestAlone) {
  std::deque<Params> kept;
  std::vector<Pb2Observation> observations;
  for (int i = 0; i < 12; ++i) {
    kept.push_back({{"width", int64_t{8 * (1 + i % 8)}},
                    {"drop", 0.25 * (i % 3)},
                    {"n", int64_t{1 << (i % 5)}},
                    {"opt", std::string("sgd")}});
    observations.push_back(
        {.start_step = 2 * (i / 4), .gain_per_step = 0.01 * i, .params = &kept.back()});
  }
  const Distributions distributions = {
      {"width", IntDistribution{.low = 8, .high = 64, .step = 8}},
      {"drop", FloatDistribution{.low = 0.0, .high = 0.5, .step = 0.25}},
      {"n", IntDistribution{.low = 1, .high = 16, .log = true}},
      {"opt", CategoricalDistribution{.choices = {std::string("sgd"), std::string("adam")}}},
      {"one", FloatDistribution{.low = 1.0, .high = 1.0}}};
  const Params given = {{"width", int64_t{32}},
                        {"drop", 0.25},
                        {"n", int64_t{4}},
                        {"opt", std::string("adam")},
                        {"one", 1.0}};
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    Rng rng(seed);
    const std::optional<Params> out =
        pb2_select(observations, {}, 6, given, distributions, 1.0, rng);
    ASSERT_TRUE(out);
    const int64_t width = std::get<int64_t>(out->at("width"));
    EXPECT_TRUE(width >= 8 && width <= 64 && width % 8 == 0) << width;
    const double drop = std::get<double>(out->at("drop"));
    EXPECT_TRUE(drop == 0.0 || drop == 0.25 || drop == 0.5) << drop;
    const int64_t n = std::get<int64_t>(out->at("n"));
    EXPECT_TRUE(n >= 1 && n <= 16) << n;
    EXPECT_EQ(out->at("opt"), given.at("opt"));  // not the bandit's
    EXPECT_EQ(out->at("one"), given.at("one"));
  }
}

TEST(Pb2, NothingToChooseOrTooFewObservations) {
  std::deque<Params> kept;
  const std::vector<Pb2Observation> observations = observe(kept);
  Rng rng(1);
  const Distributions categorical = {
      {"opt", CategoricalDistribution{.choices = {std::string("sgd"), std::string("adam")}}}};
  EXPECT_FALSE(
      pb2_select(observations, {}, 4, {{"opt", std::string("sgd")}}, categorical, 1.0, rng));
  EXPECT_FALSE(pb2_select(std::span(observations).first(1), {}, 4, {{"lr", 0.5}}, kLr, 1.0, rng));
  // Observations without the param do not count.
  Params other = {{"momentum", 0.9}};
  std::vector<Pb2Observation> without = {{.start_step = 0, .gain_per_step = 0.1, .params = &other},
                                         {.start_step = 0, .gain_per_step = 0.2, .params = &other}};
  EXPECT_FALSE(pb2_select(without, {}, 4, {{"lr", 0.5}}, kLr, 1.0, rng));
}

TEST(Pb2, AModelChoosesForEachMemberAsPb2SelectDoes) {
  std::deque<Params> kept;
  const std::vector<Pb2Observation> observations = observe(kept);
  Rng fit_rng(5);
  std::optional<Pb2Model> model = Pb2Model::fit(observations, 4, {{"lr", 0.5}}, kLr, fit_rng);
  kept.clear();  // the model keeps what it needs of the observations
  ASSERT_TRUE(model);
  // pb2_select() is fit() then select() on one Rng: the same fit and draws, the same choice.
  std::deque<Params> again;
  const std::vector<Pb2Observation> same = observe(again);
  Rng a(5);
  const Params first = *pb2_select(same, {}, 4, {{"lr", 0.5}}, kLr, 2.0, a);
  Rng b(5);
  std::optional<Pb2Model> refit = Pb2Model::fit(same, 4, {{"lr", 0.5}}, kLr, b);
  ASSERT_TRUE(refit);
  EXPECT_EQ(refit->select({}, {{"lr", 0.5}}, 2.0, b), first);
  // One fit serves several members, each with its own draws and the earlier ones pending.
  Rng m1(1), m2(2);
  const Params one = *model->select({}, {{"lr", 0.5}}, 2.0, m1);
  const std::vector<const Params*> pending = {&one};
  const Params two = *model->select(pending, {{"lr", 0.2}}, 2.0, m2);
  EXPECT_NE(std::get<double>(two.at("lr")), std::get<double>(one.at("lr")));
  Rng m1_again(1);
  EXPECT_EQ(model->select({}, {{"lr", 0.5}}, 2.0, m1_again), one);  // the fit is not changed
}

TEST(Pb2, AModelFitsItsStartStepAndBanditParamsOnly) {
  std::deque<Params> kept;
  const std::vector<Pb2Observation> observations = observe(kept, "opt");
  const Distributions with_opt = {
      {"lr", FloatDistribution{.low = 1e-4, .high = 1.0, .log = true}},
      {"opt", CategoricalDistribution{.choices = {std::string("a"), std::string("b")}}}};
  Rng rng(1);
  const Params params = {{"lr", 0.5}, {"opt", std::string("a")}};
  std::optional<Pb2Model> model = Pb2Model::fit(observations, 4, params, with_opt, rng);
  ASSERT_TRUE(model);
  EXPECT_TRUE(model->fits(4, params, with_opt));
  EXPECT_TRUE(model->fits(4, {{"lr", 0.1}, {"opt", std::string("b")}}, with_opt));  // values
  EXPECT_TRUE(model->fits(4, {{"lr", 0.1}}, kLr));  // the categorical is not the bandit's
  EXPECT_FALSE(model->fits(6, params, with_opt));   // another start step
  EXPECT_FALSE(model->fits(4, {{"lr", 0.1}},
                           {{"lr", FloatDistribution{.low = 1e-3, .high = 1.0, .log = true}}}));
  EXPECT_FALSE(model->fits(4, {{"lr", 0.1}, {"w", int64_t{2}}},
                           {{"lr", FloatDistribution{.low = 1e-4, .high = 1.0, .log = true}},
                            {"w", IntDistribution{.low = 1, .high = 4}}}));
  // Nothing to fit: as pb2_select().
  EXPECT_FALSE(Pb2Model::fit(std::span(observations).first(1), 4, params, with_opt, rng));
}

TEST(Pb2, ModelsBoundedNumbersOnly) {
  EXPECT_TRUE(pb2_models(FloatDistribution{.low = 0, .high = 1}));
  EXPECT_TRUE(pb2_models(IntDistribution{.low = 1, .high = 4}));
  EXPECT_FALSE(pb2_models(IntDistribution{.low = 4, .high = 4}));
  EXPECT_FALSE(pb2_models(NormalDistribution{}));
  EXPECT_FALSE(pb2_models(CategoricalDistribution{.choices = {1.0, 2.0}}));
}

}  // namespace
}  // namespace tuner
