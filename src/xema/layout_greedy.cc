// The greedy layouts: TFLite ArenaPlanner, TFLM GreedyMemoryPlanner, XLA best-fit heap.
#include <algorithm>
#include <numeric>

#include "xema/layout_algorithms.h"

namespace tessera::xema::internal {

LayoutProblem ProblemOf(const ExpandedTrace& x) {
  LayoutProblem p;
  for (const FlatTensor& f : x.tensors) {
    p.bytes.push_back(f.bytes);
    p.start.push_back(f.alloc_op);
    p.end.push_back(f.free_op);
  }
  return p;
}

int64_t ArenaOf(const LayoutProblem& p, const std::vector<int64_t>& offsets) {
  int64_t arena = 0;
  for (int i = 0; i < p.size(); ++i) arena = std::max(arena, offsets[i] + p.bytes[i]);
  return arena;
}

std::vector<int64_t> PlaceInOrder(const LayoutProblem& p, const std::vector<int>& order, Fit fit) {
  std::vector<int64_t> offsets(p.size(), 0);
  std::vector<int> placed;  // sorted by offset
  placed.reserve(p.size());
  for (int i : order) {
    int64_t cur = 0;
    int64_t best = -1, best_gap = INT64_MAX;
    for (int j : placed) {
      if (!p.Overlap(i, j)) continue;
      const int64_t gap = offsets[j] - cur;
      if (gap >= p.bytes[i] && gap < best_gap) {
        best = cur;
        best_gap = gap;
        if (fit == Fit::kFirst) break;
      }
      cur = std::max(cur, offsets[j] + p.bytes[j]);
    }
    offsets[i] = best >= 0 ? best : cur;
    auto pos = std::upper_bound(placed.begin(), placed.end(), offsets[i],
                                [&](int64_t o, int j) { return o < offsets[j]; });
    placed.insert(pos, i);
  }
  return offsets;
}

namespace {

std::vector<int> Order(const LayoutProblem& p, bool (*less)(const LayoutProblem&, int, int)) {
  std::vector<int> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return less(p, a, b); });
  return order;
}

bool SizeThenAlloc(const LayoutProblem& p, int a, int b) {
  if (p.bytes[a] != p.bytes[b]) return p.bytes[a] > p.bytes[b];
  return p.start[a] < p.start[b];
}

int Length(const LayoutProblem& p, int i) { return p.end[i] - p.start[i] + 1; }

bool SpatialOrder(const LayoutProblem& p, int a, int b) {
  if (p.bytes[a] != p.bytes[b]) return p.bytes[a] > p.bytes[b];
  if (Length(p, a) != Length(p, b)) return Length(p, a) > Length(p, b);
  return p.start[a] < p.start[b];
}

bool TemporalOrder(const LayoutProblem& p, int a, int b) {
  if (Length(p, a) != Length(p, b)) return Length(p, a) > Length(p, b);
  if (p.bytes[a] != p.bytes[b]) return p.bytes[a] > p.bytes[b];
  return p.start[a] < p.start[b];
}

}  // namespace

std::vector<int64_t> LayoutTflite(const LayoutProblem& p) {
  return PlaceInOrder(p, Order(p, SizeThenAlloc), Fit::kBest);
}

std::vector<int64_t> LayoutTflm(const LayoutProblem& p) {
  return PlaceInOrder(p, Order(p, SizeThenAlloc), Fit::kFirst);
}

std::vector<int64_t> LayoutXla(const LayoutProblem& p, std::string* detail) {
  std::vector<int64_t> spatial = PlaceInOrder(p, Order(p, SpatialOrder), Fit::kBest);
  std::vector<int64_t> temporal = PlaceInOrder(p, Order(p, TemporalOrder), Fit::kBest);
  if (ArenaOf(p, temporal) < ArenaOf(p, spatial)) {
    *detail = "temporal";
    return temporal;
  }
  *detail = "spatial";
  return spatial;
}

}  // namespace tessera::xema::internal
