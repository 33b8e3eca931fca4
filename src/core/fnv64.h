// Fnv64: the 64-bit FNV-1a hash, fed incrementally -- for fingerprints that must be equal
// across processes and runs (a model's shape, a plan, parameter digests), never for security.
// Multi-byte values hash their bytes in memory order (little-endian on every machine tessera
// builds for). Floats() folds two fp32 bit patterns into one 64-bit word per round, which is
// faster on weights and is a different hash from Bytes() over the same memory.
// Thread-safety: a value type; one instance per thread.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace tessera::core {

class Fnv64 {
 public:
  static constexpr uint64_t kOffset = 0xcbf29ce484222325ULL;
  static constexpr uint64_t kPrime = 0x100000001b3ULL;

  void Byte(uint8_t b) { h_ = (h_ ^ b) * kPrime; }
  void Bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ b[i]) * kPrime;
  }
  // The characters and a terminating zero byte (so "ab","c" differs from "a","bc").
  void Str(std::string_view s) {
    Bytes(s.data(), s.size());
    Byte(0);
  }
  void I64(int64_t v) { Bytes(&v, sizeof v); }
  void Floats(std::span<const float> v) {
    size_t i = 0;
    for (; i + 1 < v.size(); i += 2) {
      const uint64_t word =
          std::bit_cast<uint32_t>(v[i]) | (uint64_t{std::bit_cast<uint32_t>(v[i + 1])} << 32);
      h_ = (h_ ^ word) * kPrime;
    }
    if (i < v.size()) h_ = (h_ ^ std::bit_cast<uint32_t>(v[i])) * kPrime;
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = kOffset;
};

}  // namespace tessera::core
