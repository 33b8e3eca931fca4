#include "core/byte_size.h"

#include <gtest/gtest.h>

namespace tessera::core {
namespace {

TEST(ByteSizeTest, ParsesUnits) {
  EXPECT_EQ(*ParseByteSize("4096"), 4096);
  EXPECT_EQ(*ParseByteSize("512MiB"), int64_t{512} << 20);
  EXPECT_EQ(*ParseByteSize("512 MiB"), int64_t{512} << 20);
  EXPECT_EQ(*ParseByteSize("1KiB"), 1024);
  EXPECT_EQ(*ParseByteSize("1.5GiB"), int64_t{3} << 29);
  EXPECT_EQ(*ParseByteSize("80GB"), int64_t{80'000'000'000});
  EXPECT_EQ(*ParseByteSize("2TiB"), int64_t{2} << 40);
  EXPECT_EQ(*ParseByteSize("10B"), 10);
  EXPECT_EQ(*ParseByteSize("0.5KB"), 500);
}

TEST(ByteSizeTest, RefusesWithOneLine) {
  for (const char* bad : {"", "abc", "-1MiB", "1XB", "1 gib", "1..5GiB", ".", "1e3", "MiB",
                          "1  MiB", "nan", "99999999999999999999999TiB", "5 "}) {
    auto r = ParseByteSize(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("got '" + std::string(bad) + "', must be a size"),
              std::string::npos)
        << r.status().message();
  }
  EXPECT_FALSE(ParseByteSize("0", 1).ok());
  EXPECT_FALSE(ParseByteSize("2KiB", 0, 1024).ok());
}

TEST(ByteSizeTest, Formats) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(int64_t{512} << 20), "512 MiB");
  EXPECT_EQ(FormatBytes(int64_t{80} << 30), "80 GiB");
  EXPECT_EQ(FormatBytes(-2048), "-2 KiB");
}

}  // namespace
}  // namespace tessera::core
