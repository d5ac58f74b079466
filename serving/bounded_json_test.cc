#include "serving/bounded_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tuner::serving {
namespace {

using ::testing::HasSubstr;
using Kind = BoundedJsonError::Kind;

// The refusal `text` raises under `limits`.
BoundedJsonError refusal(const std::string& text, const JsonLimits& limits = {}) {
  try {
    read_bounded_json(text, limits);
  } catch (const BoundedJsonError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << text.substr(0, 200);
  return BoundedJsonError(Kind::kNotJson, "");
}

std::string object_of_keys(int keys) {
  std::string text = "{";
  for (int i = 0; i < keys; ++i) {
    text += (i > 0 ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i % 10);
  }
  return text + "}";
}

TEST(BoundedJsonTest, ReadsDocumentsKeepingKeyOrder) {
  const nlohmann::ordered_json doc =
      read_bounded_json(R"({"z": [1, 2.5, "x", null, true], "a": {"b": {}}})", {});
  EXPECT_EQ(doc.dump(), R"({"z":[1,2.5,"x",null,true],"a":{"b":{}}})");
  EXPECT_EQ(read_bounded_json("3", {}).get<int>(), 3);
}

TEST(BoundedJsonTest, AnObjectOfManyKeysIsReadWhole) {
  // 200,000 keys, which a search of the object for each key made take tens of seconds; what such
  // a body costs the server is measured by bench/serving/run_abuse_bench.
  const nlohmann::ordered_json doc = read_bounded_json(object_of_keys(200000), {});
  ASSERT_EQ(doc.size(), 200000u);
  EXPECT_EQ(doc["k199999"], 9);
}

TEST(BoundedJsonTest, AKeyWrittenTwiceIsKeptTwice) {
  const nlohmann::ordered_json doc = read_bounded_json(R"({"a": 1, "a": 2})", {});
  ASSERT_EQ(doc.size(), 2u);
  EXPECT_EQ(doc.items().begin().value(), 1);
}

TEST(BoundedJsonTest, AnObjectPastTheKeyLimitIsRefusedNamingItAndTheLimit) {
  JsonLimits limits;
  limits.max_object_keys = 1000;
  const BoundedJsonError e =
      refusal(R"({"dataframe_records": [)" + object_of_keys(100000) + "]}", limits);
  EXPECT_EQ(e.kind(), Kind::kTooManyKeys);
  EXPECT_THAT(e.what(), HasSubstr("dataframe_records[0]: an object of more than 1000 keys"));
}

TEST(BoundedJsonTest, ATopLevelKeyNotAllowedIsRefusedBeforeWhatFollowsIsRead) {
  constexpr std::string_view kAllowed[] = {"inputs", "params"};
  EXPECT_NO_THROW(read_bounded_json(R"({"inputs": [1], "params": {}})", {}, kAllowed));
  // Refused at "data", though what follows is not even JSON; nested keys are not checked.
  try {
    read_bounded_json(R"({"inputs": {"x": 1}, "data": [1, 2, !!!)", {}, kAllowed);
    ADD_FAILURE() << "accepted";
  } catch (const BoundedJsonError& e) {
    EXPECT_EQ(e.kind(), Kind::kUnknownKey);
    EXPECT_STREQ(e.what(), "unknown field 'data'");
  }
  EXPECT_NO_THROW(read_bounded_json(R"({"data": 1})", {}));  // none given: any key
}

TEST(BoundedJsonTest, ADocumentPastTheValueLimitIsRefused) {
  JsonLimits limits;
  limits.max_values = 6;  // arrays and objects count: {}, [], [], 1, 2, [] and 3 are 7
  const BoundedJsonError e = refusal(R"({"inputs": [[1, 2], [3, 4]]})", limits);
  EXPECT_EQ(e.kind(), Kind::kTooManyValues);
  EXPECT_THAT(e.what(), HasSubstr("inputs[1][0]: more than 6 values"));
  EXPECT_NO_THROW(read_bounded_json(R"({"inputs": [[1, 2], []]})", limits));
}

TEST(BoundedJsonTest, NestingPastTheDepthLimitIsRefused) {
  JsonLimits limits;
  limits.max_depth = 3;
  EXPECT_EQ(refusal(R"({"a": [[[1]]]})", limits).kind(), Kind::kTooDeep);
  EXPECT_THAT(refusal(R"({"a": [[[1]]]})", limits).what(), HasSubstr("a[0][0]: "));
  EXPECT_NO_THROW(read_bounded_json(R"({"a": [[1]]})", limits));
}

TEST(BoundedJsonTest, ANumberPastADoublesRangeIsOutOfRangeNotMalformed) {
  const BoundedJsonError big = refusal(R"({"inputs": [[0, 1e400]]})");
  EXPECT_EQ(big.kind(), Kind::kNumberOutOfRange);
  EXPECT_THAT(big.what(), HasSubstr("inputs[0][1]: the number 1e400 is out of range"));
  const BoundedJsonError digits = refusal(R"({"a": {"b": -)" + std::string(401, '9') + "}}");
  EXPECT_EQ(digits.kind(), Kind::kNumberOutOfRange);
  EXPECT_THAT(digits.what(), HasSubstr("a.b: the number -999"));
  EXPECT_EQ(refusal("[1, 2").kind(), Kind::kNotJson);
  EXPECT_EQ(refusal("{\"a\": x}").kind(), Kind::kNotJson);
  // Within range, however written: 1e308, 400 digits of a small number.
  EXPECT_NO_THROW(read_bounded_json("[1e308, 0." + std::string(400, '1') + "]", {}));
}

}  // namespace
}  // namespace tuner::serving
