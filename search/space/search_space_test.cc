#include "search/space/search_space.h"

#include <gtest/gtest.h>

#include "trials/error.h"

namespace tuner {
namespace {

SearchSpace nested_space() {
  SearchSpace s;
  s.add_categorical("model", {std::string("linear"), std::string("mlp")});
  s.add({"layers", IntDistribution{1, 4, false, 1}, Condition{"model", {std::string("mlp")}}});
  s.add(
      {"width", IntDistribution{16, 256, true, 1}, Condition{"layers", {int64_t{2}, int64_t{3}}}});
  s.add({"bottleneck", CategoricalDistribution{{true, false}}, Condition{"width", {int64_t{64}}}});
  return s;
}

TEST(SearchSpace, ConditionsNestToAnyDepth) {
  SearchSpace s = nested_space();
  Params chosen{{"model", std::string("mlp")}, {"layers", int64_t{2}}, {"width", int64_t{64}}};
  EXPECT_TRUE(s.is_active(*s.find("bottleneck"), chosen));
  chosen["layers"] = int64_t{1};
  EXPECT_FALSE(s.is_active(*s.find("width"), chosen));
  Params linear{{"model", std::string("linear")}};
  EXPECT_FALSE(s.is_active(*s.find("layers"), linear));
  EXPECT_FALSE(s.is_active(*s.find("bottleneck"), linear));  // its ancestors are inactive
}

TEST(SearchSpace, CheckAssignmentRequiresExactlyTheActiveParams) {
  SearchSpace s = nested_space();
  s.check_assignment({{"model", std::string("linear")}});
  EXPECT_THROW(s.check_assignment({{"model", std::string("mlp")}}), Error);  // layers missing
  EXPECT_THROW(s.check_assignment({{"model", std::string("linear")}, {"layers", int64_t{2}}}),
               Error);  // layers is inactive
  EXPECT_THROW(s.check_assignment({{"model", std::string("gbm")}}), Error);
  EXPECT_THROW(s.check_assignment({{"model", std::string("linear")}, {"extra", 1.0}}), Error);
}

TEST(SearchSpace, RejectsBadDeclarations) {
  SearchSpace s;
  s.add_float("lr", 1e-4, 1.0, true);
  auto message = [&](ParamSpec spec) {
    try {
      s.add(std::move(spec));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({"lr", FloatDistribution{0, 1}, {}}), "parameter 'lr' is declared twice");
  EXPECT_EQ(message({"m", FloatDistribution{0, 1}, Condition{"opt", {std::string("sgd")}}}),
            "m.condition.parent: 'opt' is not a parameter declared before 'm'");
  EXPECT_EQ(message({"m", FloatDistribution{0, 1}, Condition{"lr", {2.0}}}),
            "m.condition.values[0]: 2.0 is not a value of 'lr' float[0.0001, 1.0, log]");
  EXPECT_EQ(message({"x", FloatDistribution{0, 1, true}, {}}),
            "x.low: must be > 0 for a log scale");
  EXPECT_EQ(message({"", FloatDistribution{0, 1}, {}}), "a parameter name must not be empty");
}

}  // namespace
}  // namespace tuner
