// Seeded choices shared by the refscenes generator and the backends' error knobs: shuffles and
// picks over core::Rng (portable, unlike std::shuffle), and stateless hashes that turn (seed,
// key text, salt) into a uniform number, so that a backend's random decision for a prompt does
// not depend on which prompts came before it.
// Thread-safety: pure functions (the rng is the caller's).
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "core/rng.h"

namespace tessera::tarot {

template <typename T>
void Shuffle(core::Rng& rng, std::vector<T>& v) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.Below(i)]);
}

template <typename T>
const T& Pick(core::Rng& rng, const std::vector<T>& v) {
  return v[rng.Below(v.size())];
}

// Uniform integer in [lo, hi].
inline int UniformInt(core::Rng& rng, int lo, int hi) {
  return lo + static_cast<int>(rng.Below(static_cast<uint64_t>(hi - lo + 1)));
}

// SplitMix64's finaliser.
inline uint64_t MixBits(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A hash of (seed, text, salt); FNV-1a over the text, then mixed.
inline uint64_t KeyHash(uint64_t seed, std::string_view text, uint64_t salt = 0) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ULL;
  return MixBits(seed ^ MixBits(h + MixBits(salt + 0x9E3779B97F4A7C15ULL)));
}

// Uniform in [0, 1) from a hash.
inline double HashUniform(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

}  // namespace tessera::tarot
