#include "serve/serve_metrics.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace tessera::serve {

double Percentile(std::deque<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(q * static_cast<double>(values.size()));
  const size_t i = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return values[std::min(i, values.size() - 1)];
}

void ServeMetrics::Record(int status, double latency_s, bool template_hit) {
  std::lock_guard<std::mutex> lock(mu_);
  ++by_status_[status];
  ++replies_;
  if (template_hit) ++template_hits_;
  if (status == 200) {
    latencies_s_.push_back(latency_s);
    if (latencies_s_.size() > kLatencyWindow) latencies_s_.pop_front();
  }
}

int64_t ServeMetrics::replies() const {
  std::lock_guard<std::mutex> lock(mu_);
  return replies_;
}

int64_t ServeMetrics::count(int status) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_status_.find(status);
  return it == by_status_.end() ? 0 : it->second;
}

core::Json ServeMetrics::ToJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  core::Json status = core::Json::object();
  for (const auto& [code, n] : by_status_) status[std::to_string(code)] = n;
  return {{"requests", replies_},
          {"status", status},
          {"template_hits", template_hits_},
          {"latency_p50_s", Percentile(latencies_s_, 0.50)},
          {"latency_p99_s", Percentile(latencies_s_, 0.99)},
          {"latency_samples", latencies_s_.size()}};
}

}  // namespace tessera::serve
