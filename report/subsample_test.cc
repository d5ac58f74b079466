#include "report/subsample.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tuner::report {
namespace {

TEST(SpreadSampleTest, EverythingWhenUnderTheCap) {
  EXPECT_EQ(spread_sample(3, 5, {}), (std::vector<size_t>{0, 1, 2}));
}

TEST(SpreadSampleTest, KeepsTheGivenIndicesAndSpreadsTheRest) {
  std::vector<size_t> s = spread_sample(100000, 1000, {99999, 5, 5, 123456});
  ASSERT_EQ(s.size(), 1000u);
  EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
  EXPECT_EQ(std::adjacent_find(s.begin(), s.end()), s.end());
  EXPECT_TRUE(std::binary_search(s.begin(), s.end(), 99999u));
  EXPECT_TRUE(std::binary_search(s.begin(), s.end(), 5u));
  EXPECT_LT(s[1], 200u);      // spread from the start ...
  EXPECT_GT(s[998], 99000u);  // ... to the end
}

TEST(SpreadSampleTest, KeepIsTruncatedToTheCap) {
  EXPECT_EQ(spread_sample(10, 2, {7, 3, 1}), (std::vector<size_t>{3, 7}));
}

}  // namespace
}  // namespace tuner::report
