// Timeline: the live bytes of a trace op by op, as CSV for plotting (scripts/
// plot_xema_timeline.py draws it with the budget line) and for reading by eye.
//
// Columns: op (flat index), name (FlatOpName), section, step (-1 outside the body), phase,
// live_bytes (weights included: the allocator's view), weight_bytes, activation_bytes (live
// activations and workspaces), time_s (the op's recorded or modeled seconds), flops.
// One row per flat op, in order. Names are quoted when they contain a comma or a quote.
// Thread-safety: reentrant.
#pragma once

#include <string>

#include "xema/memory_trace.h"

namespace tessera::xema {

std::string TimelineCsv(const MemoryTrace& trace, const ExpandedTrace& x);

}  // namespace tessera::xema
