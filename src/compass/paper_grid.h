// Compass's paper-scale grid (modeled): 2 collectives (AllGather, ReduceScatter) x 2 layer
// kinds (attention: qkv / proj; MLP: fc1 / fc2) x 4 models (Llama-2-7B, Llama-2-13B,
// Llama-3-8B, Llama-2-70B) x TP {2, 4, 8} x 6 token counts {1K .. 32K} = 288 forward TP
// operators per topology, each planned by plan.h (no profile: zero overheads, kappa 1, GEMMs
// from the SKU's tile/wave model). Per operator: every strategy's predicted time and the
// selector's pick; summaries of each strategy's speed-up over `none`.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compass/plan.h"
#include "core/json_util.h"
#include "core/stats.h"
#include "hw/topology.h"

namespace tessera::compass {

struct GridPoint {
  std::string model;
  int tp = 0;
  int64_t tokens = 0;
  std::string op;    // qkv (AG, attention), proj (RS, attention), fc1 (AG, MLP), fc2 (RS, MLP)
  std::string pick;  // the selector's strategy
  std::map<std::string, double> predicted_s;  // none, te, fused-ring1/2/direct, best decomp, auto
};

struct PaperGrid {
  std::string topology;
  std::vector<GridPoint> points;
  std::vector<std::string> skipped;  // (model, TP) pairs the model cannot split, with why
};

using SpeedupStats = core::MinMedianMax;

// Every TP degree the topology holds (of 2, 4, 8); InvalidArgument when none.
core::StatusOr<PaperGrid> RunPaperGrid(const hw::Topology& topology);

// Speed-up over `none` (none / strategy) of `strategy` over the points of `model` (all when
// empty).
SpeedupStats SpeedupOverNone(const PaperGrid& g, const std::string& strategy,
                             const std::string& model = "");

core::Json ToJson(const PaperGrid& g);

}  // namespace tessera::compass
