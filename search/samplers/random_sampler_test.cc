#include "search/samplers/random_sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace tuner {
namespace {

TEST(RandomSampler, DrawsStayInsideEveryKindOfDistribution) {
  std::vector<Distribution> distributions = {
      FloatDistribution{-1.0, 2.0},
      FloatDistribution{1e-5, 1e-1, true},
      FloatDistribution{0.0, 1.0, false, 0.125},
      IntDistribution{-3, 7},
      IntDistribution{1, 1000, true},
      IntDistribution{2, 20, false, 3},
      CategoricalDistribution{{std::string("a"), int64_t{2}, 3.5, false}},
      NormalDistribution{1.0, 0.5, true, 0.1},
  };
  Rng rng(11);
  for (const Distribution& d : distributions) {
    for (int i = 0; i < 2000; ++i) {
      ParamValue v = RandomSampler::draw(d, rng);
      ASSERT_TRUE(contains(d, v)) << to_string(d) << " drew " << to_string(v);
    }
  }
}

TEST(RandomSampler, LogIntCoversBothEndsAndFavoursSmallValues) {
  IntDistribution d{1, 100, true};
  Rng rng(5);
  int small = 0, ones = 0, hundreds = 0;
  for (int i = 0; i < 20000; ++i) {
    int64_t v = std::get<int64_t>(RandomSampler::draw(d, rng));
    small += v <= 10;
    ones += v == 1;
    hundreds += v == 100;
  }
  // log-uniform on [0.5, 100.5]: P(v <= 10) = log(10.5 / 0.5) / log(100.5 / 0.5) ~= 0.574
  EXPECT_NEAR(small / 20000.0, 0.574, 0.02);
  EXPECT_GT(ones, 0);
  EXPECT_GT(hundreds, 0);
}

TEST(RandomSampler, UniformFloatMatchesItsMoments) {
  Rng rng(9);
  double sum = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i)
    sum += std::get<double>(RandomSampler::draw(FloatDistribution{2, 4}, rng));
  EXPECT_NEAR(sum / n, 3.0, 0.02);
}

}  // namespace
}  // namespace tuner
