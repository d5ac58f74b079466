#include "serving/numeric_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <random>

namespace tuner::serving {
namespace {

using ::testing::ElementsAre;

TEST(NumericJsonTest, ReadsRectangularNestingsOfNumbers) {
  const auto t = read_numeric_tensor(
      R"( {"inputs": [[[1, -2.5], [3e2, 0]], [[4, 5], [6, 7E-1]]], "params": {}} )");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->field, "inputs");
  EXPECT_THAT(t->dims, ElementsAre(2, 2, 2));
  EXPECT_THAT(t->values, ElementsAre(1, -2.5, 300, 0, 4, 5, 6, 0.7f));
  const auto flat = read_numeric_tensor("{\"instances\":[[0,255]]}");
  ASSERT_TRUE(flat.has_value());
  EXPECT_EQ(flat->field, "instances");
  EXPECT_THAT(flat->dims, ElementsAre(1, 2));
}

TEST(NumericJsonTest, LeavesEverythingElseToTheFullReader) {
  for (const char* body : {R"({"inputs": [[1, 2], [3]]})",  // ragged
                           R"({"inputs": [[1, 2], 3]})",    // a number beside an array
                           R"({"inputs": [1, [2, 3]]})",    // an array beside a number
                           R"({"inputs": [[1, "2"]]})",     // a string
                           R"({"inputs": []})",             // empty
                           R"({"inputs": [[]]})",
                           R"({"inputs": {"input": [[1]]}})",     // a named tensor
                           R"({"instances": [{"input": [1]}]})",  // named rows
                           R"({"inputs": [[1]], "instances": [[1]]})",
                           R"({"inputs": [[1]], "params": {"a": 1}})",
                           R"({"dataframe_split": {"data": [[1]]}})",
                           R"({"inputs": [[01]]})",
                           R"({"inputs": [[1.]]})",
                           R"({"inputs": [[.5]]})",
                           R"({"inputs": [[1e]]})",
                           R"({"inputs": [[+1]]})",
                           R"({"inputs": [[NaN]]})",
                           R"({"inputs": [[-Infinity]]})",
                           R"({"inputs": [[1e39]]})",
                           R"({"inputs": [[0x10]]})",
                           R"({"inputs": [[1]]} x)",
                           R"({"inputs": [[1]])",
                           R"({"inputs": [[1],]})",
                           R"({"in\u0070uts": [[1]]})",
                           R"([[1]])",
                           ""}) {
    EXPECT_FALSE(read_numeric_tensor(body).has_value()) << body;
  }
  const std::string deep =
      "{\"inputs\": " + std::string(70, '[') + "1" + std::string(70, ']') + "}";
  EXPECT_FALSE(read_numeric_tensor(deep).has_value());
}

// Whatever it reads, it reads as the full JSON parser does: the same numbers, as float(double).
TEST(NumericJsonTest, AgreesWithTheFullParserOnRandomTensors) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> extent(1, 4), digits(0, 9), kind(0, 3);
  for (int round = 0; round < 200; ++round) {
    nlohmann::json tensor = nlohmann::json::array();
    const int n = extent(rng), m = extent(rng);
    for (int i = 0; i < n; ++i) {
      nlohmann::json row = nlohmann::json::array();
      for (int j = 0; j < m; ++j) {
        std::string text = kind(rng) == 0 ? "-" : "";
        text += std::to_string(digits(rng) + 1) + std::to_string(digits(rng));
        if (kind(rng) > 1)
          text += "." + std::to_string(digits(rng)) + std::to_string(digits(rng) + 1);
        if (kind(rng) == 3) text += "e-" + std::to_string(digits(rng));
        row.push_back(nlohmann::json::parse(text));
      }
      tensor.push_back(row);
    }
    const std::string body = nlohmann::json{{"inputs", tensor}}.dump();
    const auto t = read_numeric_tensor(body);
    ASSERT_TRUE(t.has_value()) << body;
    ASSERT_THAT(t->dims, ElementsAre(n, m));
    size_t k = 0;
    for (const auto& row : tensor) {
      for (const auto& v : row)
        EXPECT_EQ(t->values[k++], static_cast<float>(v.get<double>())) << body;
    }
  }
}

// Mutated documents (bytes replaced, inserted, deleted): whatever the fast path reads is a valid
// JSON document that the full parser reads as the same tensor.
TEST(NumericJsonTest, NeverReadsWhatTheFullParserWouldNot) {
  const std::string seed =
      R"({"inputs": [[[1, -2.5], [3e2, 0]], [[4, 5], [6, 7E-1]]], "params": {}})";
  const std::string alphabet = "[]{},:\"-+.eE0123456789 abcinputsparams\\";
  std::mt19937 rng(11);
  int read = 0;
  for (int round = 0; round < 5000; ++round) {
    std::string body = seed;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % (body.size() + 1);
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0:
          if (at < body.size()) body[at] = c;
          break;
        case 1:
          body.insert(body.begin() + static_cast<std::ptrdiff_t>(at), c);
          break;
        default:
          if (at < body.size()) body.erase(at, 1);
      }
    }
    const auto t = read_numeric_tensor(body);
    if (!t) continue;
    ++read;
    const nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(doc.is_discarded()) << body;
    std::vector<float> flat;
    std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& v) {
      if (v.is_array()) {
        for (const auto& x : v) walk(x);
      } else {
        flat.push_back(static_cast<float>(v.get<double>()));
      }
    };
    walk(doc.at(t->field));
    EXPECT_EQ(flat, t->values) << body;
  }
  EXPECT_GT(read, 100);  // the mutations kept some documents readable
}

}  // namespace
}  // namespace tuner::serving
