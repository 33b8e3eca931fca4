// A lower bound on the time of a collective from the topology alone: what no schedule of the
// collective's bytes over its routes can beat, whatever its chunking, order or engine. It
// shares nothing with the model (collective_model.h) or the emulator, so a measured time
// below it means the emulator delivered too early, and the distance above it is what an
// algorithm leaves on the table. All times are device seconds.
//
// Pieces: what travels whole from its origin to its destinations, along a path of routes
// (a route = the topology's route between two devices, its resources and latency):
//   ring1:  every block (B wire bytes) from ring position p along p -> p+1 -> ... -> p+n-1;
//   ring2:  every block's two halves (B/2 each), one along p -> p+1 -> ..., the other along
//           p -> p-1 -> ... (n-1 routes each);
//   direct: every block from p straight to each other position (n-1 pieces of one route).
// AllGather and ReduceScatter move the same pieces (partial sums travel as blocks do).
//
//   T_bw    = max over resources r with load:  load_r / bw_r + min latency of a route through r
//             (load_r: the bytes of every piece on every route crossing r; the last byte
//             through r still has a route's latency to go)
//   T_chain = max over pieces: sum of its routes' latencies + size / the smallest resource
//             bandwidth on its path (a piece cannot cross its slowest resource faster, and
//             each route adds its latency once)
//   T_port  = max over origins d and resources r of d's first routes: (bytes of d's pieces
//             whose first route crosses r) / bw_r + the smallest sum of route latencies among
//             those pieces (ours, beside the two above: the pieces a device starts with leave
//             through its ports together, and the last to clear one still has its whole path of
//             latencies ahead; on a switch, where both halves of a double-ring block share the
//             GPU's one port, T_chain alone counts each half at the port's full rate)
//   bound   = max(T_bw, T_chain, T_port)
// Pure functions; thread-safe.
#pragma once

#include <span>
#include <string>

#include "compass/collective_model.h"
#include "hw/topology.h"

namespace tessera::compass {

struct CollectiveBound {
  double t_bw_s = 0;
  double t_chain_s = 0;
  double t_port_s = 0;
  double bound_s = 0;   // max(t_bw_s, t_chain_s, t_port_s)
  std::string binding;  // what binds: a resource (T_bw), "chain from <device>" (T_chain) or
                        // "port <resource>" (T_port)
};

// The bound of `algo` on the ring `order` (device ids, position order) with blocks of
// `block_wire_bytes`; zero for fewer than 2 devices. `order` must hold distinct valid device
// ids and block_wire_bytes must be >= 0 (CHECK).
CollectiveBound BoundCollective(const hw::Topology& t, std::span<const int> order,
                                CollectiveAlgo algo, double block_wire_bytes);

}  // namespace tessera::compass
