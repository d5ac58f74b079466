#include "util/strings.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "util/json_string.h"

namespace tuner {
namespace {

TEST(Join, PutsTheSeparatorBetweenItemsOnly) {
  EXPECT_EQ(join(std::vector<std::string>{}), "");
  EXPECT_EQ(join(std::vector<std::string>{"a"}), "a");
  EXPECT_EQ(join(std::vector<std::string>{"a", "b", "c"}), "a, b, c");
  EXPECT_EQ(join(std::vector<std::string_view>{"x", "", "y"}, "/"), "x//y");
}

TEST(Trim, CutsTheGivenCharactersAtBothEnds) {
  EXPECT_EQ(trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(trim(" \t "), "");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim("\nkey\n", " \t"), "\nkey\n");
  EXPECT_EQ(trim("--a-", "-"), "a");
}

TEST(JsonString, QuotesAndEscapes) {
  EXPECT_EQ(json_string("plain"), "\"plain\"");
  EXPECT_EQ(json_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
}

}  // namespace
TEST(Strings, ByteSizesReadAsPeopleWriteThem) {
  EXPECT_EQ(byte_size_text(17), "17 bytes");
  EXPECT_EQ(byte_size_text(3 * 1024), "3 KiB");
  EXPECT_EQ(byte_size_text(uint64_t{3} << 29), "1.5 GiB");
  EXPECT_EQ(byte_size_text(uint64_t{1} << 30), "1 GiB");
  EXPECT_EQ(byte_size_text(uint64_t{180} << 20), "180 MiB");
}

}  // namespace tuner
