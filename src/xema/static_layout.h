// Static memory layout: one byte offset per tensor instance of an expanded trace, inside one
// arena, such that two instances whose lifetimes overlap (both live at some flat op; see
// memory_trace.h) never overlap in memory. Known lifetimes make this offline "dynamic storage
// allocation" (NP-hard); the heuristics below are the ones production frameworks use, plus an
// exact MILP and an exhaustive search for small traces. Offsets and sizes are multiples of
// kAlignmentBytes (512). Arena sizes are compared with LowerBoundBytes (peak live bytes).
//
// Algorithms (by name; adding one is a function plus one line in the table of
// static_layout.cc):
//   tflite  TFLite ArenaPlanner: instances by size descending, ties by alloc op; each takes
//           the smallest gap between already-placed time-overlapping instances that fits,
//           else the end (above the highest of them).
//   tflm    TFLM GreedyMemoryPlanner: size descending (ties by alloc op); the FIRST (lowest)
//           gap that fits, else the end.
//   xla     XLA GlobalDecreasingSizeBestFitHeap: best fit as tflite, in two orders: spatial
//           (size descending, then live length descending) and temporal (live length
//           descending, then size descending); the smaller arena wins.
//   milp    exact over CBC (solver/): continuous offsets, one binary per time-overlapping pair
//           with big-M non-overlap rows (M = the best greedy arena), minimise the arena;
//           warm-started from the best greedy, so never worse; optimal when CBC proves it
//           within options.milp_time_limit_s. Only for <= options.milp_max_tensors instances.
//   brute   exhaustive: every order of instances, each stacked on the time-overlapping ones
//           placed before it, with pruning (optimal; an optimal layout compacted downwards is
//           such a stacking). Tests only, <= options.brute_max_tensors instances.
// Thread-safety: all functions are reentrant (milp serialises inside CBC).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "xema/memory_trace.h"

namespace tessera::xema {

// The greedy layouts compare each instance with every placed one (O(n^2): ~36 ms for 6,600
// instances on the 2-core VM, so ~10 s at this limit); larger traces are refused.
inline constexpr int kMaxLayoutInstances = 100'000;

struct LayoutOptions {
  double milp_time_limit_s = 10.0;
  int milp_max_tensors = 60;
  // milp returns the best greedy layout unsolved when it meets the lower bound (then it is
  // optimal); false always solves (tests of the MILP itself).
  bool milp_shortcut = true;
  int brute_max_tensors = 9;
};

struct Layout {
  std::string algorithm;
  std::vector<int64_t> offsets;  // bytes, one per ExpandedTrace::tensors entry
  int64_t arena_bytes = 0;       // max(offset + bytes), 0 for no tensors
  bool proven_optimal = false;   // milp with a proof, brute
  double time_ms = 0;            // wall-clock time of planning
  std::string detail;            // e.g. "xla temporal", "milp: feasible, gap 3.1%"
};

// The algorithms PlanLayout accepts, in table order: tflite, tflm, xla, milp, brute.
std::vector<std::string> LayoutAlgorithmNames();

// Plans with one algorithm. InvalidArgument for an unknown name (listing the names) or a
// trace too large (kMaxLayoutInstances; milp and brute: their option limits), naming the
// count and the limit.
core::StatusOr<Layout> PlanLayout(const ExpandedTrace& x, const std::string& algorithm,
                                  const LayoutOptions& options = {});

// `all`: tflite, tflm, xla, then milp when the trace is small enough (else skipped, and
// *skipped receives why). Each layout is verified.
core::StatusOr<std::vector<Layout>> PlanAllLayouts(const ExpandedTrace& x,
                                                   const LayoutOptions& options = {},
                                                   std::string* skipped = nullptr);

// OK, or FailedPrecondition naming the first two instances found that overlap in memory while
// both live (or an offset that is negative, unaligned, or beyond arena_bytes).
core::Status VerifyLayout(const MemoryTrace& trace, const ExpandedTrace& x, const Layout& layout);

// {"algorithm", "arena_bytes", "ratio_to_lower_bound", "time_ms", "proven_optimal",
//  "detail"}: one row of a comparison (no offsets).
core::Json SummaryJson(const Layout& layout, int64_t lower_bound_bytes);

// {"format": "tessera.xema.layout/1", "algorithm", "arena_bytes", "lower_bound_bytes",
//  "alignment_bytes", "trace": Describe(trace),
//  "tensors": [{"tensor", "name", "step", "bytes", "alloc_op", "free_op", "offset"}]}
core::Json LayoutToJson(const MemoryTrace& trace, const ExpandedTrace& x, const Layout& layout);

}  // namespace tessera::xema
