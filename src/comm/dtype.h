// DType: the element types the Communicator collectives move and reduce, and the bf16
// storage type with its float conversions.
//
//   DType   C++ type  bytes  sum (AllReduceSum, ReduceScatter)
//   kF32    float     4      fp32
//   kBF16   Bf16      2      accumulated in fp32, rounded to nearest even back to bf16
//   kI64    int64_t   8      exact (must not overflow)
//   kF64    double    8      fp64
//
// Bf16 is the upper half of an IEEE-754 binary32 (1 sign, 8 exponent, 7 mantissa bits), kept
// as its raw uint16_t bits; it has no arithmetic of its own: convert with Bf16ToFloat /
// FloatToBf16. FloatToBf16 rounds to nearest, ties to even; overflow gives +-inf; inf
// passes through; a NaN stays a NaN (quiet, sign kept). All functions are pure and thread-safe.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

namespace tessera::comm {

enum class DType { kF32, kBF16, kI64, kF64 };

// bf16 storage: the raw bits. Equality compares bits (so NaN == NaN with the same bits).
struct Bf16 {
  uint16_t bits = 0;
  friend constexpr bool operator==(Bf16 a, Bf16 b) { return a.bits == b.bits; }
};
static_assert(sizeof(Bf16) == 2 && std::is_trivially_copyable_v<Bf16>);

constexpr float Bf16ToFloat(Bf16 x) {
  return std::bit_cast<float>(static_cast<uint32_t>(x.bits) << 16);
}

constexpr Bf16 FloatToBf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) {  // NaN: keep sign and top payload bits, force quiet
    return Bf16{static_cast<uint16_t>((u >> 16) | 0x0040u)};
  }
  u += 0x7FFFu + ((u >> 16) & 1u);  // round to nearest, ties to even (carries into exponent)
  return Bf16{static_cast<uint16_t>(u >> 16)};
}

// Bytes per element.
constexpr int64_t DTypeSize(DType t) {
  switch (t) {
    case DType::kF32:
      return 4;
    case DType::kBF16:
      return 2;
    case DType::kI64:
    case DType::kF64:
      return 8;
  }
  return 0;
}

// "f32", "bf16", "i64", "f64".
constexpr const char* DTypeName(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kBF16:
      return "bf16";
    case DType::kI64:
      return "i64";
    case DType::kF64:
      return "f64";
  }
  return "?";
}

// DTypeOf<T>::value is the DType of a supported element type; CommType<T> says whether T is one.
template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> : std::integral_constant<DType, DType::kF32> {};
template <>
struct DTypeOf<Bf16> : std::integral_constant<DType, DType::kBF16> {};
template <>
struct DTypeOf<int64_t> : std::integral_constant<DType, DType::kI64> {};
template <>
struct DTypeOf<double> : std::integral_constant<DType, DType::kF64> {};

template <typename T>
concept CommType = requires {
  DTypeOf<std::remove_cv_t<T>>::value;
};

template <CommType T>
inline constexpr DType kDTypeOf = DTypeOf<std::remove_cv_t<T>>::value;

}  // namespace tessera::comm
