// Overlap strategies for the TP operators of tp_op.h (Compass, part 2): how a rank runs one
// operator's collective and GEMM, on emulated links (overlap_context.h). Registered by name,
// one entry per family of compass/strategy_name.h (which spells and parses the names); adding
// a strategy is a family there, one file here (the class and its factory) and one line in
// overlap_strategy.cc's table.
//
//   none          the collective (single ring), then the GEMM; Megatron-LM's default
//   fused-ring1   the GEMM runs block by block inside a single-ring collective (Flux)
//   fused-ring2   the same over the topology-aware double ring (Compass): each block's two
//                 row halves travel in opposite directions
//   fused-direct  the same over direct pulls from rank p+s at step s (PyTorch async TP)
//   decomp:D      InterDecom: D parts, part i's collective overlaps part i+1's GEMM on a
//                 second thread (AG and wgrad split each rank's token rows, RS splits N)
//   te            Transformer Engine's defaults: ring exchange (= fused-ring1) for AG, a
//                 pipeline of D = 4 for RS, bulk (= none) for wgrad
//   mpi           the communicator's own (unpaced) collective, then the GEMM; correctness
//                 reference only, its time is not comparable
// Every strategy leaves the output of tp_op.h in `y` (for kReal compute).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compass/engine/overlap_context.h"
#include "compass/strategy_name.h"
#include "compass/tp_op.h"
#include "core/registry.h"
#include "core/status.h"

namespace tessera::compass {

// One rank's tensors: x (x_count), w (w_count: W, or dY for kAllGatherWgrad), y (y_count).
struct OpBuffers {
  const float* x = nullptr;
  const float* w = nullptr;
  float* y = nullptr;
};

class OverlapStrategy {
 public:
  virtual ~OverlapStrategy() = default;
  // Collective over the context's communicator; `degree` is D for decomp (0 otherwise).
  virtual core::Status Run(OverlapContext& ctx, const TpOpShape& shape, int degree,
                           const OpBuffers& io) = 0;
};

struct StrategyTraits {
  StrategyFamily family = StrategyFamily::kNone;  // the entry's name is its family's name
  bool timed = true;                              // false: correctness only (mpi)
};
using StrategyRegistryTable = core::Registry<OverlapStrategy, StrategyTraits>;
using StrategyEntry = StrategyRegistryTable::Entry;
// One entry per family of AllStrategyFamilies(), in that order.
const StrategyRegistryTable& StrategyRegistry();

// A strategy to run: its name and its registry entry.
struct StrategyChoice {
  const StrategyEntry* entry = nullptr;
  StrategyName id;
  int degree() const { return id.degree; }        // D for decomp, else 0
  std::string name() const { return id.Name(); }  // normalised: "decomp:4"
};
// The registry entry of `id` (every family has one).
StrategyChoice ChoiceOf(const StrategyName& id);
// A strategy name as a user writes it ("fused-ring2", "decomp:4"), through StrategyName::Parse:
// InvalidArgument naming the value for an unknown name, a degree on a strategy without one,
// "decomp" without a degree or with one outside [1, 64].
core::StatusOr<StrategyChoice> ParseStrategy(const std::string& name);

// Runs `choice` (validating the shape and degree first: InvalidArgument naming them).
core::Status RunStrategy(OverlapContext& ctx, const StrategyChoice& choice, const TpOpShape& shape,
                         const OpBuffers& io);

}  // namespace tessera::compass
