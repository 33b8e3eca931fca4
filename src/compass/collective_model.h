// Closed-form times of the collectives that Compass overlaps with GEMMs, over a hw::Topology:
// the first piece of Compass's cost model. All times are modeled device seconds.
//
// A collective runs among n ranks at ring positions 0..n-1 (order[p] = the device of the rank at
// position p); every rank's block is block_wire_bytes on the wire. It takes n-1 sequential
// steps; the flows of a step start together and share the topology's resources max-min fairly
// (hw::ConcurrentFlowTimesS), and the step ends when its slowest flow completes:
//   ring1:  flows order[p] -> order[(p+1) % n] of block bytes, for every p;
//   ring2:  flows order[p] -> order[(p+1) % n] AND order[p] -> order[(p-1+n) % n], block/2
//           bytes each, for every p. For n = 2 both halves take the one directed edge
//           order[p] -> order[1-p], so ring2 takes exactly as long as ring1 (a 2-ring already
//           uses both directions of its edge);
//   direct: step s = 1..n-1: flows order[(p+s) % n] -> order[p] of block bytes for every p
//           (rank p pulls from rank p+s, PyTorch async-TP order).
// AllGather and ReduceScatter move the same flows (RS sends partial sums the same way); the
// ReduceScatter's local additions are not counted here. Per-step times are returned so that a
// caller can add a trace or an emulator's overhead per step.
// Pure functions; thread-safe.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "hw/topology.h"

namespace tessera::compass {

enum class CollectiveKind { kAllGather, kReduceScatter };
enum class CollectiveAlgo { kRing1, kRing2, kDirect };

// "allgather", "reducescatter".
const char* CollectiveKindName(CollectiveKind k);
// "ring1", "ring2", "direct".
const char* CollectiveAlgoName(CollectiveAlgo a);
// Every algorithm, in the order above.
std::vector<CollectiveAlgo> AllCollectiveAlgos();
// Parses a name above; InvalidArgument "algo: got 'x', must be one of ring1, ring2, direct".
core::StatusOr<CollectiveAlgo> ParseCollectiveAlgo(const std::string& name);

struct CollectiveModel {
  double total_s = 0;          // the sum of step_s
  std::vector<double> step_s;  // n-1 steps, in order
};

// The modeled time of one collective; fewer than 2 ranks: 0 and no steps. `order` must hold
// distinct valid device ids and block_wire_bytes must be >= 0 (CHECK: callers validate, e.g.
// with hw::BestRing).
CollectiveModel ModelCollective(const hw::Topology& t, std::span<const int> order,
                                CollectiveKind kind, CollectiveAlgo algo, double block_wire_bytes);

}  // namespace tessera::compass
