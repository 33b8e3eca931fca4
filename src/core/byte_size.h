// Byte sizes a user types ("512MiB", "80GB", "1.5 GiB", "4096") and how messages show them.
//
//   ParseByteSize(text, lo, hi): a non-negative decimal number (digits, optional fraction)
//     followed by an optional unit: B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB
//     (powers of 1000); no unit means bytes; one space may separate number and unit; units
//     are case-sensitive (GB is not GiB). A fractional result is rounded to the nearest byte.
//     The value must lie in [lo, hi] bytes. Errors are InvalidArgument "got 'TEXT', must be
//     ..." (the caller prefixes the option or field name); values beyond 2^62 bytes are
//     refused, never wrapped.
//   FormatBytes(bytes): "0 B", "512 B", "1.5 KiB", "512 MiB", "80 GiB" (binary units, up to
//     three significant decimals, trailing zeros dropped); negative values keep their sign.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace tessera::core {

inline constexpr int64_t kMaxByteSize = int64_t{1} << 62;

StatusOr<int64_t> ParseByteSize(const std::string& text, int64_t lo = 0, int64_t hi = kMaxByteSize);
std::string FormatBytes(int64_t bytes);

}  // namespace tessera::core
