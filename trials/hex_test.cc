#include "trials/hex.h"

#include <gtest/gtest.h>

namespace tuner {
namespace {

TEST(Hex, RoundTripsEveryByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  const std::string hex = to_hex(all);
  EXPECT_EQ(hex.substr(0, 6), "000102");
  EXPECT_EQ(hex.substr(hex.size() - 4), "feff");
  EXPECT_EQ(from_hex(hex), all);
}

TEST(Hex, AcceptsEitherCaseAndRefusesWhatIsNotHex) {
  EXPECT_EQ(from_hex("4A6b"), std::string("Jk"));
  EXPECT_EQ(from_hex(""), std::string());
  EXPECT_EQ(from_hex("abc"), std::nullopt);  // odd length
  EXPECT_EQ(from_hex("0g"), std::nullopt);
  EXPECT_EQ(from_hex("+1"), std::nullopt);
}

}  // namespace
}  // namespace tuner
