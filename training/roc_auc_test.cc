#include "training/roc_auc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "training/rng.h"

namespace tuner::training {
namespace {

// The definition: over every (positive, negative) pair, 1 when the positive scores higher, 1/2
// on a tie.
double brute_force_auc(const std::vector<float>& scores, const std::vector<int32_t>& labels) {
  double wins = 0.0;
  int64_t pairs = 0;
  for (size_t i = 0; i < scores.size(); ++i) {
    if (labels[i] != 1) continue;
    for (size_t j = 0; j < scores.size(); ++j) {
      if (labels[j] != 0) continue;
      ++pairs;
      wins += scores[i] > scores[j] ? 1.0 : scores[i] == scores[j] ? 0.5 : 0.0;
    }
  }
  return wins / static_cast<double>(pairs);
}

TEST(RocAuc, MatchesThePairCountWithManyTies) {
  Rng rng(5);
  for (int round = 0; round < 20; ++round) {
    const size_t n = 5 + rng.next_u64() % 200;
    std::vector<float> scores(n);
    std::vector<int32_t> labels(n);
    for (size_t i = 0; i < n; ++i) {
      labels[i] = static_cast<int32_t>(rng.next_u64() % 2);
      // Few distinct values, so that ties within and across the classes are common.
      scores[i] = static_cast<float>(rng.next_u64() % 7) + 0.5f * static_cast<float>(labels[i]);
    }
    labels[0] = 0;
    labels[1] = 1;
    EXPECT_NEAR(roc_auc(scores, labels), brute_force_auc(scores, labels), 1e-12)
        << "round " << round;
  }
}

TEST(RocAuc, PerfectReversedAndConstantScores) {
  EXPECT_DOUBLE_EQ(
      roc_auc(std::vector<float>{0.1f, 0.2f, 0.8f, 0.9f}, std::vector<int32_t>{0, 0, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(
      roc_auc(std::vector<float>{0.9f, 0.8f, 0.2f, 0.1f}, std::vector<int32_t>{0, 0, 1, 1}), 0.0);
  EXPECT_DOUBLE_EQ(roc_auc(std::vector<float>{3, 3, 3, 3, 3}, std::vector<int32_t>{0, 1, 0, 1, 1}),
                   0.5);
}

TEST(RocAuc, OneClassIsNaNAndBadInputsAreRefused) {
  EXPECT_TRUE(std::isnan(roc_auc(std::vector<float>{1, 2}, std::vector<int32_t>{1, 1})));
  EXPECT_THROW(roc_auc(std::vector<float>{1, 2}, std::vector<int32_t>{0, 2}),
               std::invalid_argument);
  EXPECT_THROW(roc_auc(std::vector<float>{1, 2}, std::vector<int32_t>{0}), std::invalid_argument);
}

}  // namespace
}  // namespace tuner::training
