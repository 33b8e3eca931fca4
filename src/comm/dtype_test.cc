#include "comm/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace tessera::comm {
namespace {

uint16_t Bits(float f) { return FloatToBf16(f).bits; }

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

TEST(DType, SizesNamesAndTraits) {
  EXPECT_EQ(DTypeSize(DType::kF32), 4);
  EXPECT_EQ(DTypeSize(DType::kBF16), 2);
  EXPECT_EQ(DTypeSize(DType::kI64), 8);
  EXPECT_EQ(DTypeSize(DType::kF64), 8);
  EXPECT_STREQ(DTypeName(DType::kBF16), "bf16");
  static_assert(kDTypeOf<float> == DType::kF32);
  static_assert(kDTypeOf<const Bf16> == DType::kBF16);
  static_assert(kDTypeOf<int64_t> == DType::kI64);
  static_assert(kDTypeOf<double> == DType::kF64);
  static_assert(!CommType<int>);
  static_assert(!CommType<uint16_t>);
}

TEST(Bf16, ExactValuesConvertExactly) {
  EXPECT_EQ(Bits(1.0f), 0x3F80);
  EXPECT_EQ(Bits(-2.0f), 0xC000);
  EXPECT_EQ(Bits(0.0f), 0x0000);
  EXPECT_EQ(Bits(-0.0f), 0x8000);
  EXPECT_EQ(Bf16ToFloat(Bf16{0x3FC0}), 1.5f);
  EXPECT_EQ(Bf16ToFloat(Bf16{0xC2F7}), -123.5f);
}

TEST(Bf16, RoundsToNearestTiesToEven) {
  // Below, at and above the halfway point between 1 (0x3F80) and 1 + 2^-7 (0x3F81).
  EXPECT_EQ(Bits(FromBits(0x3F807FFF)), 0x3F80);
  EXPECT_EQ(Bits(FromBits(0x3F808000)), 0x3F80);  // tie: 0x3F80 is even
  EXPECT_EQ(Bits(FromBits(0x3F808001)), 0x3F81);
  // Between 0x3F81 (odd) and 0x3F82: a tie rounds up.
  EXPECT_EQ(Bits(FromBits(0x3F818000)), 0x3F82);
  // Negative values mirror the positive ones.
  EXPECT_EQ(Bits(FromBits(0xBF808000)), 0xBF80);
  EXPECT_EQ(Bits(FromBits(0xBF818000)), 0xBF82);
  EXPECT_EQ(Bits(FromBits(0xBF808001)), 0xBF81);
  // Rounding up carries into the exponent: just below 2 becomes 2.
  EXPECT_EQ(Bits(FromBits(0x3FFFFFFF)), 0x4000);
  // Denormals round too.
  EXPECT_EQ(Bits(FromBits(0x00008000)), 0x0000);
  EXPECT_EQ(Bits(FromBits(0x00018000)), 0x0002);
}

TEST(Bf16, InfNanAndOverflow) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Bits(inf), 0x7F80);
  EXPECT_EQ(Bits(-inf), 0xFF80);
  EXPECT_EQ(Bits(std::numeric_limits<float>::max()), 0x7F80);  // rounds up past max bf16
  EXPECT_EQ(Bits(-std::numeric_limits<float>::max()), 0xFF80);
  EXPECT_EQ(Bits(FromBits(0x7F7F7FFF)), 0x7F7F);  // below the halfway point: max bf16
  // NaNs stay NaNs (quiet, sign kept), even a signalling NaN whose payload is in the low bits.
  EXPECT_EQ(Bits(std::numeric_limits<float>::quiet_NaN()), 0x7FC0);
  EXPECT_EQ(Bits(FromBits(0x7F800001)), 0x7FC0);
  EXPECT_EQ(Bits(FromBits(0xFF800001)), 0xFFC0);
  EXPECT_TRUE(std::isnan(Bf16ToFloat(Bf16{0x7FC1})));
  EXPECT_TRUE(std::isinf(Bf16ToFloat(Bf16{0xFF80})));
}

TEST(Bf16, EveryNonNanValueRoundTrips) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const Bf16 x{static_cast<uint16_t>(b)};
    const float f = Bf16ToFloat(x);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(f)))) << b;
    } else {
      EXPECT_EQ(FloatToBf16(f).bits, x.bits) << b;
    }
  }
}

}  // namespace
}  // namespace tessera::comm
