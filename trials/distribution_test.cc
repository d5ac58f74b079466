#include "trials/distribution.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "trials/error.h"

namespace tuner {
namespace {

std::string problem_of(const Distribution& d) {
  auto p = find_problem(d);
  return p ? p->field + ": " + p->message : "";
}

TEST(Distribution, LogWithNonPositiveLowIsRejected) {
  EXPECT_EQ(problem_of(FloatDistribution{0.0, 1.0, true, {}}), "low: must be > 0 for a log scale");
  EXPECT_EQ(problem_of(FloatDistribution{-1.0, 1.0, true, {}}), "low: must be > 0 for a log scale");
  EXPECT_EQ(problem_of(IntDistribution{0, 8, true, 1}), "low: must be >= 1 for a log scale");
}

TEST(Distribution, StepThatDoesNotDivideTheRangeIsRejected) {
  EXPECT_EQ(problem_of(FloatDistribution{0.0, 1.0, false, 0.3}),
            "step: 0.3 does not divide the range [0.0, 1.0]");
  EXPECT_EQ(problem_of(IntDistribution{0, 10, false, 3}),
            "step: 3 does not divide the range [0, 10]");
  EXPECT_EQ(problem_of(FloatDistribution{0.0, 1.0, false, 0.1}),
            "");  // 0.1 divides despite rounding
  EXPECT_EQ(problem_of(FloatDistribution{0.0, 1.0, false, 0.0}), "step: must be > 0");
  EXPECT_EQ(problem_of(FloatDistribution{1.0, 2.0, true, 0.5}),
            "step: cannot be combined with a log scale");
}

TEST(Distribution, InvertedBoundsAreRejected) {
  EXPECT_EQ(problem_of(FloatDistribution{2.0, 1.0, false, {}}), "high: must be >= low (2.0)");
  EXPECT_EQ(problem_of(IntDistribution{5, 4, false, 1}), "high: must be >= low (5)");
  EXPECT_EQ(problem_of(FloatDistribution{1.0, 1.0, false, {}}), "");  // a single point is allowed
}

TEST(Distribution, CategoricalMustBeNonEmptyAndDistinct) {
  EXPECT_EQ(problem_of(CategoricalDistribution{}), "choices: must not be empty");
  EXPECT_EQ(problem_of(CategoricalDistribution{{std::string("a"), std::string("a")}}),
            "choices[1]: repeats choice 0 (\"a\")");
  // 1 and 1.0 are different values, as in JSON.
  EXPECT_EQ(problem_of(CategoricalDistribution{{int64_t{1}, 1.0}}), "");
}

TEST(Distribution, NonFiniteBoundsAreRejected) {
  double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(problem_of(FloatDistribution{0.0, inf, false, {}}), "high: must be a finite number");
  EXPECT_EQ(problem_of(FloatDistribution{std::nan(""), 1.0, false, {}}),
            "low: must be a finite number");
  EXPECT_EQ(problem_of(NormalDistribution{0.0, 0.0, false, {}}), "sigma: must be > 0");
}

// Regression: [-1e308, 1e308] was accepted and every draw came out as inf, so each ask
// failed and the sweep never ended.
TEST(Distribution, RefusesFloatRangeWhoseWidthOverflows) {
  EXPECT_EQ(problem_of(FloatDistribution{-1e308, 1e308, false, {}}),
            "high: the range [-1e+308, 1e+308] is wider than the largest double: narrow it, or "
            "use a log scale");
  EXPECT_EQ(problem_of(FloatDistribution{-1e307, 1e307, false, {}}), "");
  EXPECT_EQ(problem_of(FloatDistribution{1e-300, 1e308, true, {}}), "");
}

TEST(Distribution, RefusesIntRangeWhoseWidthOverflows) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(problem_of(IntDistribution{-max, max, false, 1}),
            "high: the range [-9223372036854775807, 9223372036854775807] is wider than the "
            "largest 64-bit integer: narrow it");
  EXPECT_EQ(problem_of(IntDistribution{0, max, false, 1}), "");
}

TEST(Distribution, ValidateNamesTheParameter) {
  try {
    validate(FloatDistribution{0.0, 1.0, true, {}}, "params.lr");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_STREQ(e.what(), "params.lr.low: must be > 0 for a log scale");
  }
}

TEST(Distribution, ContainsChecksTypeRangeAndGrid) {
  FloatDistribution stepped{0.0, 1.0, false, 0.25};
  EXPECT_TRUE(contains(stepped, 0.75));
  EXPECT_FALSE(contains(stepped, 0.7));
  EXPECT_FALSE(contains(stepped, int64_t{0}));  // an int is not a float value
  IntDistribution ints{1, 9, false, 2};
  EXPECT_TRUE(contains(ints, int64_t{5}));
  EXPECT_FALSE(contains(ints, int64_t{4}));
  EXPECT_FALSE(contains(ints, int64_t{11}));
  CategoricalDistribution cat{{true, std::string("x")}};
  EXPECT_TRUE(contains(cat, true));
  EXPECT_FALSE(contains(cat, false));
}

TEST(Distribution, InternalRepresentationRoundTrips) {
  CategoricalDistribution cat{{std::string("sgd"), std::string("adam"), int64_t{3}}};
  EXPECT_EQ(to_internal(cat, std::string("adam")), 1.0);
  EXPECT_EQ(from_internal(cat, 2.0), ParamValue(int64_t{3}));
  EXPECT_THROW(from_internal(cat, 3.0), Error);
  IntDistribution ints{0, 10, false, 2};
  EXPECT_EQ(from_internal(ints, 3.2), ParamValue(int64_t{4}));
  FloatDistribution stepped{0.0, 1.0, false, 0.25};
  EXPECT_EQ(from_internal(stepped, 0.3), ParamValue(0.25));
  EXPECT_THROW(to_internal(ints, int64_t{3}), Error);
}

TEST(Distribution, ToStringIsReadable) {
  EXPECT_EQ(to_string(Distribution(FloatDistribution{1e-05, 0.1, true, {}})),
            "float[1e-05, 0.1, log]");
  EXPECT_EQ(to_string(Distribution(IntDistribution{1, 8, false, 1})), "int[1, 8]");
  EXPECT_EQ(to_string(Distribution(CategoricalDistribution{{std::string("a"), false}})),
            "categorical[\"a\", false]");
}

}  // namespace
}  // namespace tuner

namespace tuner {
namespace {

TEST(ParamValue, FloatsPrintAsPythonReprDoes) {
  EXPECT_EQ(to_string(ParamValue(0.0001)), "0.0001");
  EXPECT_EQ(to_string(ParamValue(1e-05)), "1e-05");
  EXPECT_EQ(to_string(ParamValue(-2.5e16)), "-2.5e+16");
  EXPECT_EQ(to_string(ParamValue(123.0)), "123.0");
  EXPECT_EQ(to_string(ParamValue(0.1 + 0.2)), "0.30000000000000004");
  EXPECT_EQ(to_string(ParamValue(1234.5)), "1234.5");
  EXPECT_EQ(to_string(ParamValue(std::string("adam"))), "\"adam\"");
  EXPECT_EQ(to_string(ParamValue(int64_t{-3})), "-3");
}

}  // namespace
}  // namespace tuner
