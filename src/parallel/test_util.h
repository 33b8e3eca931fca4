// Seeded random sequence shards for the parallel layer's tests: rows per member and sequence
// (empty shards included) and a member's packed local row offsets (sequences in a random
// order with random gaps between them). Test-only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/rng.h"
#include "parallel/sequence_shards.h"

namespace tessera::parallel::testing {

// Uniform integer in [lo, hi].
inline int64_t RandomInt(core::Rng& rng, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(hi - lo + 1)));
}

// 1..4 members, 1..4 sequences, rows[m][s] uniform in [0, 4] with about a third of them
// forced to 0 (empty shards).
inline SequenceShards RandomShards(core::Rng& rng) {
  const int members = static_cast<int>(RandomInt(rng, 1, 4));
  const int sequences = static_cast<int>(RandomInt(rng, 1, 4));
  SequenceShards sh;
  sh.rows.assign(members, std::vector<int64_t>(sequences));
  for (auto& member_rows : sh.rows)
    for (int64_t& r : member_rows) r = rng.Below(3) == 0 ? 0 : RandomInt(rng, 0, 4);
  return sh;
}

// Offsets of `rows` (one count per sequence) in a packed buffer: a random order with gaps of
// 0..2 rows; *total_rows gets the buffer's row count.
inline std::vector<int64_t> RandomOffsets(core::Rng& rng, const std::vector<int64_t>& rows,
                                          int64_t* total_rows) {
  std::vector<int> order(rows.size());
  std::iota(order.begin(), order.end(), 0);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);
  std::vector<int64_t> offsets(rows.size());
  int64_t pos = 0;
  for (int s : order) {
    pos += static_cast<int64_t>(rng.Below(3));
    offsets[s] = pos;
    pos += rows[s];
  }
  *total_rows = pos + static_cast<int64_t>(rng.Below(3));
  return offsets;
}

inline std::vector<float> RandomFloats(core::Rng& rng, int64_t n) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.Uniform(-1.0, 1.0));
  return v;
}

inline std::vector<const float*> ConstPtrs(const std::vector<std::vector<float>>& v) {
  std::vector<const float*> p;
  for (const auto& x : v) p.push_back(x.data());
  return p;
}

inline std::vector<float*> Ptrs(std::vector<std::vector<float>>& v) {
  std::vector<float*> p;
  for (auto& x : v) p.push_back(x.data());
  return p;
}

}  // namespace tessera::parallel::testing
