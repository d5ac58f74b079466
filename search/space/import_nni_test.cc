#include "search/space/import_nni.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "search/space/search_space_json.h"
#include "trials/error.h"

namespace tuner {
namespace {

using ::testing::HasSubstr;

std::string import_error(const std::string& text) {
  try {
    import_nni_search_space(text, "search_space.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error for " << text;
  return "";
}

const Distribution& dist(const SearchSpace& s, const std::string& name) {
  const ParamSpec* p = s.find(name);
  EXPECT_NE(p, nullptr) << name;
  static const Distribution kNone = CategoricalDistribution{};
  return p ? p->distribution : kNone;
}

TEST(NniImport, MapsEveryType) {
  SearchSpace s = import_nni_search_space(R"({
    "dropout": {"_type": "uniform", "_value": [0.1, 0.5]},
    "conv": {"_type": "choice", "_value": [2, 3.5, "five", true]},
    "seed": {"_type": "randint", "_value": [0, 10]},
    "old_seed": {"_type": "randint", "_value": [10]},
    "units": {"_type": "quniform", "_value": [0, 10, 2.5]},
    "lr": {"_type": "loguniform", "_value": [1e-5, 0.1]},
    "width": {"_type": "qloguniform", "_value": [1, 1024, 1]},
    "a": {"_type": "normal", "_value": [0, 2]},
    "b": {"_type": "qnormal", "_value": [1, 2, 0.5]},
    "c": {"_type": "lognormal", "_value": [0, 1]},
    "d": {"_type": "qlognormal", "_value": [0, 1, 0.1]}
  })");
  ASSERT_EQ(s.size(), 11u);
  EXPECT_EQ(s.params()[0].name, "dropout");  // file order
  EXPECT_EQ(dist(s, "dropout"), Distribution(FloatDistribution{0.1, 0.5, false, {}}));
  EXPECT_EQ(dist(s, "conv"),
            Distribution(CategoricalDistribution{{int64_t{2}, 3.5, std::string("five"), true}}));
  // randint's upper bound is excluded.
  EXPECT_EQ(dist(s, "seed"), Distribution(IntDistribution{0, 9, false, 1}));
  EXPECT_EQ(dist(s, "old_seed"), Distribution(IntDistribution{0, 9, false, 1}));
  EXPECT_EQ(dist(s, "units"), Distribution(FloatDistribution{0, 10, false, 2.5}));
  EXPECT_EQ(dist(s, "lr"), Distribution(FloatDistribution{1e-5, 0.1, true, {}}));
  EXPECT_EQ(dist(s, "width"), Distribution(IntDistribution{1, 1024, true, 1}));
  EXPECT_EQ(dist(s, "a"), Distribution(NormalDistribution{0, 2, false, {}}));
  EXPECT_EQ(dist(s, "b"), Distribution(NormalDistribution{1, 2, false, 0.5}));
  EXPECT_EQ(dist(s, "c"), Distribution(NormalDistribution{0, 1, true, {}}));
  EXPECT_EQ(dist(s, "d"), Distribution(NormalDistribution{0, 1, true, 0.1}));
  EXPECT_EQ(parse_search_space(to_json(s)), s);
}

TEST(NniImport, QuniformWithFractionalGrid) {
  SearchSpace s =
      import_nni_search_space(R"({"x": {"_type": "quniform", "_value": [0.1, 0.9, 0.1]}})");
  EXPECT_EQ(dist(s, "x"), Distribution(FloatDistribution{0.1, 0.9, false, 0.1}));
}

TEST(NniImport, NestedChoiceBecomesConditionalParameters) {
  SearchSpace s = import_nni_search_space(R"({
    "layer0": {"_type": "choice", "_value": [
      {"_name": "Empty"},
      {"_name": "Conv", "kernel_size": {"_type": "choice", "_value": [1, 2, 3, 5]}},
      {"_name": "Max_pool", "pooling_size": {"_type": "choice", "_value": [2, 3, 5]}},
      {"_name": "Avg_pool", "pooling_size": {"_type": "choice", "_value": [2, 3, 5]},
       "stride": 2}
    ]},
    "lr": {"_type": "loguniform", "_value": [0.0001, 0.1]}
  })");
  std::vector<std::string> names;
  for (const auto& p : s.params()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "layer0", "layer0/Conv/kernel_size", "layer0/Max_pool/pooling_size",
                       "layer0/Avg_pool/pooling_size", "layer0/Avg_pool/stride", "lr"}));
  EXPECT_EQ(
      dist(s, "layer0"),
      Distribution(CategoricalDistribution{{std::string("Empty"), std::string("Conv"),
                                            std::string("Max_pool"), std::string("Avg_pool")}}));
  EXPECT_EQ(s.find("layer0/Max_pool/pooling_size")->condition,
            (Condition{"layer0", {std::string("Max_pool")}}));
  const ParamSpec* stride = s.find("layer0/Avg_pool/stride");
  EXPECT_TRUE(stride->fixed);  // a constant inside an option
  EXPECT_EQ(stride->distribution, Distribution(CategoricalDistribution{{int64_t{2}}}));
  EXPECT_EQ(parse_search_space(to_json(s)), s);
}

TEST(NniImport, NestedChoicesNestThreeDeep) {
  SearchSpace s = import_nni_search_space(R"({
    "model": {"_type": "choice", "_value": [
      {"_name": "mlp", "optimizer": {"_type": "choice", "_value": [
        {"_name": "sgd", "momentum": {"_type": "choice", "_value": [
          {"_name": "nesterov", "mu": {"_type": "uniform", "_value": [0.5, 0.99]}},
          {"_name": "plain"}]}},
        {"_name": "adam"}]}},
      {"_name": "linear"}]}
  })");
  const ParamSpec* mu = s.find("model/mlp/optimizer/sgd/momentum/nesterov/mu");
  ASSERT_NE(mu, nullptr);
  EXPECT_EQ(mu->condition->parent, "model/mlp/optimizer/sgd/momentum");
  EXPECT_EQ(s.find("model/mlp/optimizer/sgd/momentum")->condition->parent, "model/mlp/optimizer");
  Params chosen{{"model", std::string("linear")}};
  EXPECT_FALSE(s.is_active(*s.find("model/mlp/optimizer"), chosen));
  EXPECT_EQ(parse_search_space(to_json(s)), s);
}

TEST(NniImport, RefusesWhatItCannotRepresent) {
  EXPECT_THAT(import_error(R"({"x": {"_type": "quniform", "_value": [2, 10, 5]}})"),
              HasSubstr("search_space.json: x._value: quniform [2,10,5] takes the values "
                        "clip(round(x / q) * q, low, high), which are an evenly spaced grid only "
                        "when low and high are multiples of q"));
  EXPECT_THAT(import_error(R"({"x": {"_type": "quniform", "_value": [0, 10, 3]}})"),
              HasSubstr("x._value: quniform"));
  EXPECT_THAT(import_error(R"({"x": {"_type": "qloguniform", "_value": [1, 100, 5]}})"),
              HasSubstr("x._value: qloguniform [1,100,5] (a grid of step q on a log "
                        "scale) is representable only with q = 1"));
  EXPECT_THAT(import_error(R"({"x": {"_type": "qloguniform", "_value": [0.5, 100, 1]}})"),
              HasSubstr("x._value: qloguniform"));
  EXPECT_EQ(import_error(R"({"x": {"_type": "choice", "_value": [[1, 2], 3]}})"),
            "search_space.json: x._value[0]: an option must be a string, number, boolean or a "
            "nested search space {\"_name\": ..., ...}, not an array");
  EXPECT_EQ(import_error(R"({"x": {"_type": "choice", "_value": [null]}})"),
            "search_space.json: x._value[0]: expected a string, number or boolean, got null");
}

TEST(NniImport, ErrorsNameThePathInTheNniFile) {
  EXPECT_EQ(import_error(R"({"x": {"_type": "randint", "_value": [5, 5]}})"),
            "search_space.json: x._value[1]: upper (5) must be greater than lower (5): randint "
            "draws from [lower, upper), upper excluded");
  EXPECT_EQ(import_error(R"({"x": {"_type": "randint", "_value": [0, 2.5]}})"),
            "search_space.json: x._value[1]: expected an integer, got 2.5");
  EXPECT_EQ(import_error(R"({"lr": {"_type": "loguniform", "_value": [0, 0.1]}})"),
            "search_space.json: lr._value[0]: must be > 0 for a log scale");
  EXPECT_THAT(import_error(R"({"x": {"_type": "uniform", "_value": [1, 0]}})"),
              HasSubstr("x._value[1]: must be >= low"));
  EXPECT_EQ(import_error(R"({"x": {"_type": "normal", "_value": [0, -1]}})"),
            "search_space.json: x._value[1]: must be > 0");
  EXPECT_EQ(import_error(R"({"x": {"_type": "uniform", "_value": [0]}})"),
            "search_space.json: x._value: uniform needs 2 numbers [low, high], not 1");
  EXPECT_EQ(import_error(R"({"x": {"_type": "uniform", "_value": [0, "1"]}})"),
            "search_space.json: x._value[1]: expected a number, got \"1\"");
  EXPECT_EQ(import_error(R"({"x": {"_type": "unifrom", "_value": [0, 1]}})"),
            "search_space.json: x._type: unknown type \"unifrom\", expected one of choice, "
            "randint, uniform, quniform, loguniform, qloguniform, normal, qnormal, lognormal, "
            "qlognormal (did you mean \"uniform\"?)");
  EXPECT_EQ(import_error(R"({"x": {"_type": "uniform", "_values": [0, 1]}})"),
            "search_space.json: x: unknown field \"_values\" (did you mean \"_value\"?)");
  EXPECT_EQ(import_error(R"({"x": {"_type": "choice", "_value": []}})"),
            "search_space.json: x._value: a choice must have at least one option");
  EXPECT_THAT(import_error(R"({"x": {"_type": "choice", "_value": ["a", "a"]}})"),
              HasSubstr("x._value[1]: repeats choice 0"));
  EXPECT_EQ(import_error(R"({"x": {"_type": "choice", "_value": [{"name": "a"}]}})"),
            "search_space.json: x._value[0]: missing required field \"_name\" (an option that is "
            "an object is a nested search space and is named by \"_name\")");
  EXPECT_THAT(import_error(R"({"x": {"_type": "choice", "_value": [
                              {"_name": "a", "y": {"_type": "uniform", "_value": [1, 0.5]}}]}})"),
              HasSubstr("search_space.json: x._value[0].y._value[1]: must be >= low"));
  EXPECT_EQ(import_error(R"({"x": 1})"),
            "search_space.json: x: expected an object ({\"_type\": TYPE, \"_value\": [...]}), "
            "got 1");
  EXPECT_EQ(import_error(R"({"x/a/y": {"_type": "uniform", "_value": [0, 1]},
                             "x": {"_type": "choice", "_value": [
                              {"_name": "a", "y": {"_type": "uniform", "_value": [0, 1]}}]}})"),
            "search_space.json: x._value[0].y: the parameter name \"x/a/y\" is already used by "
            "another parameter");
  EXPECT_THAT(import_error("{\"x\": }"), HasSubstr("search_space.json:1:7: JSON syntax error"));
}

}  // namespace
}  // namespace tuner
