#include "trials/params_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "trials/error.h"

namespace tuner {
namespace {

using ::testing::HasSubstr;

std::string error_of(std::string_view json) {
  try {
    params_from_json(json, "trial 3: fixed_params");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "no error for " << json;
  return "";
}

TEST(ParamsJson, KeepsTypesIntVersusFloat) {
  Params params{{"layers", int64_t{1}}, {"lr", 1.0}, {"opt", std::string("adam")}, {"bn", true}};
  std::string json = params_to_json(params);
  EXPECT_EQ(json, R"({"bn":true,"layers":1,"lr":1.0,"opt":"adam"})");
  Params back = params_from_json(json, "test");
  EXPECT_EQ(back, params);
  EXPECT_TRUE(std::holds_alternative<int64_t>(back.at("layers")));
  EXPECT_TRUE(std::holds_alternative<double>(back.at("lr")));
}

TEST(ParamsJson, EmptyObject) {
  EXPECT_EQ(params_to_json({}), "{}");
  EXPECT_TRUE(params_from_json("{}", "test").empty());
}

TEST(ParamsJson, FloatsRoundTripExactly) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> bits;
  std::vector<double> values = {0.1,
                                1e-300,
                                5e-324,
                                -0.0,
                                1e20,
                                123456789.123456789,
                                std::numeric_limits<double>::max(),
                                std::numeric_limits<double>::min(),
                                3.0};
  for (int i = 0; i < 2000; ++i) {
    uint64_t b = bits(rng);
    double d;
    std::memcpy(&d, &b, sizeof(d));
    if (std::isfinite(d)) values.push_back(d);
  }
  for (double d : values) {
    Params back = params_from_json(params_to_json({{"x", d}}), "test");
    double r = std::get<double>(back.at("x"));
    EXPECT_EQ(std::memcmp(&r, &d, sizeof(d)), 0) << d;  // bit-exact, -0.0 included
  }
}

TEST(ParamsJson, Int64Extremes) {
  Params params{{"a", std::numeric_limits<int64_t>::min()},
                {"b", std::numeric_limits<int64_t>::max()}};
  EXPECT_EQ(params_from_json(params_to_json(params), "test"), params);
}

TEST(ParamsJson, UnicodeStrings) {
  Params params{{"名前", std::string("héllo ✓ \"quoted\"\n")}};
  EXPECT_EQ(params_from_json(params_to_json(params), "test"), params);
}

TEST(ParamsJson, InvalidUtf8IsReplacedNotThrown) {
  std::string json = params_to_json({{"s", std::string("a\xff"
                                                       "b")}});
  EXPECT_EQ(std::get<std::string>(params_from_json(json, "test").at("s")),
            "a\xEF\xBF\xBD"
            "b");
}

TEST(ParamsJson, NonFiniteFloatIsAnErrorNamingTheParameter) {
  try {
    params_to_json({{"lr", std::nan("")}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("parameter 'lr'"));
  }
  EXPECT_THROW(params_to_json({{"lr", std::numeric_limits<double>::infinity()}}), Error);
}

TEST(ParamsJson, ErrorsNameWhereAndKey) {
  EXPECT_THAT(error_of("[1]"), HasSubstr("trial 3: fixed_params: expected a JSON object"));
  EXPECT_THAT(error_of("{"), HasSubstr("trial 3: fixed_params: not valid JSON"));
  EXPECT_THAT(error_of(R"({"lr": null})"), HasSubstr("trial 3: fixed_params.lr: expected a"));
  EXPECT_THAT(error_of(R"({"lr": [1]})"), HasSubstr("fixed_params.lr: expected a"));
  EXPECT_THAT(error_of(R"({"n": 18446744073709551615})"),
              HasSubstr("fixed_params.n: integer out of the int64 range"));
  EXPECT_THAT(error_of(R"({"x": 1e400})"), HasSubstr("fixed_params: not valid JSON"));
  EXPECT_THAT(error_of(std::string(100, '[') + std::string(100, ']')), HasSubstr("nested deeper"));
}

}  // namespace
}  // namespace tuner
