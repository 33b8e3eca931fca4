// PacedLinks: what the link emulator needs to know about a machine's links, in emulated time.
// Endpoints are the ranks of the communicator the fabric is built on (0..num_endpoints-1);
// resources are whatever a byte crosses and shares with other traffic (a directed link, a
// PCIe uplink, a socket interconnect, a host bounce buffer), each with a bandwidth in bytes
// per second of emulated (wall-clock) time. The route of an ordered endpoint pair is the list
// of resources its bytes cross and a latency paid once per message.
//
// Built by the caller from a topology and a time scale (compass/emulated_links.h), so that
// comm/ does not depend on hw/. Plain value; thread-safe to read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::comm {

struct PacedRoute {
  std::vector<int> resources;  // indices into PacedLinks::resources, in path order
  int64_t latency_ns = 0;      // paid once per message
};

struct PacedResource {
  std::string name;
  double bytes_per_s = 0;  // emulated bandwidth, > 0
};

struct PacedLinks {
  // Wire bytes per packet: the unit of reservation and of fair sharing between flows. Small
  // enough that a chunk of a 256 KiB collective block is several packets, so flows sharing a
  // resource finish nearly together, as on a real link's fine-grained packets (64 KiB made
  // the first of them finish up to 11% early); each costs the engine about one wake-up.
  static constexpr int64_t kDefaultPacketBytes = 8 * 1024;
  // At most this many endpoints and resources (the shared reservation table is sized by it).
  static constexpr int kMaxEndpoints = 256;
  static constexpr int kMaxResources = 4096;
  // A route's latency is at most this (10 s).
  static constexpr int64_t kMaxLatencyNs = 10'000'000'000;

  int num_endpoints = 0;
  std::vector<PacedResource> resources;
  std::vector<PacedRoute> routes;  // routes[src * num_endpoints + dst]; src == dst unused
  int64_t packet_bytes = kDefaultPacketBytes;

  const PacedRoute& route(int src, int dst) const { return routes[src * num_endpoints + dst]; }
};

// n endpoints, each ordered pair (src, dst) its own directed link "src->dst" of the given
// bandwidth and latency (no shared resources): tests and single-link measurements.
PacedLinks FullMeshLinks(int n, double bytes_per_s, int64_t latency_ns);

// Checks counts, bandwidths (finite, > 0), latencies (>= 0, <= 10 s), resource indices and
// the packet size (>= 512 B); InvalidArgument naming the first bad field.
core::Status Validate(const PacedLinks& links);

}  // namespace tessera::comm
