#include "compass/engine/links_report.h"

#include <algorithm>
#include <memory>

#include "comm/shared_barrier.h"
#include "compass/engine/link_runtime.h"

namespace tessera::compass {

core::Status CheckLinksRanks(const hw::Topology& topology, int ranks) {
  if (ranks < 2 || ranks > topology.num_devices()) {
    return core::InvalidArgument("ranks: got " + std::to_string(ranks) + ", must be in [2, " +
                                 std::to_string(topology.num_devices()) + "] for " +
                                 topology.name());
  }
  return core::Status::Ok();
}

core::StatusOr<LinksReport> RunLinksCheck(comm::Communicator& world, const hw::Topology& topology,
                                          const LinksOptions& options) {
  const int n = world.size();
  RETURN_IF_ERROR(CheckLinksRanks(topology, n));
  LinksReport out;
  out.topology = topology.name();
  out.provenance = topology.provenance();
  // 1. Time scale: rank 0 measures while the others sleep on a futex barrier.
  ASSIGN_OR_RETURN(out.scale, AgreeTimeScale(world, topology, options.time_scale));
  // 2. Probes on the fastest and the slowest device pair among devices 0..n-1.
  int fs = 0, fd = 1, ss = 0, sd = 1;
  double fast = -1, slow = -1;
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      if (s == d) continue;
      const double bw = topology.route(s, d).bw_bytes_per_s;
      if (fast < 0 || bw > fast) fast = bw, fs = s, fd = d;
      if (slow < 0 || bw < slow) slow = bw, ss = s, sd = d;
    }
  }
  std::vector<std::pair<int, int>> pairs = {{fs, fd}};
  if (slow < fast) pairs.push_back({ss, sd});
  // The fixed delivery overhead, at the slowest pair's latency.
  const int64_t slow_latency_ns = static_cast<int64_t>(
      topology.route(pairs.back().first, pairs.back().second).latency_s * out.scale.scale * 1e9);
  ASSIGN_OR_RETURN(out.calibrated_lead_ns, CalibrateWakeLeadNs(world, slow_latency_ns));
  for (size_t k = 0; k < pairs.size(); ++k) {
    const auto [s, d] = pairs[k];
    const hw::Route& route = topology.route(s, d);
    LinkProbe p;
    p.src_device = s;
    p.dst_device = d;
    p.bw_bytes_per_s = route.bw_bytes_per_s;
    p.latency_s = route.latency_s;
    std::string via;
    for (int r : route.resources) via += (via.empty() ? "" : ", ") + topology.resources()[r].name;
    p.label = std::string(k == 0 ? "fastest" : "slowest") + " pair " + std::to_string(s) + "->" +
              std::to_string(d) + " (" + via + ")";
    LinkProbeConfig c;
    c.bw_bytes_per_s = p.bw_bytes_per_s / out.scale.scale;
    c.latency_ns = static_cast<int64_t>(p.latency_s * out.scale.scale * 1e9);
    c.bytes = options.probe_bytes;
    c.repeats = options.probe_repeats;
    ASSIGN_OR_RETURN(p.raw, MeasureLinkAccuracy(world, c));
    c.wake_lead_ns = out.calibrated_lead_ns;
    ASSIGN_OR_RETURN(p.calibrated, MeasureLinkAccuracy(world, c));
    out.probes.push_back(p);
  }
  // 3. The collectives.
  CollectiveBenchConfig bench = options.bench;
  bench.wake_lead_ns = out.calibrated_lead_ns;
  ASSIGN_OR_RETURN(out.bench, RunCollectiveBench(world, topology, out.scale, bench));
  return out;
}

core::Json ToJson(const LinksReport& r) {
  core::Json probes = core::Json::array();
  for (const LinkProbe& p : r.probes) {
    probes.push_back({{"label", p.label},
                      {"src_device", p.src_device},
                      {"dst_device", p.dst_device},
                      {"device_bw_bytes_per_s", p.bw_bytes_per_s},
                      {"device_latency_s", p.latency_s},
                      {"emulated_raw", ToJson(p.raw)},
                      {"emulated_calibrated", ToJson(p.calibrated)}});
  }
  return {{"kind", "compass-links"},
          {"topology", r.topology},
          {"provenance", r.provenance},
          {"time_scale", r.scale.scale},
          {"time_scale_source", r.scale.source},
          {"calibrated_wake_lead_ns", r.calibrated_lead_ns},
          {"probes", probes},
          {"collectives", ToJson(r.bench)},
          {"bound_check", [&] {
             const core::Status st = CheckAgainstBound(r.bench);
             return st.ok() ? std::string("ok") : st.message();
           }()}};
}

}  // namespace tessera::compass
