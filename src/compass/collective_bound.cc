#include "compass/collective_bound.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "core/check.h"

namespace tessera::compass {

CollectiveBound BoundCollective(const hw::Topology& t, std::span<const int> order,
                                CollectiveAlgo algo, double block_wire_bytes) {
  CHECK(block_wire_bytes >= 0) << "block_wire_bytes " << block_wire_bytes;
  std::vector<int> sorted(order.begin(), order.end());
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end())
      << "a collective's order names a device twice";
  CollectiveBound out;
  std::string chain_from;
  const int n = static_cast<int>(order.size());
  if (n < 2) return out;
  const std::vector<hw::Resource>& res = t.resources();
  std::vector<double> load(res.size(), 0);
  std::vector<double> min_latency(res.size(), std::numeric_limits<double>::infinity());
  // Per resource, the current origin's pieces whose first route crosses it: bytes, and the
  // smallest sum of route latencies among them (T_port; reset per origin).
  std::vector<double> port_bytes(res.size(), 0);
  std::vector<double> port_latency(res.size(), std::numeric_limits<double>::infinity());
  std::string port_binding;
  // One piece: `bytes` from position `from` along `hops` routes, each to the position
  // `step` further round the ring (direct: one route to `from + step`).
  auto piece = [&](int from, int step, int hops, double bytes) {
    double latency = 0, slowest = std::numeric_limits<double>::infinity();
    int at = from;
    for (int h = 0; h < hops; ++h) {
      const int to = ((at + step) % n + n) % n;
      const hw::Route& route = t.route(order[at], order[to]);
      latency += route.latency_s;
      for (int r : route.resources) {
        load[r] += bytes;
        min_latency[r] = std::min(min_latency[r], route.latency_s);
        slowest = std::min(slowest, res[r].bw_bytes_per_s);
      }
      at = to;
    }
    const hw::Route& first = t.route(order[from], order[((from + step) % n + n) % n]);
    for (int r : first.resources) {
      port_bytes[r] += bytes;
      port_latency[r] = std::min(port_latency[r], latency);
    }
    const double chain = latency + bytes / slowest;
    if (chain > out.t_chain_s) {
      out.t_chain_s = chain;
      chain_from = t.device_name(order[from]);
    }
  };
  for (int p = 0; p < n; ++p) {
    std::fill(port_bytes.begin(), port_bytes.end(), 0.0);
    std::fill(port_latency.begin(), port_latency.end(), std::numeric_limits<double>::infinity());
    switch (algo) {
      case CollectiveAlgo::kRing1:
        piece(p, 1, n - 1, block_wire_bytes);
        break;
      case CollectiveAlgo::kRing2:
        piece(p, 1, n - 1, block_wire_bytes / 2);
        piece(p, -1, n - 1, block_wire_bytes / 2);
        break;
      case CollectiveAlgo::kDirect:
        for (int s = 1; s < n; ++s) piece(p, s, 1, block_wire_bytes);
        break;
    }
    for (size_t r = 0; r < res.size(); ++r) {
      if (port_bytes[r] <= 0) continue;
      const double tp = port_bytes[r] / res[r].bw_bytes_per_s + port_latency[r];
      if (tp > out.t_port_s) {
        out.t_port_s = tp;
        port_binding = "port " + res[r].name;
      }
    }
  }
  std::string bw_binding;
  for (size_t r = 0; r < res.size(); ++r) {
    if (load[r] <= 0) continue;
    const double tr = load[r] / res[r].bw_bytes_per_s + min_latency[r];
    if (tr > out.t_bw_s) {
      out.t_bw_s = tr;
      bw_binding = res[r].name;
    }
  }
  out.bound_s = std::max({out.t_bw_s, out.t_chain_s, out.t_port_s});
  out.binding = out.bound_s == out.t_bw_s      ? bw_binding
                : out.bound_s == out.t_chain_s ? "chain from " + chain_from
                                               : port_binding;
  return out;
}

}  // namespace tessera::compass
