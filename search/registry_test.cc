#include "search/registry.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "search/samplers/grid_sampler.h"
#include "trials/error.h"

namespace tuner {
namespace {

TEST(Registry, EverySamplerTypeHasADistinctNameThatMakesItAgain) {
  SearchSpace space;
  space.add_int("n", 0, 3);
  std::set<std::string> names;
  for (SamplerType type : sampler_types()) {
    const std::string name(to_string(type));
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(sampler_type_named(name), type);
    // The sampler's own name is the registry's: a study stores it and load() reads it back.
    EXPECT_EQ(make_sampler(SamplerSpec{.type = type}, &space)->name(), name);
  }
  EXPECT_EQ(names.size(), 6u);
  EXPECT_EQ(sampler_type_named("custom"), std::nullopt);
  EXPECT_EQ(sampler_type_named(""), std::nullopt);
}

TEST(Registry, TheGridNeedsASpace) {
  try {
    make_sampler(SamplerSpec{.type = SamplerType::kGrid});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(std::string(e.what()), "the grid sampler needs the study's search space");
  }
}

TEST(Registry, SamplerOptionsReachTheSampler) {
  SamplerSpec spec{.type = SamplerType::kNsga2};
  spec.nsga2.population_size = 7;
  auto nsga2 = std::dynamic_pointer_cast<Nsga2Sampler>(make_sampler(spec));
  ASSERT_NE(nsga2, nullptr);
  EXPECT_EQ(nsga2->options().population_size, 7);

  spec = SamplerSpec{.type = SamplerType::kTpe,
                     .tpe_gamma = TpeGamma{0.5, 3},
                     .tpe_weights = TpeWeights::kUniform};
  auto tpe = std::dynamic_pointer_cast<TpeSampler>(make_sampler(spec));
  ASSERT_NE(tpe, nullptr);
  EXPECT_EQ(tpe->options().gamma(4), 2);   // ceil(0.5 * 4)
  EXPECT_EQ(tpe->options().gamma(40), 3);  // capped
  EXPECT_EQ(tpe->options().weights(3), std::vector<double>(3, 1.0));

  spec = SamplerSpec{.type = SamplerType::kGp};
  spec.gp.n_startup_trials = 4;
  auto gp = std::dynamic_pointer_cast<GpSampler>(make_sampler(spec));
  ASSERT_NE(gp, nullptr);

  spec = SamplerSpec{.type = SamplerType::kGrid, .grid_max_points = 2};
  SearchSpace space;
  space.add_int("n", 0, 3);
  EXPECT_THROW(make_sampler(spec, &space), Error);  // 4 points > 2
}

TEST(Registry, EverySchedulerTypeHasADistinctName) {
  std::set<std::string> names;
  for (SchedulerType type : scheduler_types()) {
    const std::string name(to_string(type));
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(scheduler_type_named(name), type);
    SchedulerSpec spec{.type = type};
    spec.hyperband.max_resource = 9;
    spec.patience.patience = 3;
    spec.pbt.perturbation_interval = 2;
    EXPECT_EQ(make_scheduler(spec) == nullptr, type == SchedulerType::kNone) << name;
  }
  EXPECT_EQ(names.size(), 9u);
  EXPECT_EQ(scheduler_type_named("pbt2"), std::nullopt);
}

TEST(Registry, MedianIsThePercentileRuleAtFifty) {
  SchedulerSpec spec{.type = SchedulerType::kMedian};
  spec.percentile.percentile = 25;  // kMedian ignores it
  spec.percentile.n_startup_trials = 2;
  auto median = std::dynamic_pointer_cast<MedianStopping>(make_scheduler(spec));
  ASSERT_NE(median, nullptr);
  EXPECT_EQ(median->options().percentile, 50.0);
  EXPECT_EQ(median->options().n_startup_trials, 2);

  spec.type = SchedulerType::kPercentile;
  auto percentile = std::dynamic_pointer_cast<PercentileStopping>(make_scheduler(spec));
  ASSERT_NE(percentile, nullptr);
  EXPECT_EQ(percentile->options().percentile, 25.0);

  EXPECT_THROW(MedianStopping(MedianStoppingOptions{.percentile = 25}), Error);
}

}  // namespace
}  // namespace tuner
