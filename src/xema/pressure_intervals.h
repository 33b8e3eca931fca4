// Memory-pressure intervals of a trace under a device budget: the short op ranges where the
// request needs more memory than the budget leaves, and by how much. Mitigation (offload,
// chunking, tiling) is applied only there and only by the excess.
//
//   B_a (available_bytes) = B (budget) - W (resident weights: every weight tensor, resident
//                           for the whole request) - R (workspace reserve: memory the trace
//                           does not show but the device needs, e.g. the CUDA context and
//                           library workspaces; default 0);
//   L(t) = bytes of non-weight tensors (activations and workspaces) live at flat op t;
//   an interval is a maximal range of consecutive flat ops with L(t) > B_a; its excess is
//   max over the range of L(t) - B_a (the bytes a mitigation must save inside it).
// B < W + R is InvalidArgument naming the three numbers. B_a == 0 is allowed (every op with a
// live activation is then under pressure).
// Pure function of its arguments; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "xema/memory_trace.h"

namespace tessera::xema {

struct PressureInterval {
  int first_op = 0;  // flat op index, inclusive
  int last_op = 0;   // flat op index, inclusive
  int64_t excess_bytes = 0;
  int peak_op = 0;            // first flat op where the excess is reached
  std::vector<Phase> phases;  // distinct phases of the ops in the range, in order
  int num_ops() const { return last_op - first_op + 1; }
};

struct PressureReport {
  int64_t budget_bytes = 0;
  int64_t weight_bytes = 0;
  int64_t reserve_bytes = 0;
  int64_t available_bytes = 0;   // B_a
  int64_t peak_live_bytes = 0;   // max L(t) (weights excluded)
  int64_t max_excess_bytes = 0;  // over all intervals, 0 when none
  int ops_under_pressure = 0;
  std::vector<PressureInterval> intervals;
};

// {"budget_bytes", "weight_bytes", "reserve_bytes", "available_bytes", "peak_live_bytes",
//  "max_excess_bytes", "ops", "ops_under_pressure", "trace": Describe(trace),
//  "intervals": [{"first_op", "last_op", "first_op_name", "last_op_name", "peak_op",
//                 "peak_op_name", "excess_bytes", "phases": ["vae"]}]}
core::Json ToJson(const MemoryTrace& trace, const ExpandedTrace& expanded,
                  const PressureReport& report);

core::StatusOr<PressureReport> FindPressureIntervals(const MemoryTrace& trace,
                                                     const ExpandedTrace& expanded,
                                                     int64_t budget_bytes,
                                                     int64_t reserve_bytes = 0);

}  // namespace tessera::xema
