#include "search/space/import_wandb.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "search/space/search_space_json.h"
#include "trials/error.h"

namespace tuner {
namespace {

using ::testing::HasSubstr;

std::string import_error(const std::string& text) {
  try {
    import_wandb_parameters(text, "sweep.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error for " << text;
  return "";
}

// The distribution of the only parameter of a parameters block holding `definition` as "x".
Distribution single(const std::string& definition) {
  SearchSpace s = import_wandb_parameters("{\"x\": " + definition + "}");
  EXPECT_EQ(s.size(), 1u);
  EXPECT_EQ(parse_search_space(to_json(s)), s);  // every import saves and reloads
  return s.empty() ? Distribution{} : s.params()[0].distribution;
}

TEST(WandbImport, InfersTheDistributionAsWandbDoes) {
  EXPECT_EQ(single(R"({"values": [16, 32.0, "a", false]})"),
            Distribution(CategoricalDistribution{{int64_t{16}, 32.0, std::string("a"), false}}));
  EXPECT_EQ(single(R"({"min": 1, "max": 10})"), Distribution(IntDistribution{1, 10, false, 1}));
  EXPECT_EQ(single(R"({"min": 1, "max": 10.0})"),
            Distribution(FloatDistribution{1, 10, false, {}}));
  EXPECT_EQ(single(R"({"min": 0.0001, "max": 0.1})"),
            Distribution(FloatDistribution{0.0001, 0.1, false, {}}));
  SearchSpace s = import_wandb_parameters(R"({"epochs": {"value": 10}})");
  EXPECT_TRUE(s.params()[0].fixed);
  EXPECT_EQ(s.params()[0].distribution, Distribution(CategoricalDistribution{{int64_t{10}}}));
}

TEST(WandbImport, MapsEveryRepresentableDistribution) {
  EXPECT_EQ(single(R"({"distribution": "int_uniform", "min": -3, "max": 3})"),
            Distribution(IntDistribution{-3, 3, false, 1}));
  EXPECT_EQ(single(R"({"distribution": "uniform", "min": 0, "max": 1})"),
            Distribution(FloatDistribution{0, 1, false, {}}));
  EXPECT_EQ(single(R"({"distribution": "constant", "value": "adam"})"),
            Distribution(CategoricalDistribution{{std::string("adam")}}));
  EXPECT_EQ(single(R"({"distribution": "categorical", "values": [1, 2]})"),
            Distribution(CategoricalDistribution{{int64_t{1}, int64_t{2}}}));
  // q_uniform: integers with an integer q, floats otherwise (q defaults to 1.0).
  EXPECT_EQ(single(R"({"distribution": "q_uniform", "min": 0, "max": 100, "q": 10})"),
            Distribution(IntDistribution{0, 100, false, 10}));
  EXPECT_EQ(single(R"({"distribution": "q_uniform", "min": 0, "max": 1, "q": 0.25})"),
            Distribution(FloatDistribution{0, 1, false, 0.25}));
  EXPECT_EQ(single(R"({"distribution": "q_uniform", "min": 0, "max": 4})"),
            Distribution(FloatDistribution{0, 4, false, 1.0}));
  // log_uniform's bounds are exponents of e; log_uniform_values' are the values.
  EXPECT_EQ(single(R"({"distribution": "log_uniform", "min": -2, "max": 3})"),
            Distribution(FloatDistribution{std::exp(-2.0), std::exp(3.0), true, {}}));
  EXPECT_EQ(single(R"({"distribution": "log_uniform_values", "min": 1e-5, "max": 0.1})"),
            Distribution(FloatDistribution{1e-5, 0.1, true, {}}));
  // exp(-uniform(min, max)) is log-uniform on [exp(-max), exp(-min)].
  EXPECT_EQ(single(R"({"distribution": "inv_log_uniform", "min": 1, "max": 4})"),
            Distribution(FloatDistribution{std::exp(-4.0), std::exp(-1.0), true, {}}));
  EXPECT_EQ(single(R"({"distribution": "inv_log_uniform_values", "min": 0.01, "max": 1})"),
            Distribution(FloatDistribution{0.01, 1, true, {}}));
  // Integers on a log scale: q the integer 1, whole bounds (exp(log(256)) is snapped to 256).
  EXPECT_EQ(single(R"({"distribution": "q_log_uniform_values", "min": 16, "max": 1024,
                       "q": 1})"),
            Distribution(IntDistribution{16, 1024, true, 1}));
  EXPECT_EQ(single(R"({"distribution": "q_log_uniform", "min": 0, "max": 5.545177444479562,
                       "q": 1})"),
            Distribution(IntDistribution{1, 256, true, 1}));
  EXPECT_EQ(single(R"({"distribution": "normal"})"),
            Distribution(NormalDistribution{0, 1, false, {}}));
  EXPECT_EQ(single(R"({"distribution": "normal", "mu": 5, "sigma": 2})"),
            Distribution(NormalDistribution{5, 2, false, {}}));
  EXPECT_EQ(single(R"({"distribution": "q_normal", "mu": 5, "sigma": 2, "q": 0.5})"),
            Distribution(NormalDistribution{5, 2, false, 0.5}));
  EXPECT_EQ(single(R"({"distribution": "q_normal"})"),
            Distribution(NormalDistribution{0, 1, false, 1.0}));
  EXPECT_EQ(single(R"({"distribution": "log_normal", "mu": -1, "sigma": 0.5})"),
            Distribution(NormalDistribution{-1, 0.5, true, {}}));
  EXPECT_EQ(single(R"({"distribution": "q_log_normal", "q": 0.1})"),
            Distribution(NormalDistribution{0, 1, true, 0.1}));
}

TEST(WandbImport, AcceptsTheWholeSweepOrTheBlock) {
  const std::string block = R"({"lr": {"min": 0.001, "max": 0.1}, "bs": {"values": [32, 64]}})";
  SearchSpace from_block = import_wandb_parameters(block);
  SearchSpace from_sweep = import_wandb_parameters(
      R"({"program": "train.py", "method": "bayes",
          "metric": {"name": "val_loss", "goal": "minimize"}, "parameters": )" +
      block + "}");
  SearchSpace from_bare = import_wandb_parameters(R"({"parameters": )" + block + "}");
  EXPECT_EQ(from_block.size(), 2u);
  EXPECT_EQ(from_sweep, from_block);
  EXPECT_EQ(from_bare, from_block);
  // A block whose one parameter happens to be called "parameters".
  SearchSpace odd = import_wandb_parameters(R"({"parameters": {"values": [1, 2]}})");
  EXPECT_EQ(odd.params()[0].name, "parameters");
  EXPECT_THAT(import_error(R"({"method": "grid", "parameters": {"x": {"min": 1, "max": 0}}})"),
              HasSubstr("sweep.json: parameters.x.max: must be greater than min (1)"));
}

TEST(WandbImport, NestedParametersGetDottedNames) {
  SearchSpace s = import_wandb_parameters(R"({
    "optimizer": {"parameters": {
      "name": {"values": ["adam", "sgd"]},
      "schedule": {"parameters": {"warmup": {"min": 0, "max": 100}}}}},
    "epochs": {"value": 10}})");
  std::vector<std::string> names;
  for (const auto& p : s.params()) names.push_back(p.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"optimizer.name", "optimizer.schedule.warmup", "epochs"}));
  EXPECT_EQ(parse_search_space(to_json(s)), s);
  EXPECT_EQ(import_error(R"({"a.b": {"value": 1}, "a": {"parameters": {"b": {"value": 2}}}})"),
            "sweep.json: a.parameters.b: the parameter name \"a.b\" (nested names are joined "
            "with '.') is already used");
  EXPECT_EQ(import_error(R"({"a": {"parameters": {}}})"),
            "sweep.json: a.parameters: must hold at least one parameter");
  EXPECT_EQ(import_error(R"({"a": {"parameters": {"b": {"value": 2}}, "value": 1}})"),
            "sweep.json: a: unknown field \"value\" in a nested parameter dict (it holds only "
            "\"parameters\") (expected parameters)");
}

TEST(WandbImport, RefusesWhatItCannotRepresent) {
  EXPECT_EQ(import_error(R"({"x": {"values": [1, 2], "probabilities": [0.3, 0.7]}})"),
            "sweep.json: x.probabilities: weighted choices are not representable: a categorical "
            "parameter here draws every choice with the same probability");
  EXPECT_THAT(import_error(R"({"x": {"distribution": "beta", "a": 2, "b": 3}})"),
              HasSubstr("sweep.json: x.distribution: the beta distribution is not "
                        "representable"));
  EXPECT_THAT(import_error(R"({"x": {"distribution": "q_log_uniform_values", "min": 1,
                                    "max": 100}})"),
              HasSubstr("sweep.json: x: q_log_uniform_values (a grid of step q on a log scale) "
                        "is representable only as integers"));
  EXPECT_THAT(import_error(R"({"x": {"distribution": "q_log_uniform_values", "min": 1,
                                    "max": 100, "q": 5}})"),
              HasSubstr("sweep.json: x.q: q_log_uniform_values"));
  EXPECT_THAT(import_error(R"({"x": {"distribution": "q_log_uniform_values", "min": 1,
                                    "max": 100, "q": 1.0}})"),
              HasSubstr("with a float q"));
  EXPECT_EQ(import_error(R"({"x": {"distribution": "q_normal", "q": 1}})"),
            "sweep.json: x.q: q_normal with an integer q gives integers, which a normal "
            "distribution here (floats) cannot represent; write q as a float (e.g. 1.0) to get "
            "float values");
  EXPECT_THAT(import_error(R"({"x": {"distribution": "q_uniform", "min": 1, "max": 10,
                                    "q": 3}})"),
              HasSubstr("sweep.json: x.q: q_uniform rounds uniform(min, max) to multiples of q"));
  EXPECT_EQ(import_error(R"({"x": {"value": [1, 2]}})"),
            "sweep.json: x.value: a constant an array is not representable: a parameter value is "
            "a string, number or boolean");
  EXPECT_THAT(import_error(R"({"x": {"values": [1, 1, 2]}})"),
              HasSubstr("sweep.json: x.values[1]: repeats choice 0"));
  EXPECT_THAT(import_error(R"({"x": {"values": [{"a": 1}]}})"),
              HasSubstr("sweep.json: x.values[0]: a value that is an object is not "
                        "representable"));
}

TEST(WandbImport, ErrorsNameTheirPath) {
  EXPECT_EQ(import_error(R"({"x": {"min": 5, "max": 5}})"),
            "sweep.json: x.max: must be greater than min (5)");
  EXPECT_EQ(import_error(R"({"x": {"distribution": "int_uniform", "min": 0.5, "max": 5}})"),
            "sweep.json: x.min: expected an integer, got 0.5");
  EXPECT_EQ(import_error(R"({"x": {"distribution": "log_uniform_values", "min": 0, "max": 1}})"),
            "sweep.json: x.min: must be > 0 for a log scale");
  EXPECT_THAT(import_error(R"({"x": {"distribution": "log_uniform", "min": 0, "max": 1000}})"),
              HasSubstr("sweep.json: x.max: exp(1000"));
  EXPECT_EQ(import_error(R"({"x": {"distribution": "normal", "sigma": 0}})"),
            "sweep.json: x.sigma: must be > 0");
  EXPECT_EQ(import_error(R"({"x": {"distribution": "unifrom", "min": 0, "max": 1}})"),
            "sweep.json: x.distribution: unknown distribution \"unifrom\" (did you mean "
            "\"uniform\"?)");
  EXPECT_EQ(import_error(R"({"x": {"distribution": "uniform", "min": 0, "max": 1, "q": 1}})"),
            "sweep.json: x: unknown field \"q\" for distribution uniform (expected distribution, "
            "min, max)");
  EXPECT_EQ(import_error(R"({"x": {"valeus": [1, 2]}})"),
            "sweep.json: x: unknown field \"valeus\" (did you mean \"values\"?)");
  EXPECT_EQ(import_error(R"({"x": {"mu": 0}})"),
            "sweep.json: x: cannot tell the distribution: give \"values\", \"value\", \"min\" and "
            "\"max\", or \"distribution\"");
  EXPECT_EQ(import_error(R"({"x": {"distribution": "uniform", "min": 0}})"),
            "sweep.json: x: missing required field \"max\"");
  EXPECT_EQ(import_error(R"({"x": {"values": "abc"}})"),
            "sweep.json: x.values: expected an array, got \"abc\"");
  EXPECT_EQ(import_error(R"({"x": {"values": []}})"), "sweep.json: x.values: must not be empty");
  EXPECT_EQ(import_error("[1]"),
            "sweep.json: expected an object (a W&B sweep configuration or its parameters "
            "block), got an array");
  EXPECT_THAT(import_error("method: bayes\n"), HasSubstr("sweep.json:1:1: JSON syntax error"));
}

}  // namespace
}  // namespace tuner
