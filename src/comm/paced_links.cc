#include "comm/paced_links.h"

#include <cmath>

namespace tessera::comm {

PacedLinks FullMeshLinks(int n, double bytes_per_s, int64_t latency_ns) {
  PacedLinks links;
  links.num_endpoints = n;
  links.routes.resize(static_cast<size_t>(n) * n);
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      if (s == d) continue;
      links.routes[s * n + d] = {{static_cast<int>(links.resources.size())}, latency_ns};
      links.resources.push_back({std::to_string(s) + "->" + std::to_string(d), bytes_per_s});
    }
  }
  return links;
}

core::Status Validate(const PacedLinks& links) {
  const int n = links.num_endpoints;
  if (n < 1 || n > PacedLinks::kMaxEndpoints) {
    return core::InvalidArgument("paced links: num_endpoints " + std::to_string(n) +
                                 ", must be in [1, " + std::to_string(PacedLinks::kMaxEndpoints) +
                                 "]");
  }
  if (links.resources.size() > static_cast<size_t>(PacedLinks::kMaxResources)) {
    return core::InvalidArgument("paced links: " + std::to_string(links.resources.size()) +
                                 " resources, at most " +
                                 std::to_string(PacedLinks::kMaxResources));
  }
  for (size_t r = 0; r < links.resources.size(); ++r) {
    const double bw = links.resources[r].bytes_per_s;
    if (!std::isfinite(bw) || bw <= 0) {
      return core::InvalidArgument("paced links: resource '" + links.resources[r].name +
                                   "' has bandwidth " + std::to_string(bw) +
                                   " bytes/s, must be finite and > 0");
    }
  }
  if (links.routes.size() != static_cast<size_t>(n) * n) {
    return core::InvalidArgument("paced links: " + std::to_string(links.routes.size()) +
                                 " routes, need num_endpoints^2 = " + std::to_string(n * n));
  }
  constexpr int64_t kMaxLatencyNs = PacedLinks::kMaxLatencyNs;
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      const PacedRoute& rt = links.route(s, d);
      const std::string where =
          "paced links: route " + std::to_string(s) + "->" + std::to_string(d);
      if (rt.latency_ns < 0 || rt.latency_ns > kMaxLatencyNs) {
        return core::InvalidArgument(where + " latency " + std::to_string(rt.latency_ns) +
                                     " ns, must be in [0, 1e10]");
      }
      for (int r : rt.resources) {
        if (r < 0 || r >= static_cast<int>(links.resources.size())) {
          return core::InvalidArgument(where + " names resource " + std::to_string(r) +
                                       ", not in [0, " + std::to_string(links.resources.size()) +
                                       ")");
        }
      }
      if (s != d && rt.resources.empty()) {
        return core::InvalidArgument(where + " crosses no resource");
      }
    }
  }
  if (links.packet_bytes < 512 || links.packet_bytes > (int64_t{1} << 30)) {
    return core::InvalidArgument("paced links: packet_bytes " + std::to_string(links.packet_bytes) +
                                 ", must be in [512, 2^30]");
  }
  return core::Status::Ok();
}

}  // namespace tessera::comm
