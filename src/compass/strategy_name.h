// The overlap strategies of Compass as types: a strategy is a family (how the collective and
// the GEMM are interleaved) and, for a decomposition, its degree D (the number of parts).
// This is the one place strategy names are spelled and parsed; the strategy model, the
// selector, the planners and the engine's registry (engine/overlap_strategy.h) all take a
// StrategyName, and text appears only where a user writes a name (command lines, grid files)
// or a result is written (tables, JSON).
//
//   family         name         what it is (engine/overlap_strategy.h has the details)
//   kNone          none         collective, then GEMM (Megatron-LM's default)
//   kFusedRing1    fused-ring1  GEMM block by block inside a single-ring collective (Flux)
//   kFusedRing2    fused-ring2  the same over the double ring (Compass)
//   kFusedDirect   fused-direct the same over direct peer pulls (PyTorch async TP)
//   kDecomp        decomp:D     D parts, part i's collective overlaps part i+1's GEMM
//   kTe            te           Transformer Engine's defaults (composed of the above)
//   kMpi           mpi          the communicator's own collective; a correctness reference
//
// Values are plain data; every function here is pure and thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera::compass {

enum class StrategyFamily { kNone, kFusedRing1, kFusedRing2, kFusedDirect, kDecomp, kTe, kMpi };

// The largest decomposition degree a name may carry.
inline constexpr int kMaxStrategyDegree = 64;

// Every family, in the order the engine registers them (and messages list them).
const std::vector<StrategyFamily>& AllStrategyFamilies();
// The families whose overheads the strategy model fits (strategy_model.h): none, fused-ring1,
// fused-ring2, fused-direct, decomp (te is composed of them; mpi is not timed).
const std::vector<StrategyFamily>& FittedStrategyFamilies();
// The families the selector always considers (selector.h): none, fused-ring1, fused-ring2,
// fused-direct; decomp:D joins them for every degree its inputs carry.
const std::vector<StrategyFamily>& SelectorFixedFamilies();

// "none", "fused-ring1", ..., "decomp" (without a degree), "te", "mpi".
const char* StrategyFamilyName(StrategyFamily family);
// The family named exactly `name` ("decomp", not "decomp:4"); nullopt for any other text.
std::optional<StrategyFamily> ParseStrategyFamily(std::string_view name);
// True for kDecomp: its names carry ":D".
bool TakesDegree(StrategyFamily family);
// True for the families of FittedStrategyFamilies().
bool IsFittedFamily(StrategyFamily family);
// "none, fused-ring1, ..., decomp" (the fitted families, for messages).
std::string FittedFamilyList();

struct StrategyName {
  StrategyFamily family = StrategyFamily::kNone;
  int degree = 0;  // kDecomp: D in [1, kMaxStrategyDegree]; 0 for every other family

  // A valid name (CHECK-fails on a degree a family does not take, or one out of range).
  static StrategyName Of(StrategyFamily family, int degree = 0);
  static StrategyName Decomp(int degree) { return Of(StrategyFamily::kDecomp, degree); }

  // A name as a user writes it: "fused-ring2", "decomp:4". InvalidArgument naming the value:
  //   "strategy: got 'flux', must be one of none, fused-ring1, ..., decomp:D, te, mpi";
  //   "strategy: got 'none:2', none takes no degree";
  //   "strategy: got 'decomp', must be decomp:D with D the number of parts";
  //   "strategy: got 'decomp:0': the degree got '0', must be ..." (D in [1, 64]).
  static core::StatusOr<StrategyName> Parse(const std::string& text);

  // The normalised name: "none", "decomp:4".
  std::string Name() const;

  bool operator==(const StrategyName&) const = default;
  auto operator<=>(const StrategyName&) const = default;
};

}  // namespace tessera::compass
