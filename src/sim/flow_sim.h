// FlowSim: a flow-level event simulation of messages over shared resources, the model behind
// the link emulator (comm/link_fabric.h) and Compass's collective models.
//
// A flow moves `bytes` over a path of resources (each with a bandwidth in bytes per second).
// It is released at max(release_s, arrival of every flow in deps, end of transmission of
// every flow in tx_after -- a queue: messages of one stream leave one after another); from
// then on it transmits,
// sharing every resource of its path max-min fairly with the other transmitting flows
// (progressive filling, rates recomputed whenever a flow starts or finishes transmitting);
// it arrives route latency_s after its last byte was transmitted. A flow with no bytes
// arrives latency_s after its release. Returns every flow's arrival time, seconds.
//
// Errors: InvalidArgument for a dependency id out of range, a cycle of dependencies, negative bytes
// or latency, a resource index out of range, or a non-positive bandwidth. Pure function;
// thread-safe.
#pragma once

#include <span>
#include <vector>

#include "core/status.h"

namespace tessera::sim {

struct FlowSpec {
  std::vector<int> resources;  // path, indices into the bandwidth list
  double bytes = 0;
  double latency_s = 0;
  double release_s = 0;
  std::vector<int> deps;      // flows that must have arrived before this one starts
  std::vector<int> tx_after;  // flows that must have finished transmitting before it starts
};

struct FlowTimes {
  std::vector<double> start_s;    // release (transmission start)
  std::vector<double> arrival_s;  // last byte delivered
};

core::StatusOr<FlowTimes> SimulateFlows(std::span<const double> resource_bw_bytes_per_s,
                                        std::span<const FlowSpec> flows);

}  // namespace tessera::sim
