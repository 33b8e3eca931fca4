#include "xema/pressure_intervals.h"

#include <algorithm>

#include "core/byte_size.h"

namespace tessera::xema {

core::StatusOr<PressureReport> FindPressureIntervals(const MemoryTrace& trace,
                                                     const ExpandedTrace& x, int64_t budget_bytes,
                                                     int64_t reserve_bytes) {
  if (budget_bytes <= 0) {
    return core::InvalidArgument("budget: got " + std::to_string(budget_bytes) +
                                 " bytes, must be > 0");
  }
  if (reserve_bytes < 0 || reserve_bytes > core::kMaxByteSize) {
    return core::InvalidArgument("reserve: got " + std::to_string(reserve_bytes) +
                                 " bytes, must be >= 0");
  }
  PressureReport r;
  r.budget_bytes = budget_bytes;
  r.reserve_bytes = reserve_bytes;
  r.weight_bytes = WeightBytes(x);
  if (budget_bytes < r.weight_bytes + reserve_bytes) {
    return core::InvalidArgument(
        "budget: got " + core::FormatBytes(budget_bytes) + " (" + std::to_string(budget_bytes) +
        " bytes), below the resident weights " + core::FormatBytes(r.weight_bytes) + " (" +
        std::to_string(r.weight_bytes) + " bytes) + reserve " + core::FormatBytes(reserve_bytes) +
        "; must be >= " + core::FormatBytes(r.weight_bytes + reserve_bytes));
  }
  r.available_bytes = budget_bytes - r.weight_bytes - reserve_bytes;
  const std::vector<int64_t> live = LiveBytes(x, /*include_weights=*/false);
  const int n = static_cast<int>(live.size());
  for (int t = 0; t < n; ++t) {
    r.peak_live_bytes = std::max(r.peak_live_bytes, live[t]);
    if (live[t] <= r.available_bytes) continue;
    ++r.ops_under_pressure;
    const int64_t excess = live[t] - r.available_bytes;
    const Phase phase = trace.op(x.ops[t].template_op).phase;
    if (r.intervals.empty() || r.intervals.back().last_op != t - 1) {
      PressureInterval iv;
      iv.first_op = t;
      iv.peak_op = t;
      r.intervals.push_back(iv);
    }
    PressureInterval& iv = r.intervals.back();
    iv.last_op = t;
    if (excess > iv.excess_bytes) {
      iv.excess_bytes = excess;
      iv.peak_op = t;
    }
    if (std::find(iv.phases.begin(), iv.phases.end(), phase) == iv.phases.end())
      iv.phases.push_back(phase);
    r.max_excess_bytes = std::max(r.max_excess_bytes, excess);
  }
  return r;
}

core::Json ToJson(const MemoryTrace& trace, const ExpandedTrace& x, const PressureReport& r) {
  core::Json intervals = core::Json::array();
  for (const PressureInterval& iv : r.intervals) {
    core::Json phases = core::Json::array();
    for (Phase p : iv.phases) phases.push_back(PhaseName(p));
    intervals.push_back({{"first_op", iv.first_op},
                         {"last_op", iv.last_op},
                         {"first_op_name", FlatOpName(trace, x.ops[iv.first_op])},
                         {"last_op_name", FlatOpName(trace, x.ops[iv.last_op])},
                         {"peak_op", iv.peak_op},
                         {"peak_op_name", FlatOpName(trace, x.ops[iv.peak_op])},
                         {"excess_bytes", iv.excess_bytes},
                         {"phases", std::move(phases)}});
  }
  return core::Json{{"trace", Describe(trace)},
                    {"budget_bytes", r.budget_bytes},
                    {"weight_bytes", r.weight_bytes},
                    {"reserve_bytes", r.reserve_bytes},
                    {"available_bytes", r.available_bytes},
                    {"peak_live_bytes", r.peak_live_bytes},
                    {"max_excess_bytes", r.max_excess_bytes},
                    {"ops", x.ops.size()},
                    {"ops_under_pressure", r.ops_under_pressure},
                    {"intervals", std::move(intervals)}};
}

}  // namespace tessera::xema
