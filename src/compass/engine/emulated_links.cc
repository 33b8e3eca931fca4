#include "compass/engine/emulated_links.h"

#include <cmath>
#include <set>
#include <string>

namespace tessera::compass {

core::StatusOr<comm::PacedLinks> EmulatedLinks(const hw::Topology& topology,
                                               std::span<const int> device_of_rank,
                                               const runtime::TimeScale& scale) {
  const int n = static_cast<int>(device_of_rank.size());
  std::set<int> seen;
  for (int r = 0; r < n; ++r) {
    const int d = device_of_rank[r];
    if (d < 0 || d >= topology.num_devices()) {
      return core::InvalidArgument("rank " + std::to_string(r) + " placed on device " +
                                   std::to_string(d) + ", " + topology.name() + " has devices 0.." +
                                   std::to_string(topology.num_devices() - 1));
    }
    if (!seen.insert(d).second) {
      return core::InvalidArgument("device " + std::to_string(d) + " holds two ranks");
    }
  }
  comm::PacedLinks links;
  links.num_endpoints = n;
  for (const hw::Resource& r : topology.resources()) {
    links.resources.push_back({r.name, r.bw_bytes_per_s / scale.scale});
  }
  links.routes.resize(static_cast<size_t>(n) * n);
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      if (s == d) continue;
      const hw::Route& route = topology.route(device_of_rank[s], device_of_rank[d]);
      comm::PacedRoute& pr = links.routes[s * n + d];
      pr.resources = route.resources;
      pr.latency_ns = std::llround(route.latency_s * scale.scale * 1e9);
    }
  }
  RETURN_IF_ERROR(comm::Validate(links));
  return links;
}

}  // namespace tessera::compass
