#include "tracking/log_batches.h"

#include <gtest/gtest.h>

namespace tuner::tracking {
namespace {

TEST(SplitBatchesTest, StaysWithinMlflowsLimitsInOrder) {
  std::vector<MlflowMetric> metrics;
  for (int i = 0; i < 2500; ++i) metrics.push_back({.key = "m", .value = double(i), .step = i});
  std::vector<MlflowTag> params(150, {"p", "v"}), tags(120, {"t", "v"});
  for (int i = 0; i < 150; ++i) params[i].key = "p" + std::to_string(i);
  const std::vector<LogBatch> batches = split_batches(metrics, params, tags);
  ASSERT_EQ(batches.size(), 3u);
  // First batch: 100 params, 100 tags, and 800 metrics fill the 1000 entities.
  EXPECT_EQ(batches[0].params.size(), 100u);
  EXPECT_EQ(batches[0].tags.size(), 100u);
  EXPECT_EQ(batches[0].metrics.size(), 800u);
  EXPECT_EQ(batches[1].params.size(), 50u);
  EXPECT_EQ(batches[1].tags.size(), 20u);
  EXPECT_EQ(batches[1].metrics.size(), 930u);
  EXPECT_EQ(batches[2].metrics.size(), 770u);
  int64_t next = 0;
  for (const LogBatch& b : batches) {
    EXPECT_LE(b.metrics.size() + b.params.size() + b.tags.size(), kMaxEntitiesPerBatch);
    for (const MlflowMetric& m : b.metrics) EXPECT_EQ(m.step, next++);
  }
  EXPECT_EQ(next, 2500);
  EXPECT_EQ(batches[1].params.back().key, "p149");
}

TEST(SplitBatchesTest, NothingGivesNoBatch) {
  EXPECT_TRUE(split_batches({}, {}, {}).empty());
  EXPECT_EQ(split_batches({{.key = "m"}}, {}, {}).size(), 1u);
}

TEST(SplitBatchesTest, CutsLongValues) {
  const std::string long_value(7000, 'x');
  const std::vector<LogBatch> b =
      split_batches({}, {{"p", long_value}}, {{"t", std::string(9000, 'y')}});
  EXPECT_EQ(b[0].params[0].value.size(), kMaxParamValueLength);
  EXPECT_TRUE(b[0].params[0].value.ends_with("..."));
  EXPECT_EQ(b[0].tags[0].value.size(), kMaxTagValueLength);
  // Not inside a UTF-8 sequence.
  std::string accents;
  while (accents.size() < 7000) accents += "\xC3\xA9";
  const std::string cut = split_batches({}, {{"p", accents}}, {})[0].params[0].value;
  EXPECT_LE(cut.size(), kMaxParamValueLength);
  EXPECT_EQ((cut.size() - 3) % 2, 0u);
}

}  // namespace
}  // namespace tuner::tracking
