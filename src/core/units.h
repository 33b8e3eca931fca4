// Byte-size units: binary (KiB, MiB, GiB = powers of 1024) and decimal (KB, MB, GB =
// powers of 1000). Use them to build and print quantities whose name carries the unit:
// `80 * core::kGiB` bytes of device memory, `bw_bytes_per_s / core::kGB` GB/s.
// The double constants are exact (powers of two and of ten below 2^53); the int64 variants
// are for integer byte counts. Compile-time constants; thread-safe.
#pragma once

#include <cstdint>

namespace tessera::core {

// Binary sizes, in bytes.
inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * kKiB;
inline constexpr double kGiB = 1024.0 * kMiB;
// Decimal sizes, in bytes (link and memory bandwidths are quoted in these: GB/s).
inline constexpr double kKB = 1e3;
inline constexpr double kMB = 1e6;
inline constexpr double kGB = 1e9;

// Integer variants of the binary sizes, in bytes.
inline constexpr int64_t kKiBInt64 = int64_t{1} << 10;
inline constexpr int64_t kMiBInt64 = int64_t{1} << 20;
inline constexpr int64_t kGiBInt64 = int64_t{1} << 30;

}  // namespace tessera::core
