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

TEST(Strings, MemorySizesAsSlurmAndRayWriteThem) {
  EXPECT_EQ(parse_memory_size("512"), 512u);
  EXPECT_EQ(parse_memory_size("8K"), uint64_t{8} << 10);
  EXPECT_EQ(parse_memory_size("512M"), uint64_t{512} << 20);
  EXPECT_EQ(parse_memory_size("20G"), uint64_t{20} << 30);
  EXPECT_EQ(parse_memory_size("2T"), uint64_t{2} << 40);
  for (const char* bad : {"", "G", "-1G", "1.5G", "8GB", "8g", " 8G", "99999999999T"}) {
    EXPECT_EQ(parse_memory_size(bad), std::nullopt) << bad;
  }
}

}  // namespace tuner
