#include "search/space/search_space_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "search/space/import_nni.h"
#include "search/space/import_wandb.h"
#include "search/space/search_space_json_value.h"
#include "trials/error.h"

namespace tuner {
namespace {

using ::testing::HasSubstr;

// The message of the Error that parsing `text` throws; fails the test when nothing is thrown.
std::string parse_error(const std::string& text) {
  try {
    parse_search_space(text, "space.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error for " << text;
  return "";
}

// `params` wrapped as a space: {"params": {<params>}}.
std::string space(const std::string& params) { return "{\"params\": {" + params + "}}"; }

constexpr const char* kCanonical = R"({
  "params": {
    "lr": {
      "type": "float",
      "low": 1e-05,
      "high": 0.1,
      "log": true
    },
    "dropout": {
      "type": "float",
      "low": 0.0,
      "high": 0.5,
      "step": 0.1
    },
    "layers": {
      "type": "int",
      "low": 1,
      "high": 8,
      "step": 1
    },
    "units": {
      "type": "int",
      "low": 16,
      "high": 1024,
      "log": true
    },
    "optimizer": {
      "type": "categorical",
      "choices": [
        "sgd",
        "adam"
      ]
    },
    "momentum": {
      "type": "float",
      "low": 0.0,
      "high": 0.99,
      "condition": {
        "parent": "optimizer",
        "values": [
          "sgd"
        ]
      }
    },
    "noise": {
      "type": "normal",
      "mu": 0.0,
      "sigma": 1.0
    },
    "scale": {
      "type": "normal",
      "mu": -1.5,
      "sigma": 0.25,
      "log": true,
      "q": 0.01
    },
    "seed": {
      "type": "fixed",
      "value": 42
    },
    "mixed": {
      "type": "categorical",
      "choices": [
        1,
        1.0,
        true,
        "1"
      ]
    }
  }
}
)";

TEST(SearchSpaceJson, ParsesEveryType) {
  SearchSpace s = parse_search_space(kCanonical);
  ASSERT_EQ(s.size(), 10u);
  EXPECT_EQ(s.params()[0].distribution, Distribution(FloatDistribution{1e-5, 0.1, true, {}}));
  EXPECT_EQ(s.params()[1].distribution, Distribution(FloatDistribution{0.0, 0.5, false, 0.1}));
  EXPECT_EQ(s.params()[2].distribution, Distribution(IntDistribution{1, 8, false, 1}));
  EXPECT_EQ(s.params()[3].distribution, Distribution(IntDistribution{16, 1024, true, 1}));
  EXPECT_EQ(s.params()[5].condition, (Condition{"optimizer", {std::string("sgd")}}));
  EXPECT_EQ(s.params()[7].distribution, Distribution(NormalDistribution{-1.5, 0.25, true, 0.01}));
  EXPECT_TRUE(s.params()[8].fixed);
  EXPECT_EQ(s.params()[8].distribution, Distribution(CategoricalDistribution{{int64_t{42}}}));
  // 1 and 1.0 are different choices, as are true and "1".
  EXPECT_EQ(s.params()[9].distribution,
            Distribution(CategoricalDistribution{{int64_t{1}, 1.0, true, std::string("1")}}));
}

TEST(SearchSpaceJson, CanonicalTextRoundTripsExactly) {
  // The "step": 1 of an int is a default and is left out when written.
  std::string text = kCanonical;
  SearchSpace s = parse_search_space(text);
  std::string saved = to_json(s);
  EXPECT_EQ(parse_search_space(saved), s);
  std::string canonical = saved;
  EXPECT_EQ(to_json(parse_search_space(canonical)), canonical);
  EXPECT_THAT(saved, Not(HasSubstr("\"step\": 1\n")));
  EXPECT_EQ(saved.back(), '\n');
}

TEST(SearchSpaceJson, CanonicalFileIsByteForByteStable) {
  std::string text = R"({
  "params": {
    "x": {
      "type": "float",
      "low": -0.30000000000000004,
      "high": 1e+300
    },
    "n": {
      "type": "int",
      "low": -9223372036854775808,
      "high": -1,
      "step": 1
    }
  }
}
)";
  // "step": 1 is the default: not canonical; without it the text is.
  std::string canonical = text;
  canonical.erase(canonical.find(",\n      \"step\": 1"),
                  std::string(",\n      \"step\": 1").size());
  EXPECT_EQ(to_json(parse_search_space(text)), canonical);
  EXPECT_EQ(to_json(parse_search_space(canonical)), canonical);
}

TEST(SearchSpaceJson, FloatsKeepRoundTripPrecision) {
  SearchSpace s;
  s.add_float("a", 0.1 + 0.2, 1.0 / 3.0);
  s.add_float("b", 1e-300, 5e-5, true);
  s.add_categorical("c", {1.0 / 7.0, 2.0, int64_t{2}});
  SearchSpace back = parse_search_space(to_json(s));
  EXPECT_EQ(back, s);
  EXPECT_THAT(to_json(s), HasSubstr("2.0"));  // a whole float stays a float
}

TEST(SearchSpaceJson, ValueApiPrefixesPaths) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(
      R"({"params": {"lr": {"type": "float", "low": 0, "high": 1, "log": true}}})");
  try {
    search_space_from_json(doc, "space");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "space.params.lr.low: must be > 0 for a log scale");
  }
  SearchSpace s = parse_search_space(space(R"("x": {"type": "int", "low": 0, "high": 3})"));
  EXPECT_EQ(search_space_from_json(search_space_to_json_value(s), "space"), s);
}

TEST(SearchSpaceJson, DistributionErrorsNameTheirPath) {
  EXPECT_EQ(parse_error(space(R"("lr": {"type": "float", "low": 0, "high": 0.1, "log": true})")),
            "space.json: params.lr.low: must be > 0 for a log scale");
  EXPECT_THAT(parse_error(space(R"("x": {"type": "float", "low": 0, "high": 1, "step": 0.3})")),
              HasSubstr("space.json: params.x.step: 0.3 does not divide the range"));
  EXPECT_THAT(parse_error(space(R"("x": {"type": "int", "low": 0, "high": 10, "step": 3})")),
              HasSubstr("params.x.step: 3 does not divide the range [0, 10]"));
  EXPECT_EQ(parse_error(space(R"("optimizer": {"type": "categorical", "choices": []})")),
            "space.json: params.optimizer.choices: must not be empty");
  EXPECT_THAT(parse_error(space(R"("x": {"type": "float", "low": 2, "high": 1})")),
              HasSubstr("space.json: params.x.high: must be >= low"));
  EXPECT_THAT(parse_error(space(R"("x": {"type": "int", "low": 5, "high": 1})")),
              HasSubstr("params.x.high: must be >= low (5)"));
  EXPECT_EQ(parse_error(space(R"("x": {"type": "int", "low": 0, "high": 9, "log": true})")),
            "space.json: params.x.low: must be >= 1 for a log scale");
  EXPECT_EQ(parse_error(space(R"("x": {"type": "float", "low": 1, "high": 9, "log": true,
                                       "step": 1})")),
            "space.json: params.x.step: cannot be combined with a log scale");
  EXPECT_THAT(parse_error(space(R"("x": {"type": "categorical", "choices": ["a", "b", "a"]})")),
              HasSubstr("params.x.choices[2]: repeats choice 0"));
  EXPECT_EQ(parse_error(space(R"("x": {"type": "normal", "mu": 0, "sigma": 0})")),
            "space.json: params.x.sigma: must be > 0");
  EXPECT_EQ(parse_error(space(R"("x": {"type": "normal", "mu": 0, "sigma": 1, "q": -1})")),
            "space.json: params.x.q: must be > 0");
  EXPECT_EQ(parse_error(space(R"("x": {"type": "float", "low": 0, "high": 1, "step": 0})")),
            "space.json: params.x.step: must be > 0");
}

TEST(SearchSpaceJson, HugeAndNonFiniteNumbers) {
  EXPECT_EQ(parse_error(space(R"("x": {"type": "float", "low": 0, "high": 1e400})")),
            "space.json: params.x.high: number '1e400' is too large for a 64-bit float");
  EXPECT_EQ(parse_error(space(R"("x": {"type": "int", "low": 0,
                                       "high": 9223372036854775808})")),
            "space.json: params.x.high: integer 9223372036854775808 is out of the 64-bit range "
            "[-9223372036854775808, 9223372036854775807]");
  // Regression: this was reported as "must be an integer, not 1e+20".
  EXPECT_EQ(parse_error(space(R"("x": {"type": "int", "low": 0,
                                       "high": 99999999999999999999})")),
            "space.json: params.x.high: integer 1e+20 is out of the 64-bit range "
            "[-9223372036854775808, 9223372036854775807]");
  EXPECT_THAT(parse_error(space(R"("x": {"type": "float", "low": NaN, "high": 1})")),
              HasSubstr("space.json:1:43: JSON syntax error"));
  // Regression: the widest finite bounds passed, and every draw came out as inf.
  EXPECT_EQ(parse_error(space(R"("x": {"type": "float", "low": -1e308, "high": 1e308})")),
            "space.json: params.x.high: the range [-1e+308, 1e+308] is wider than the largest "
            "double: narrow it, or use a log scale");
  // The widest range whose width is finite is fine.
  SearchSpace s = parse_search_space(space(R"("x": {"type": "float", "low": 0,
                     "high": 1.7976931348623157e308})"));
  EXPECT_EQ(parse_search_space(to_json(s)), s);
}

TEST(SearchSpaceJson, WrongJsonTypes) {
  EXPECT_EQ(parse_error(space(R"("x": {"type": "float", "low": "0", "high": 1})")),
            "space.json: params.x.low: expected a number, got \"0\"");
  EXPECT_EQ(parse_error(space(R"("x": {"type": "int", "low": 0.5, "high": 1})")),
            "space.json: params.x.low: expected an integer, got 0.5");
  EXPECT_EQ(parse_error(space(R"("x": {"type": "int", "low": 1.0, "high": 3})")),
            "space.json: params.x.low: expected an integer, got 1.0");
  EXPECT_EQ(parse_error(space(R"("x": {"type": "float", "low": 0, "high": 1, "log": 1})")),
            "space.json: params.x.log: expected true or false, got 1");
  EXPECT_EQ(parse_error(space(R"("x": {"type": "categorical", "choices": "a"})")),
            "space.json: params.x.choices: expected an array, got \"a\"");
  EXPECT_EQ(parse_error(space(R"("x": {"type": "categorical", "choices": ["a", null]})")),
            "space.json: params.x.choices[1]: expected a string, number or boolean, got null");
  EXPECT_EQ(parse_error(space(R"("x": {"type": "fixed", "value": [1]})")),
            "space.json: params.x.value: expected a string, number or boolean, got an array");
  EXPECT_EQ(parse_error(space(R"("x": 3)")), "space.json: params.x: expected an object, got 3");
  EXPECT_EQ(parse_error("[]"),
            "space.json: expected an object (a search space with a \"params\" object), got an "
            "array");
  EXPECT_EQ(parse_error(R"({"params": []})"),
            "space.json: params: expected an object (parameter name -> definition), got an "
            "array");
}

TEST(SearchSpaceJson, FieldErrors) {
  EXPECT_EQ(parse_error(space(R"("x": {"type": "float", "low": 0, "hgih": 1})")),
            "space.json: params.x: unknown field \"hgih\" for type float (did you mean "
            "\"high\"?)");
  EXPECT_EQ(parse_error(space(R"("x": {"type": "float", "low": 0, "high": 1, "choices": []})")),
            "space.json: params.x: unknown field \"choices\" for type float (expected type, low, "
            "high, log, step, condition)");
  EXPECT_EQ(parse_error(space(R"("x": {"type": "float", "low": 0})")),
            "space.json: params.x: missing required field \"high\"");
  EXPECT_EQ(
      parse_error(space(R"("x": {"type": "floot", "low": 0, "high": 1})")),
      "space.json: params.x.type: expected \"float\", \"int\", \"categorical\", \"normal\" or "
      "\"fixed\", got \"floot\" (did you mean \"float\"?)");
  EXPECT_EQ(
      parse_error(space(R"("x": {"type": 1})")),
      "space.json: params.x.type: expected \"float\", \"int\", \"categorical\", \"normal\" or "
      "\"fixed\", got 1");
  EXPECT_EQ(parse_error(space(R"("x": {"low": 0, "high": 1})")),
            "space.json: params.x: missing required field \"type\" (one of \"float\", \"int\", "
            "\"categorical\", \"normal\" or \"fixed\")");
  EXPECT_EQ(parse_error(R"({"parms": {}})"),
            "space.json: unknown field \"parms\" (did you mean \"params\"?)");
  EXPECT_EQ(parse_error("{}"), "space.json: missing required field \"params\"");
  EXPECT_EQ(parse_error(space(R"("": {"type": "fixed", "value": 1})")),
            "space.json: params[\"\"]: a parameter name must not be empty");
  // Names that are not plain words are quoted in paths.
  EXPECT_THAT(parse_error(space(R"("model.lr": {"type": "float", "low": 1, "high": 0})")),
              HasSubstr("space.json: params[\"model.lr\"].high: must be >= low"));
}

TEST(SearchSpaceJson, SyntaxErrorsHaveLineAndColumn) {
  EXPECT_EQ(parse_error("{\n  \"params\": {\n    \"x\": 1,\n  }\n}"),
            "space.json:4:3: JSON syntax error while parsing object key - unexpected '}'; "
            "expected string literal");
  EXPECT_THAT(parse_error(""), HasSubstr("space.json:1:1: JSON syntax error"));
  EXPECT_EQ(parse_error(R"({"params": {"x": {"type": "fixed", "value": 1, "value": 2}}})"),
            "space.json: params.x: duplicate key \"value\"");
  EXPECT_EQ(parse_error(R"({"params": {}, "params": {}})"), "space.json: duplicate key \"params\"");
}

TEST(SearchSpaceJson, ConditionErrors) {
  const std::string opt = R"("opt": {"type": "categorical", "choices": ["sgd", "adam"]}, )";
  EXPECT_EQ(parse_error(space(opt + R"("m": {"type": "float", "low": 0, "high": 1,
                                        "condition": {"parent": "otp", "values": ["sgd"]}})")),
            "space.json: params.m.condition.parent: no parameter is named \"otp\" (did you mean "
            "\"opt\"?)");
  EXPECT_EQ(parse_error(space(opt + R"("m": {"type": "float", "low": 0, "high": 1,
                                        "condition": {"parent": "opt", "values": ["sdg"]}})")),
            "space.json: params.m.condition.values[0]: \"sdg\" is not a value of \"opt\" "
            "categorical[\"sgd\", \"adam\"]");
  EXPECT_EQ(parse_error(space(opt + R"("m": {"type": "float", "low": 0, "high": 1,
                                        "condition": {"parent": "opt", "values": []}})")),
            "space.json: params.m.condition.values: must not be empty");
  EXPECT_EQ(parse_error(space(opt + R"("m": {"type": "float", "low": 0, "high": 1,
                                        "condition": {"parent": "opt"}})")),
            "space.json: params.m.condition: missing required field \"values\"");
  EXPECT_EQ(parse_error(space(opt + R"("m": {"type": "float", "low": 0, "high": 1,
                                        "condition": {"parent": "opt", "value": ["sgd"]}})")),
            "space.json: params.m.condition: unknown field \"value\" (did you mean \"values\"?)");
  EXPECT_EQ(parse_error(space(R"("a": {"type": "int", "low": 0, "high": 1,
                                       "condition": {"parent": "a", "values": [0]}})")),
            "space.json: params.a.condition.parent: a parameter cannot be its own parent");
  EXPECT_EQ(parse_error(space(R"("a": {"type": "int", "low": 0, "high": 1,
                                       "condition": {"parent": "b", "values": [0]}},
                                  "b": {"type": "int", "low": 0, "high": 1,
                                       "condition": {"parent": "a", "values": [1]}})")),
            "space.json: params.a.condition.parent: conditions form a cycle: a -> b -> a");
  // An int parent takes integers only; a float parent takes an integer as the same float.
  EXPECT_THAT(parse_error(space(R"("n": {"type": "int", "low": 0, "high": 3},
                                  "m": {"type": "fixed", "value": 1,
                                        "condition": {"parent": "n", "values": [1.0]}})")),
              HasSubstr("params.m.condition.values[0]: "));
  SearchSpace s = parse_search_space(space(R"("f": {"type": "float", "low": 0, "high": 1,
                                                      "step": 0.5},
                                              "m": {"type": "fixed", "value": 1,
                                                    "condition": {"parent": "f",
                                                                  "values": [1]}})"));
  EXPECT_EQ(s.params()[1].condition->values, std::vector<ParamValue>{1.0});
}

TEST(SearchSpaceJson, ConditionsNestThreeDeep) {
  const std::string text = space(R"(
    "model": {"type": "categorical", "choices": ["mlp", "linear"]},
    "optimizer": {"type": "categorical", "choices": ["sgd", "adam"],
                  "condition": {"parent": "model", "values": ["mlp"]}},
    "momentum": {"type": "float", "low": 0.0, "high": 0.99,
                 "condition": {"parent": "optimizer", "values": ["sgd"]}},
    "nesterov": {"type": "categorical", "choices": [true, false],
                 "condition": {"parent": "momentum", "values": [0.0]}})");
  SearchSpace s = parse_search_space(text);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s.params()[3].condition->parent, "momentum");
  Params chosen{{"model", std::string("linear")}};
  EXPECT_FALSE(s.is_active(s.params()[1], chosen));
  chosen = {{"model", std::string("mlp")}, {"optimizer", std::string("sgd")}, {"momentum", 0.0}};
  EXPECT_TRUE(s.is_active(s.params()[3], chosen));
  EXPECT_EQ(parse_search_space(to_json(s)), s);
}

TEST(SearchSpaceJson, ChildrenMayComeBeforeTheirParents) {
  // The file's order is kept, except that a parent moves up to just before its first child.
  SearchSpace s = parse_search_space(space(R"(
    "lr": {"type": "float", "low": 0.001, "high": 0.1, "log": true},
    "nesterov": {"type": "categorical", "choices": [true, false],
                 "condition": {"parent": "optimizer", "values": ["sgd"]}},
    "batch": {"type": "int", "low": 16, "high": 256},
    "optimizer": {"type": "categorical", "choices": ["sgd", "adam"],
                  "condition": {"parent": "model", "values": ["mlp"]}},
    "model": {"type": "categorical", "choices": ["mlp", "linear"]})"));
  std::vector<std::string> names;
  for (const auto& p : s.params()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"lr", "model", "optimizer", "nesterov", "batch"}));
}

TEST(SearchSpaceJson, EmptySpaceRoundTrips) {
  SearchSpace empty;
  EXPECT_EQ(to_json(empty), "{\n  \"params\": {}\n}\n");
  EXPECT_EQ(parse_search_space(to_json(empty)), empty);
}

TEST(SearchSpaceJson, LoadNamesTheFile) {
  try {
    load_search_space("/nonexistent/space.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/space.json"));
  }
  auto file = std::filesystem::temp_directory_path() / "tuner_search_space_json_test.json";
  std::ofstream(file) << space(R"("x": {"type": "float", "low": 1, "high": 0})");
  try {
    load_search_space(file);
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(file.string() + ": params.x.high: must be >= low"));
  }
  std::filesystem::remove(file);
}

// Every file in examples/spaces loads with the loader its name calls for, and survives a
// save and a reload.
TEST(SearchSpaceJson, ExampleSpacesLoad) {
  const auto dir = std::filesystem::path(TUNER_SOURCE_DIR) / "examples" / "spaces";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    SearchSpace s;
    if (name.rfind("nni", 0) == 0) {
      s = load_nni_search_space(entry.path());
    } else if (name.rfind("wandb", 0) == 0) {
      s = load_wandb_parameters(entry.path());
    } else {
      s = load_search_space(entry.path());
    }
    EXPECT_FALSE(s.empty());
    EXPECT_EQ(parse_search_space(to_json(s)), s);
    ++count;
  }
  EXPECT_GE(count, 3);
}

// "default": the value earlier trials implicitly had (ParamSpec::default_value).
TEST(SearchSpaceJson, DefaultIsReadCheckedAndWritten) {
  const SearchSpace s = parse_search_space(
      space(R"("act": {"type": "categorical", "choices": ["relu", "gelu"], "default": "relu"},)"
            R"( "wd": {"type": "float", "low": 0, "high": 0.1, "default": 0})"));
  EXPECT_EQ(s.find("act")->default_value, ParamValue(std::string("relu")));
  EXPECT_EQ(s.find("wd")->default_value, ParamValue(0.0));  // an integer read as a float
  EXPECT_EQ(parse_search_space(to_json(s)), s);
  EXPECT_NE(to_json(s).find("\"default\": \"relu\""), std::string::npos);

  EXPECT_EQ(parse_error(space(R"("n": {"type": "int", "low": 1, "high": 4, "default": 8})")),
            "space.json: params.n.default: 8 is not a value of the parameter int[1, 4]");
  EXPECT_EQ(
      parse_error(space(R"("a": {"type": "categorical", "choices": [1, 2], "default": "1"})")),
      "space.json: params.a.default: \"1\" is not a value of the parameter categorical[1, 2]");
  EXPECT_EQ(parse_error(space(R"("s": {"type": "fixed", "value": 1, "default": 1})")),
            "space.json: params.s.default: a fixed parameter has no default (it has one value)");
  EXPECT_THAT(parse_error(space(R"("o": {"type": "categorical", "choices": ["sgd", "adam"]},)"
                                R"( "m": {"type": "float", "low": 0, "high": 1, "default": 0.5,)"
                                R"( "condition": {"parent": "o", "values": ["sgd"]}})")),
              HasSubstr("params.m.default: only a parameter without a condition"));
}

}  // namespace
}  // namespace tuner
