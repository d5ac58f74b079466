#include "trials/json_depth.h"

#include <gtest/gtest.h>

#include <string>

namespace tuner {
namespace {

std::string nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(JsonDepth, CountsArraysAndObjectsButNotBracketsInStrings) {
  EXPECT_FALSE(json_nests_deeper_than(R"({"a": [1, {"b": 2}]})", 3));
  EXPECT_TRUE(json_nests_deeper_than(R"({"a": [1, {"b": 2}]})", 2));
  EXPECT_FALSE(json_nests_deeper_than(R"(["[[[[", "\"[[["])", 1));
}

// Regression: 100,000 levels crashed `tuner space check` and `tuner trials --json` with
// SIGSEGV (nlohmann's copies and dumps recurse once per level).
TEST(JsonDepth, CheckRefusesDocumentsNestedDeeperThanTheLimit) {
  EXPECT_NO_THROW(check_json_depth(nested(kMaxJsonDepth), "a.json"));
  try {
    check_json_depth(nested(100000), "a.json", ErrorCode::kDataLoss);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
    EXPECT_STREQ(e.what(), "a.json: JSON nested deeper than 256 levels");
  }
}

}  // namespace
}  // namespace tuner
