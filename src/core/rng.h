// Rng: a small, seeded, counter-based random generator (SplitMix64 over a counter).
// Deterministic across platforms and compilers: the same seed gives the same stream,
// unlike std::uniform_*_distribution whose algorithms are implementation-defined.
// Random access: BitsAt(i) is the value the (i+1)-th NextU64 of a fresh Rng of the same seed
// returns, so element i of a large tensor can draw its bits without the i draws before it, in
// any order and on any rank; Keyed() names a stream by several words (e.g. step, micro-batch,
// layer, op), so that bits depend on global ids only, never on who computes them.
// Not thread-safe; give each thread its own Rng (e.g. Rng(seed).Fork(thread_id)). The const
// members (BitsAt, UniformAt, Fork, Keyed) are pure and may be called concurrently.
#pragma once

#include <cstdint>
#include <initializer_list>

namespace tessera::core {

class Rng {
 public:
  explicit Rng(uint64_t seed) : seed_(seed) {}

  // Next 64 random bits.
  uint64_t NextU64() { return BitsAt(counter_++); }
  // Random access without advancing: the (i+1)-th NextU64 of a fresh Rng(seed).
  uint64_t BitsAt(uint64_t i) const { return Mix(seed_ + (i + 1) * 0x9E3779B97F4A7C15ULL); }
  // Uniform double in [0, 1) from BitsAt(i) (what Uniform() draws as its (i+1)-th value).
  double UniformAt(uint64_t i) const { return static_cast<double>(BitsAt(i) >> 11) * 0x1.0p-53; }
  // Uniform double in [0, 1).
  double Uniform() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }
  // Uniform double in [lo, hi).
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  // Uniform integer in [0, n), n > 0 (Lemire-free modulo; bias < 2^-40 for n < 2^24).
  uint64_t Below(uint64_t n) { return NextU64() % n; }
  // Standard normal by Box-Muller.
  double Normal();
  // An independent stream derived from this seed and `stream`.
  Rng Fork(uint64_t stream) const { return Rng(Mix(seed_ ^ Mix(stream + 0x1234567ULL))); }
  // The stream named by the words of `key` in order: Fork(key[0]).Fork(key[1])...; order
  // matters ({1, 2} and {2, 1} are different streams).
  Rng Keyed(std::initializer_list<uint64_t> key) const {
    Rng r = *this;
    for (uint64_t word : key) r = r.Fork(word);
    return r;
  }

 private:
  static uint64_t Mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  uint64_t seed_;
  uint64_t counter_ = 0;
};

}  // namespace tessera::core
