// ParallelConfig theta = (q, h, k): split factors of one sequence's attention on the
// query axis (K/V all-gather), the head axis (Ulysses) and the key/value axis (ring).
// Its degree q*h*k is the number of ranks it runs on. (1,1,1) is a whole sequence.
//
// Rank layout inside a rank set R (ordered, |R| = q*h*k): member i has coordinates
//   hi = i % h, qi = (i / h) % q, ki = i / (h*q)
// so Ulysses groups are consecutive members (inside a node when possible), all-gather
// groups stride h, and ring neighbours stride q*h (usually across nodes).
//
// Rank-set family used by the planners (zellige.md leaves it open): aligned contiguous
// blocks of power-of-two size, i.e. {b*s, ..., b*s + s - 1} for s = 1, 2, 4, ... <= N;
// inside a node for s <= ranks_per_node, whole aligned groups of nodes above that.
// Plain values; thread-safe.
#pragma once

#include <algorithm>
#include <ranges>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::zellige {

struct ParallelConfig {
  int q = 1;
  int h = 1;
  int k = 1;
  int degree() const { return q * h * k; }
  bool whole() const { return degree() == 1; }
  std::string ToString() const;  // "(q,h,k)"
  bool operator==(const ParallelConfig&) const = default;
};

// Checks q, h, k >= 1, h divides `heads`, and degree == ranks.
core::Status ValidateConfig(const ParallelConfig& c, int heads, int ranks);
// Every (q,h,k) with q*h*k == degree and h dividing `heads`.
std::vector<ParallelConfig> ConfigsOfDegree(int degree, int heads);

// An aligned block of ranks: first, first+1, ..., first+size-1.
struct RankBlock {
  int first = 0;
  int size = 1;
  std::vector<int> Ranks() const;
  // The same ranks as a lazy range, for loops over a block: for (int r : b.RankRange()).
  auto RankRange() const { return std::views::iota(first, first + size); }
};
// values[r] += amount for every rank r of `block` (values: one entry per rank).
inline void AddToBlock(const RankBlock& block, double amount, std::vector<double>* values) {
  for (int r : block.RankRange()) (*values)[r] += amount;
}
// The largest values[r] over the ranks of `block`, or 0 if larger (for per-rank loads and
// memory, which are never negative).
inline double MaxOverBlock(const std::vector<double>& values, const RankBlock& block) {
  double mx = 0;
  for (int r : block.RankRange()) mx = std::max(mx, values[r]);
  return mx;
}
// The planners' rank-set family for N ranks: aligned power-of-two blocks. Sizes that are
// not a power of two (when N itself is not) are skipped; N = 24 gives sizes 1..16 only
// for blocks that fit.
std::vector<RankBlock> AlignedBlocks(int num_ranks);

}  // namespace tessera::zellige
