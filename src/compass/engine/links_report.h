// The `tessera compass links` service: on n MPI ranks placed on devices 0..n-1 of a
// topology, (1) fixes the time scale (one core's GEMM rate measured on rank 0 while the other
// ranks sleep, or a given scale), (2) probes the emulator's accuracy on the topology's fastest
// and slowest device pair among those devices (link_check.h), first with the engines' own
// start-up wake-up lead, then with a lead calibrated on empty messages (CalibrateWakeLeadNs),
// (3) measures every collective algorithm next to its model with the calibrated lead
// (collective_bench.h). Collective over `world`.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "compass/engine/collective_bench.h"
#include "compass/engine/link_check.h"
#include "core/json_util.h"
#include "hw/topology.h"
#include "runtime/time_scale.h"

namespace tessera::compass {

struct LinksOptions {
  std::optional<double> time_scale;  // fixed s; measured when absent
  int64_t probe_bytes = 64 * 1024;   // wire bytes of the single and duplex probes
  int probe_repeats = 9;
  CollectiveBenchConfig bench;
};

struct LinkProbe {
  std::string label;  // "fastest pair gpu0->gpu1 (nvlink)" etc.
  int src_device = 0, dst_device = 0;
  double bw_bytes_per_s = 0;  // device-scale bottleneck bandwidth of the route
  double latency_s = 0;       // device-scale route latency
  LinkAccuracy raw;           // engines' own start-up lead (in emulated units)
  LinkAccuracy calibrated;    // with the calibrated lead
};

struct LinksReport {
  std::string topology, provenance;
  runtime::TimeScale scale;
  int64_t calibrated_lead_ns =
      0;  // CalibrateWakeLeadNs, used by the calibrated probes and the bench
  std::vector<LinkProbe> probes;
  CollectiveBench bench;
};

// The rank count a links check needs: in [2, the topology's devices]. InvalidArgument
// "ranks: got 9, must be in [2, 8] for a6000x8" (a command line names its flag instead:
// cli::NameFlags); a command line checks it before ranks start, RunLinksCheck again on its
// world.
core::Status CheckLinksRanks(const hw::Topology& topology, int ranks);

core::StatusOr<LinksReport> RunLinksCheck(comm::Communicator& world, const hw::Topology& topology,
                                          const LinksOptions& options);

core::Json ToJson(const LinksReport& r);

}  // namespace tessera::compass
