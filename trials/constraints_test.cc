#include "trials/constraints.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "trials/error.h"

namespace tuner {
namespace {

FrozenTrial with_attrs(std::map<std::string, std::string, std::less<>> attrs) {
  FrozenTrial t;
  t.number = 7;
  t.system_attrs = std::move(attrs);
  return t;
}

TEST(Constraints, ListRoundTripsExactly) {
  const std::vector<double> values = {0.1, -2.5, 1e-300, 3.0, -0.0};
  FrozenTrial t = with_attrs({{kConstraintsAttr, constraints_to_json(values)}});
  const std::vector<ConstraintValue> read = constraints_of(t);
  ASSERT_EQ(read.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(read[i].name, std::to_string(i));
    EXPECT_EQ(read[i].value, values[i]);  // bit for bit
  }
  EXPECT_TRUE(has_constraints(t));
}

TEST(Constraints, ReadsWhatPythonsJsonWrites) {
  // json.dumps([0.5, 1, float("inf"), -float("inf")]) and Optuna 5's set_constraint keys.
  FrozenTrial t = with_attrs({{"constraints", "[0.5, 1, Infinity, -Infinity]"},
                              {"constraints:latency", "-3.5"},
                              {"constraints:1", "-1.0"},
                              {"constraintsx", "not one"}});
  const std::vector<ConstraintValue> read = constraints_of(t);
  ASSERT_EQ(read.size(), 5u);
  EXPECT_EQ(read[0], (ConstraintValue{"0", 0.5}));
  EXPECT_EQ(read[1], (ConstraintValue{"1", -1.0}));  // the named one replaces the list's
  EXPECT_EQ(read[2].value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(read[3].value, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(read[4], (ConstraintValue{"latency", -3.5}));
  EXPECT_EQ(constraint_violation(read), std::numeric_limits<double>::infinity());
  EXPECT_FALSE(is_feasible(t));
}

TEST(Constraints, FeasibleWhenEveryValueIsAtMostZero) {
  EXPECT_TRUE(is_feasible(with_attrs({})));
  EXPECT_TRUE(is_feasible(with_attrs({{"constraints", "null"}})));  // a constraints_func raised
  EXPECT_FALSE(has_constraints(with_attrs({{"constraints", "null"}})));
  EXPECT_TRUE(is_feasible(with_attrs({{"constraints", "[0.0, -1.0]"}})));
  EXPECT_FALSE(is_feasible(with_attrs({{"constraints", "[0.0, 1e-9]"}})));
  EXPECT_FALSE(is_feasible(with_attrs({{"constraints:a", "NaN"}})));
  const std::vector<ConstraintValue> v = {{"0", 2.0}, {"1", -5.0}, {"2", 0.5}};
  EXPECT_EQ(constraint_violation(v), 2.5);
}

TEST(Constraints, MalformedValuesAreDataLossNamingTheTrial) {
  for (const char* text : {"[1, \"a\"]", "{\"a\": 1}", "[1,]", "1", "[1 2]", "[", "\"x\""}) {
    try {
      constraints_of(with_attrs({{"constraints", text}}));
      ADD_FAILURE() << text << " was read";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << text;
      EXPECT_NE(std::string(e.what()).find("trial 7: system attribute \"constraints\""),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(constraints_of(with_attrs({{"constraints:a", "[1]"}})), Error);
  EXPECT_TRUE(constraints_of(with_attrs({{"constraints", " [ ] "}})).empty());
}

TEST(Constraints, NonFiniteValuesAreNotWritten) {
  const std::vector<double> bad = {1.0, std::nan("")};
  try {
    constraints_to_json(bad);
    ADD_FAILURE() << "NaN was written";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("constraint 1 is NaN"), std::string::npos) << e.what();
  }
  const std::vector<double> inf = {std::numeric_limits<double>::infinity()};
  EXPECT_THROW(constraints_to_json(inf), Error);
}

}  // namespace
}  // namespace tuner
