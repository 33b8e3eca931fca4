// Flows over a Topology and the ring-order search.
//
// Units: bytes, bytes per second per direction, seconds. Devices are Topology device indices.
//
// ConcurrentFlowTimesS is a fluid max-min fair model (sim::SimulateFlows with every flow
// released at 0): flows that all start at time 0 share
// every resource on their routes (topology.h: directed links and capacity vertices) max-min
// fairly (progressive filling); the rates are recomputed each time a flow finishes. A flow's
// completion time = the time its last byte leaves its bottleneck + its route latency. A flow
// with src == dst or 0 bytes completes at 0 (local).
//
// A ring over devices order[0..n-1] has edges order[p] -> order[(p+1) % n]. Its single-ring
// bottleneck is min over resources r of bw(r) / (ring edges whose route uses r): the rate of the
// slowest edge when every edge sends at once (the first level of max-min filling). The double
// ring sends half of each block clockwise and half counter-clockwise (edges order[p] ->
// order[p-1] too), all at once; its effective bandwidth = block / time = 2 * min over r of
// bw(r) / (edges of both directions using r). For n = 2 both halves take the same directed
// edge, so the double ring equals the single ring.
//
// BestRing searches the order: exhaustive over the (n-1)! orders that start with the smallest
// device (every cycle, both directions) for n <= kExhaustiveRingMax; for larger n a greedy
// start (from each device, the fastest route to an unvisited device) improved by 2-opt segment
// reversals until no move helps, which is a heuristic: it may miss the best ring.
// Pure functions over a const Topology; thread-safe.
#pragma once

#include <span>
#include <vector>

#include "core/status.h"
#include "hw/topology.h"

namespace tessera::hw {

struct Flow {
  int src_device = 0;
  int dst_device = 0;
  double bytes = 0;
};

// One completion time per flow, seconds, in the order of `flows`. Device ids must be valid
// (CHECK) and bytes >= 0.
std::vector<double> ConcurrentFlowTimesS(const Topology& t, std::span<const Flow> flows);

enum class RingKind { kSingle, kDouble };

struct RingAnalysis {
  std::vector<int> order;  // devices in ring order (BestRing: starts with the smallest id)
  // Per direction: the slowest ring edge's share counting resources shared by several ring
  // edges (single ring: edges order[p] -> order[p+1]).
  double bottleneck_bytes_per_s = 0;
  // Effective bandwidth of a block sent half each way round (both directions at once, shared
  // resources counted).
  double double_ring_bytes_per_s = 0;
  double step_latency_s = 0;              // the largest route latency among the ring's edges
  double double_ring_step_latency_s = 0;  // the same over the edges of both directions
};

// Rings of more devices than this are searched by the greedy + 2-opt heuristic.
inline constexpr int kExhaustiveRingMax = 10;

// Analyses the ring `order` as given (no rotation). Fewer than 2 devices: all fields 0.
// Device ids must be valid and distinct (CHECK).
RingAnalysis AnalyzeRing(const Topology& t, std::span<const int> order);

// The ring over `devices` maximising the single-ring bottleneck (kSingle) or the double-ring
// bandwidth (kDouble); ties: the lower step latency (of that kind), then the lexicographically
// smallest order. InvalidArgument for an empty list, unknown device ids and duplicates.
core::StatusOr<RingAnalysis> BestRing(const Topology& t, std::span<const int> devices,
                                      RingKind kind);

}  // namespace tessera::hw
