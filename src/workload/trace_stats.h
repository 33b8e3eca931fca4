// TraceStats: what a request trace (request_trace.h) asks of a server, as plain numbers:
//   requests, duration_s = (last timestamp - first timestamp) / 1000,
//   arrival_rate_per_s = requests / duration_s (0 when every request arrives at once),
//   input and output length percentiles (p50, p90, p99 by core::Percentile's linear
//   interpolation between order statistics, so a p50 may fall between two lengths; max exact),
//   input_tokens and output_tokens (totals), hash_blocks (the number of ids over all lines),
//   reused_blocks (ids already seen on an earlier line, in file order) and
//   prefix_reuse = reused_blocks / hash_blocks: the fraction of prompt blocks an unbounded
//   prefix cache would hold when the request arrives.
// ComputeTraceStats is a pure function of the requests (an empty trace gives all zeros).
// Plain values; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "workload/request_trace.h"

namespace tessera::workload {

struct LengthPercentiles {
  double p50 = 0, p90 = 0, p99 = 0;
  int64_t max = 0;
};

struct TraceStats {
  int64_t requests = 0;
  double duration_s = 0;
  double arrival_rate_per_s = 0;
  LengthPercentiles input_length, output_length;  // tokens
  int64_t input_tokens = 0, output_tokens = 0;
  int64_t hash_blocks = 0, reused_blocks = 0;
  double prefix_reuse = 0;  // reused_blocks / hash_blocks, in [0, 1]
};

TraceStats ComputeTraceStats(const std::vector<TraceRequest>& requests);

}  // namespace tessera::workload
