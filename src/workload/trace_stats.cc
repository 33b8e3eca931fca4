#include "workload/trace_stats.h"

#include <algorithm>
#include <unordered_set>

#include "core/stats.h"

namespace tessera::workload {
namespace {

LengthPercentiles Percentiles(const std::vector<double>& values) {
  LengthPercentiles p;
  if (values.empty()) return p;
  p.p50 = core::Percentile(values, 50);
  p.p90 = core::Percentile(values, 90);
  p.p99 = core::Percentile(values, 99);
  p.max = static_cast<int64_t>(*std::max_element(values.begin(), values.end()));
  return p;
}

}  // namespace

TraceStats ComputeTraceStats(const std::vector<TraceRequest>& requests) {
  TraceStats s;
  if (requests.empty()) return s;
  s.requests = static_cast<int64_t>(requests.size());
  s.duration_s =
      static_cast<double>(requests.back().timestamp_ms - requests.front().timestamp_ms) / 1000.0;
  s.arrival_rate_per_s = s.duration_s > 0 ? static_cast<double>(s.requests) / s.duration_s : 0;
  std::vector<double> in, out;
  in.reserve(requests.size());
  out.reserve(requests.size());
  std::unordered_set<int64_t> seen;
  for (const TraceRequest& r : requests) {
    in.push_back(static_cast<double>(r.input_length));
    out.push_back(static_cast<double>(r.output_length));
    s.input_tokens += r.input_length;
    s.output_tokens += r.output_length;
    s.hash_blocks += static_cast<int64_t>(r.hash_ids.size());
    // Ids of this request count as reused only if an earlier request had them.
    for (int64_t id : r.hash_ids) s.reused_blocks += seen.count(id) > 0;
    seen.insert(r.hash_ids.begin(), r.hash_ids.end());
  }
  s.input_length = Percentiles(in);
  s.output_length = Percentiles(out);
  s.prefix_reuse = s.hash_blocks > 0
                       ? static_cast<double>(s.reused_blocks) / static_cast<double>(s.hash_blocks)
                       : 0;
  return s;
}

}  // namespace tessera::workload
