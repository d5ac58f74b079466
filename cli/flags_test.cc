#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/command.h"

namespace tuner::cli {
namespace {

using Args = std::vector<std::string>;

constexpr Flag kTable[] = {
    {"--storage", "PATH", "the study database", kRequired},
    {"--trials", "N", "how many"},
    {"--scale", "X", "a number"},
    {"--json", "", "as JSON"},
    kBusyTimeoutFlag,
};

// The message of the UsageError that `f` throws; fails the test when it throws none.
template <typename F>
std::string usage_error(F f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError";
  return "";
}

TEST(FlagsTest, TakesValuesAndSwitches) {
  const Flags flags(Args{"--json", "--storage", "s.db", "--trials", "7"}, kTable, "demo");
  EXPECT_TRUE(flags.has("--json"));
  EXPECT_TRUE(flags.has("--storage"));
  EXPECT_FALSE(flags.has("--scale"));
  EXPECT_EQ(flags.get("--storage"), "s.db");
  EXPECT_EQ(flags.get("--json"), "");
  EXPECT_EQ(flags.get("--scale", "1.5"), "1.5");
  EXPECT_EQ(flags.get_int("--trials", 0), 7);
  EXPECT_TRUE(flags.positional().empty());
}

TEST(FlagsTest, AValueMayStartWithADash) {
  const Flags flags(Args{"--trials", "-3", "--storage", "--json"}, kTable, "demo");
  EXPECT_EQ(flags.get_int("--trials", 0), -3);
  EXPECT_EQ(flags.get("--storage"), "--json");
  EXPECT_FALSE(flags.has("--json"));
}

TEST(FlagsTest, TheLastOfARepeatedFlagWins) {
  const Flags flags(Args{"--trials", "1", "--trials", "2"}, kTable, "demo");
  EXPECT_EQ(flags.get_int("--trials", 0), 2);
}

TEST(FlagsTest, AnUnknownFlagNamesTheCommandAndTheFlag) {
  EXPECT_EQ(usage_error([] {
              Flags(Args{"--json", "--frobnicate"}, kTable, "demo");
            }),
            "tuner demo: unknown flag '--frobnicate'; see 'tuner help'");
  EXPECT_EQ(usage_error([] { Flags(Args{"-j"}, kTable, "demo"); }),
            "tuner demo: unknown flag '-j'; see 'tuner help'");
}

// Regression: a mistyped flag (`--executor`) got no did-you-mean, though sweep files do.
TEST(FlagsTest, AMistypedFlagGetsADidYouMean) {
  EXPECT_EQ(usage_error([] {
              Flags(Args{"--trial", "3"}, kTable, "demo");
            }),
            "tuner demo: unknown flag '--trial' (did you mean \"--trials\"?); see 'tuner help'");
  EXPECT_EQ(usage_error([] { Flags(Args{"--jsno"}, kTable, "demo"); }),
            "tuner demo: unknown flag '--jsno' (did you mean \"--json\"?); see 'tuner help'");
}

TEST(FlagsTest, AFlagWithoutItsValueIsAUsageError) {
  EXPECT_EQ(usage_error([] {
              Flags(Args{"--json", "--storage"}, kTable, "demo");
            }),
            "tuner demo: --storage needs a value");
}

TEST(FlagsTest, PositionalArgumentsAreRefusedUnlessAccepted) {
  EXPECT_EQ(usage_error([] { Flags(Args{"file.json"}, kTable, "demo"); }),
            "tuner demo: unknown argument 'file.json'; see 'tuner help'");
  const Flags flags(Args{"a", "--trials", "3", "b", "--json", "c"}, kTable, "demo",
                    Positional::kAccepted);
  EXPECT_EQ(flags.positional(), (Args{"a", "b", "c"}));
  EXPECT_EQ(flags.get_int("--trials", 0), 3);
  EXPECT_TRUE(flags.has("--json"));
  // Accepting positional arguments still refuses unknown flags.
  EXPECT_EQ(usage_error([] {
              Flags(Args{"a", "--nope"}, kTable, "demo", Positional::kAccepted);
            }),
            "tuner demo: unknown flag '--nope'; see 'tuner help'");
}

TEST(FlagsTest, GetIntNamesTheFlagAndTheValue) {
  for (const std::string bad : {"1.5", "abc", "12x", "", "99999999999"}) {
    const Flags flags(Args{"--trials", bad}, kTable, "demo");
    EXPECT_EQ(usage_error([&] { flags.get_int("--trials", 0); }),
              "tuner demo: --trials: '" + bad + "' is not an integer");
  }
  const Flags none(Args{}, kTable, "demo");
  EXPECT_EQ(none.get_int("--trials", 42), 42);
}

TEST(FlagsTest, GetDoubleNamesTheFlagAndTheValue) {
  for (const std::string bad : {"abc", "1.5x", ""}) {
    const Flags flags(Args{"--scale", bad}, kTable, "demo");
    EXPECT_EQ(usage_error([&] { flags.get_double("--scale", 0); }),
              "tuner demo: --scale: '" + bad + "' is not a number");
  }
  EXPECT_DOUBLE_EQ(Flags(Args{"--scale", "1e3"}, kTable, "demo").get_double("--scale", 0), 1000);
  EXPECT_DOUBLE_EQ(Flags(Args{}, kTable, "demo").get_double("--scale", 0.25), 0.25);
}

TEST(FlagsTest, RequireNamesTheFlagAndAHint) {
  const Flags none(Args{}, kTable, "demo");
  EXPECT_EQ(usage_error([&] { none.require("--storage", "a SQLite file"); }),
            "tuner demo: --storage is required (a SQLite file)");
  // Without a hint, the flag's help line is the hint.
  EXPECT_EQ(usage_error([&] { none.require("--storage"); }),
            "tuner demo: --storage is required (the study database)");
  const Flags given(Args{"--storage", "s.db"}, kTable, "demo");
  EXPECT_EQ(given.require("--storage"), "s.db");
  EXPECT_EQ(given.require("--storage", "a SQLite file"), "s.db");
}

TEST(FlagsTest, BusyTimeoutIsPositiveMilliseconds) {
  EXPECT_EQ(Flags(Args{}, kTable, "demo").busy_timeout(), std::nullopt);
  EXPECT_EQ(Flags(Args{"--busy-timeout", "250"}, kTable, "demo").busy_timeout(),
            std::chrono::milliseconds(250));
  const Flags zero(Args{"--busy-timeout", "0"}, kTable, "demo");
  EXPECT_EQ(usage_error([&] { zero.busy_timeout(); }),
            "--busy-timeout must be a number of milliseconds > 0");
}

TEST(FlagsTest, AskingForAFlagOutsideTheTableIsAProgrammingError) {
  const Flags flags(Args{}, kTable, "demo");
  EXPECT_THROW(flags.has("--strorage"), std::logic_error);
  EXPECT_THROW(flags.get("--strorage"), std::logic_error);
  EXPECT_THROW(flags.require("--strorage", "typo"), std::logic_error);
}

}  // namespace
}  // namespace tuner::cli
