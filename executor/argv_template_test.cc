#include "executor/argv_template.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "trials/error.h"

namespace tuner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const Params kParams{{"lr", 0.001}, {"layers", int64_t{3}},         {"tiny", 1e-05},
                     {"one", 1.0},  {"opt", std::string("adam w")}, {"bn", true}};

std::vector<std::string> expand(const std::vector<std::string>& argv) {
  return expand_argv(argv, {.trial_id = 42, .trial_number = 7, .params = &kParams});
}

std::string error_of(const std::vector<std::string>& argv) {
  try {
    expand(argv);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(ArgvTemplate, SubstitutesParamsAndTrialIdentity) {
  EXPECT_THAT(expand({"python3", "train.py", "--lr", "{lr}", "--layers", "{layers}", "--opt={opt}",
                      "{tiny}", "{one}", "{bn}", "run-{trial_number}-of-{trial_id}"}),
              ElementsAre("python3", "train.py", "--lr", "0.001", "--layers", "3", "--opt=adam w",
                          "1e-05", "1.0", "true", "run-7-of-42"));
}

TEST(ArgvTemplate, DoubledBracesAreLiteral) {
  EXPECT_THAT(expand({"echo", R"({{"lr": {lr}}})", "}}{{"}),
              ElementsAre("echo", R"({"lr": 0.001})", "}{"));
}

// An engine trial's command carries the job's JSON as one argv entry: argv_literal makes it
// expand to itself, braces and all.
TEST(ArgvTemplate, ArgvLiteralExpandsToItself) {
  const std::string text = R"({"model": {"layers": [{"out": "{width}"}]}} }{)";
  EXPECT_THAT(expand({"tuner", argv_literal(text)}), ElementsAre("tuner", text));
  EXPECT_EQ(argv_literal("plain"), "plain");
}

TEST(ArgvTemplate, UnknownNameIsAnErrorNamingItAndTheIndex) {
  EXPECT_THAT(error_of({"python3", "t.py", "--momentum", "{momentum}"}),
              HasSubstr("argv[3] \"{momentum}\": unknown placeholder {momentum}"));
  EXPECT_THAT(error_of({"x", "{lr:.3f}"}), HasSubstr("argv[1] \"{lr:.3f}\": unknown placeholder"));
}

TEST(ArgvTemplate, MalformedBraces) {
  EXPECT_THAT(error_of({"x", "--a={lr"}), HasSubstr("argv[1] \"--a={lr\": unterminated '{'"));
  EXPECT_THAT(error_of({"x", "y", "a}b"}), HasSubstr("argv[2] \"a}b\": stray '}' at offset 1"));
}

TEST(ArgvTemplate, EmptyArgvOrProgram) {
  EXPECT_THAT(error_of({}), HasSubstr("command argv is empty"));
  EXPECT_THAT(error_of({""}), HasSubstr("argv[0]: the program name is empty"));
}

TEST(ArgvTemplate, NoParamsStillKnowsTrialIdentity) {
  EXPECT_THAT(expand_argv({"t", "{trial_id}"}, {.trial_id = 5}), ElementsAre("t", "5"));
  EXPECT_THROW(expand_argv({"t", "{lr}"}, {.trial_id = 5}), Error);
}

}  // namespace
}  // namespace tuner
