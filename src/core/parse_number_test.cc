#include "core/parse_number.h"

#include <gtest/gtest.h>

#include <limits>

namespace tessera::core {
namespace {

TEST(ParseNumberTest, IntegersAreDecimalAndNeverWrap) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(*ParseInteger("010", 0, 100), 10);
  EXPECT_EQ(*ParseInteger("-5", -10, 10), -5);
  EXPECT_EQ(*ParseInteger("9223372036854775807", 0, kMax), kMax);
  for (const char* bad : {"", "-", "0x10", "1e3", "1.0", " 1", "1 ", "9223372036854775808", "-1",
                          "abc", "99999999999999999999"}) {
    auto r = ParseInteger(bad, 0, kMax);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("must be an integer from 0 to"), std::string::npos);
  }
  EXPECT_FALSE(ParseInteger("11", 0, 10).ok());
}

TEST(ParseNumberTest, NumbersAreFiniteAndInRange) {
  EXPECT_DOUBLE_EQ(*ParseNumber("1.5e2", 0, 1000), 150);
  EXPECT_DOUBLE_EQ(*ParseNumber("0", 0, 1), 0);
  EXPECT_FALSE(ParseNumber("0", 0, 1, /*lo_open=*/true).ok());
  for (const char* bad : {"nan", "NaN", "inf", "-inf", "1e400", "1e-400", "", "0x1p3", "1,5",
                          "1.5.2", "--1", "2000"}) {
    EXPECT_FALSE(ParseNumber(bad, -1000, 1000).ok()) << bad;
  }
  auto r = ParseNumber("-1", 0, 600, true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "got '-1', must be a finite number > 0 and <= 600");
  EXPECT_NE(ParseNumber(std::string(500, '9'), 0, 1).status().message().find("..."),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::core
