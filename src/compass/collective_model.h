// Modeled times of the collectives that Compass overlaps with GEMMs, over a hw::Topology: the
// first piece of Compass's cost model. All times are modeled device seconds. A rank's messages
// to one peer leave one after another (a copy stream).
//
// A collective runs among n ranks at ring positions 0..n-1 (order[p] = the device of the rank at
// position p); every rank's block is block_wire_bytes on the wire.
//
// ModelCollective follows the messages of comm/link_collectives.h one by one: a rank sends a
// step's message as soon as the message it depends on has arrived (no global step barrier),
// every message crosses its route's resources sharing them max-min fairly with the messages in
// flight at the same time (sim::SimulateFlows), and arrives its route latency after its last
// byte. Dependencies (p = ring position, (p, s) = the message p sends at step s):
// Every (p, s) goes as k back-to-back chunk messages (a stream), k = ModelChunkCount (the
// runtime's rule, comm/link_chunks.h, on the topology's routes), and a chunk that depends on a
// message waits for the same chunk of it (rings) or its last chunk (direct).
//   ring1:  (p, s) goes to p+1 and waits for (p-1, s-1);
//   ring2:  two messages per step, block/2 each, cw to p+1 and ccw to p-1, each direction on
//           its own: cw (p, s) waits for cw (p-1, s-1), ccw (p, s) for ccw (p+1, s-1); for
//           n = 2 both go to the one neighbour, cw first, on one stream;
//   direct: (p, s), s = 1..n-1, goes to p-s and waits for the message p received at step s-1,
//           i.e. (p+s-1, s-1).
// The same messages serve AllGather and ReduceScatter.
// The collective ends when the last message arrives. On a ring whose edges are all alike this
// equals the lock-step form below; on a mixed ring (NVLink pairs joined by PCIe) it is shorter,
// because a block crosses a fast edge and moves on without waiting for the slow ones.
//
// ModelCollectiveLockstep is the closed form (an upper bound): n-1 sequential steps; the
// flows of a step start together and share the topology's resources max-min fairly
// (hw::ConcurrentFlowTimesS), and the step ends when its slowest flow completes:
//   ring1:  flows order[p] -> order[(p+1) % n] of block bytes, for every p;
//   ring2:  flows order[p] -> order[(p+1) % n] AND order[p] -> order[(p-1+n) % n], block/2
//           bytes each, for every p. For n = 2 both halves take the one directed edge
//           order[p] -> order[1-p], so ring2 takes exactly as long as ring1 (a 2-ring already
//           uses both directions of its edge);
//   direct: step s = 1..n-1: flows order[(p+s) % n] -> order[p] of block bytes for every p
//           (rank p pulls from rank p+s, PyTorch async-TP order).
// AllGather and ReduceScatter move the same flows (RS sends partial sums the same way); the
// ReduceScatter's local additions and copies are not counted in either form.
// Pure functions; thread-safe.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "comm/link_algo.h"
#include "core/status.h"
#include "hw/topology.h"

namespace tessera::compass {

enum class CollectiveKind { kAllGather, kReduceScatter };
// The algorithms of comm/link_collectives.h (one enum for the runtime and the model).
using CollectiveAlgo = comm::LinkAlgo;

// "allgather", "reducescatter".
const char* CollectiveKindName(CollectiveKind k);
inline const char* CollectiveAlgoName(CollectiveAlgo a) { return comm::LinkAlgoName(a); }
inline std::vector<CollectiveAlgo> AllCollectiveAlgos() { return comm::AllLinkAlgos(); }
inline core::StatusOr<CollectiveAlgo> ParseCollectiveAlgo(const std::string& name) {
  return comm::ParseLinkAlgo(name);
}

struct CollectiveModel {
  double total_s = 0;
  std::vector<double> step_s;      // lock-step form: n-1 steps, in order (total = their sum)
  std::vector<double> position_s;  // message form: when each ring position has all its data
};

// The modeled times of one collective; fewer than 2 ranks: 0. `order` must hold distinct
// valid device ids and block_wire_bytes must be >= 0 (CHECK: callers validate, e.g. with
// hw::BestRing).
// A TP degree whose collectives run over devices 0..tp-1 of `t`: in [2, its devices].
// InvalidArgument "tp: got 9, must be in [2, 8] for a6000x8" (a command line names its flag
// instead: cli::NameFlags).
core::Status CheckTpOnTopology(const hw::Topology& t, int tp);

// The chunk messages per step and direction of one collective (comm::CollectiveChunkCount on
// the routes of `order` in `t`, at the fabric's default packet size).
int ModelChunkCount(const hw::Topology& t, std::span<const int> order, CollectiveAlgo algo,
                    double block_wire_bytes);

CollectiveModel ModelCollective(const hw::Topology& t, std::span<const int> order,
                                CollectiveKind kind, CollectiveAlgo algo, double block_wire_bytes);
CollectiveModel ModelCollectiveLockstep(const hw::Topology& t, std::span<const int> order,
                                        CollectiveKind kind, CollectiveAlgo algo,
                                        double block_wire_bytes);

}  // namespace tessera::compass
