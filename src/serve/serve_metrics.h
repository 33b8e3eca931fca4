// ServeMetrics: what GET /v1/metrics reports about a server's generation requests: replies
// per HTTP status, template hits, and the latency (arrival to reply, seconds) of successful
// replies as p50 / p99 over the last kLatencyWindow of them (nearest-rank percentiles).
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>

#include "core/json_util.h"

namespace tessera::serve {

inline constexpr size_t kLatencyWindow = 10000;

// Nearest-rank percentile (q in [0, 1]) of `values`; 0 when empty.
double Percentile(std::deque<double> values, double q);

class ServeMetrics {
 public:
  // One reply; latency_s counted only for status 200.
  void Record(int status, double latency_s, bool template_hit);
  int64_t replies() const;
  int64_t count(int status) const;
  // {"requests": n, "status": {"200": n, ...}, "template_hits": n, "latency_p50_s",
  //  "latency_p99_s", "latency_samples"}
  core::Json ToJson() const;

 private:
  mutable std::mutex mu_;
  std::map<int, int64_t> by_status_;
  int64_t replies_ = 0;
  int64_t template_hits_ = 0;
  std::deque<double> latencies_s_;
};

}  // namespace tessera::serve
