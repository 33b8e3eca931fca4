// Internal to static_layout.cc: the layout problem (sizes and live ranges of an expanded
// trace) and one function per algorithm. Each returns offsets in bytes (multiples of
// kAlignmentBytes); the caller fills the Layout and verifies it. Not a public API.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "xema/memory_trace.h"

namespace tessera::xema::internal {

struct LayoutProblem {
  std::vector<int64_t> bytes;
  std::vector<int> start, end;  // flat ops, inclusive
  int size() const { return static_cast<int>(bytes.size()); }
  bool Overlap(int i, int j) const { return start[i] <= end[j] && start[j] <= end[i]; }
};

LayoutProblem ProblemOf(const ExpandedTrace& x);
int64_t ArenaOf(const LayoutProblem& p, const std::vector<int64_t>& offsets);

enum class Fit { kBest, kFirst };
// Places instances in `order`; each goes to the smallest (kBest) or lowest (kFirst) gap
// between already-placed time-overlapping instances that fits, else above them all.
std::vector<int64_t> PlaceInOrder(const LayoutProblem& p, const std::vector<int>& order, Fit fit);

std::vector<int64_t> LayoutTflite(const LayoutProblem& p);
std::vector<int64_t> LayoutTflm(const LayoutProblem& p);
// *detail receives "spatial" or "temporal".
std::vector<int64_t> LayoutXla(const LayoutProblem& p, std::string* detail);

struct ExactResult {
  std::vector<int64_t> offsets;
  bool proven_optimal = false;
  std::string detail;
};
core::StatusOr<ExactResult> LayoutMilp(const LayoutProblem& p, double time_limit_s, bool shortcut);
ExactResult LayoutBrute(const LayoutProblem& p);

}  // namespace tessera::xema::internal
