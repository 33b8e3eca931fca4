#include "workload/gzip_text.h"

#include <gtest/gtest.h>

#include <string>

namespace tessera::workload {
namespace {

std::string Text() {
  std::string s;
  for (int i = 0; i < 20000; ++i) s += "{\"timestamp\": " + std::to_string(i) + "}\n";
  return s;
}

TEST(Gzip, RoundTripsAndIsDeterministic) {
  const std::string text = Text();
  auto gz = Gzip(text);
  ASSERT_TRUE(gz.ok()) << gz.status().ToString();
  EXPECT_TRUE(IsGzip(*gz));
  EXPECT_FALSE(IsGzip(text));
  EXPECT_LT(gz->size(), text.size() / 4);
  auto again = Gzip(text);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*gz, *again);
  auto back = Gunzip(*gz, "t.gz", 1 << 30);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, text);
}

TEST(Gzip, EmptyTextRoundTrips) {
  auto gz = Gzip("");
  ASSERT_TRUE(gz.ok());
  auto back = Gunzip(*gz, "t.gz", 10);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, "");
}

TEST(Gzip, ConcatenatedMembersAreOneText) {
  auto a = Gzip("first\n");
  auto b = Gzip("second\n");
  ASSERT_TRUE(a.ok() && b.ok());
  auto back = Gunzip(*a + *b, "ab.gz", 1000);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, "first\nsecond\n");
}

TEST(Gzip, RefusesTruncatedCorruptAndOversizedData) {
  auto gz = Gzip(Text());
  ASSERT_TRUE(gz.ok());
  auto cut = Gunzip(gz->substr(0, gz->size() / 2), "cut.gz", 1 << 30);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("cut.gz: not a valid gzip file (truncated"),
            std::string::npos)
      << cut.status().message();
  std::string bad = *gz;
  bad[bad.size() - 6] ^= 0x5a;  // inside the CRC / length trailer
  auto corrupt = Gunzip(bad, "bad.gz", 1 << 30);
  ASSERT_FALSE(corrupt.ok());
  EXPECT_NE(corrupt.status().message().find("bad.gz: not a valid gzip file"), std::string::npos)
      << corrupt.status().message();
  auto big = Gunzip(*gz, "big.gz", 1000);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("more than 1000 bytes"), std::string::npos)
      << big.status().message();
}

}  // namespace
}  // namespace tessera::workload
