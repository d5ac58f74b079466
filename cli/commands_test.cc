// Every command's flag table against its parser and its `tuner help` entry.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"

namespace tuner::cli {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(CommandsTest, NamesAreUnique) {
  std::set<std::string_view> names;
  for (const Command& c : commands()) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    EXPECT_NE(c.run, nullptr) << c.name;
    EXPECT_TRUE(c.synopsis.starts_with(c.name)) << c.name << ": " << c.synopsis;
    EXPECT_FALSE(c.description.empty()) << c.name;
  }
}

TEST(CommandsTest, FlagTablesHaveNoDuplicatesAndOneLineHelp) {
  for (const Command& c : commands()) {
    std::set<std::string_view> seen;
    for (const Flag& f : c.flags) {
      EXPECT_TRUE(seen.insert(f.name).second) << c.name << ": " << f.name << " declared twice";
      EXPECT_TRUE(f.name.starts_with("--")) << c.name << ": " << f.name;
      EXPECT_FALSE(f.help.empty()) << c.name << ": " << f.name;
      EXPECT_EQ(f.help.find('\n'), std::string_view::npos) << c.name << ": " << f.name;
      EXPECT_EQ(f.value.find(' '), std::string_view::npos) << c.name << ": " << f.name;
    }
  }
}

TEST(CommandsTest, HelpNamesEveryFlagOfTheTable) {
  for (const Command& c : commands()) {
    const std::string help = command_help(c);
    for (const Flag& f : c.flags) {
      std::string shown = "    " + std::string(f.name);
      if (f.takes_value()) shown += " " + std::string(f.value);
      EXPECT_NE(help.find("  " + shown + (f.takes_value() ? "" : " ")), std::string::npos)
          << c.name << ": help has no line for " << f.name << ":\n"
          << help;
      // The synopsis names the flag too, except the flags a launcher passes to `tuner trial`.
      if (c.name != "trial") {
        EXPECT_NE(c.synopsis.find(std::string(f.name) + (f.takes_value() ? " " : "")),
                  std::string_view::npos)
            << c.name << ": synopsis lacks " << f.name;
      }
    }
    for (const std::string& line : lines_of(help)) {
      EXPECT_LE(line.size(), 100u) << c.name << ": " << line;
    }
  }
}

TEST(CommandsTest, EachParserAcceptsItsTableAndRefusesOtherFlags) {
  for (const Command& c : commands()) {
    std::vector<std::string> args;
    for (const Flag& f : c.flags) {
      args.emplace_back(f.name);
      if (f.takes_value()) args.emplace_back("1");
    }
    const Flags flags(args, c.flags, c.name);
    for (const Flag& f : c.flags) EXPECT_TRUE(flags.has(f.name)) << c.name << ": " << f.name;
    // The command itself refuses a flag outside its table before doing anything else.
    try {
      c.run({"--no-such-flag"});
      ADD_FAILURE() << c.name << " accepted --no-such-flag";
    } catch (const UsageError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("tuner " + std::string(c.name) + ":"), std::string::npos) << message;
      EXPECT_NE(message.find("'--no-such-flag'"), std::string::npos) << message;
    }
  }
}

TEST(CommandHelpTest, LaysOutSynopsisDescriptionAndFlags) {
  static constexpr Flag kFlags[] = {
      {"--out", "NAME", "where it goes", kRequired},
      {"--force", "", "overwrite"},
      {"--a-very-long-flag-name", "PLACEHOLDER", "help on a line of its own"},
  };
  const Command demo = {.name = "demo",
                        .synopsis = "demo --out NAME [--force]",
                        .description = "first line\nsecond line",
                        .flags = kFlags,
                        .run = nullptr};
  EXPECT_EQ(command_help(demo),
            "  demo --out NAME [--force]        first line\n"
            "                                   second line\n"
            "      --out NAME                   where it goes (required)\n"
            "      --force                      overwrite\n"
            "      --a-very-long-flag-name PLACEHOLDER\n"
            "                                   help on a line of its own\n");
}

TEST(CommandHelpTest, WrapsLongFlagHelpAtTheDescriptionColumn) {
  static constexpr Flag kFlags[] = {
      {"--x", "X",
       "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"},
  };
  const Command demo = {.name = "demo",
                        .synopsis = "demo [--x X] and a synopsis too long to share its line",
                        .description = "what it does",
                        .flags = kFlags,
                        .run = nullptr};
  EXPECT_EQ(command_help(demo),
            "  demo [--x X] and a synopsis too long to share its line\n"
            "                                   what it does\n"
            "      --x X                        one two three four five six seven eight nine ten "
            "eleven twelve\n"
            "                                   thirteen fourteen\n");
}

}  // namespace
}  // namespace tuner::cli
