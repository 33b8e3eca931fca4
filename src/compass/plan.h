// Compass's plan for one transformer layer on a machine (`tessera compass plan`): for every
// TP operator of the layer (model_shapes.h LayerOps) the selector's strategy (selector.h) with
// its reason, and the predicted times of the chosen strategy, of `none` (Megatron's default),
// of `te` (Transformer Engine's defaults) and of `fused-ring1` (Flux's single ring); the
// layer's totals (forward + backward TP operators) and the step's (layers x the layer; the TP
// GEMMs and collectives only: attention, norms and the optimizer are not modeled).
//
// Everything is modeled: GEMMs from the profile where it timed the exact shape, else from the
// SKU's tile/wave model (gemm_model.h); collectives from collective_model.h on the topology's
// best single and double rings over devices 0..tp-1 (direct on the single ring's order);
// overheads from the profile (strategy_model.h) when one is given, else zero overheads and
// kappa 1 (said in `overheads_source`).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compass/model_shapes.h"
#include "compass/profile.h"
#include "compass/selector.h"
#include "compass/strategy_model.h"
#include "core/json_util.h"
#include "core/trace.h"
#include "hw/topology.h"

namespace tessera::compass {

struct PlanOptions {
  int tp = 8;
  int64_t seq = 4096, mbs = 1;  // tokens M = seq x mbs
  SelectorOptions selector;
};

struct OpPlan {
  LayerOp op;
  // The selector's pick; for an operator without a collective (op.has_collective false) the
  // GEMM alone, whose pick.strategy is unused.
  StrategyPick pick;
  double none_s = 0, te_s = 0, ring1_s = 0;
  // Where its GEMM times came from: "profile", "modeled (tile/wave)" or "mixed".
  std::string gemm_source;
  // The strategy as tables and JSON show it: pick.strategy's name, or "gemm" without a
  // collective.
  std::string StrategyText() const;
};

struct CompassPlan {
  std::string topology, model, device;
  int tp = 0;
  int64_t tokens = 0, layers = 0;
  std::string overheads_source;
  std::vector<int> ring1_order, ring2_order;
  std::vector<OpPlan> ops;
  double layer_s = 0, layer_none_s = 0, layer_te_s = 0, layer_ring1_s = 0;
  double step_s() const { return layer_s * layers; }
  double step_none_s() const { return layer_none_s * layers; }
};

// What the strategy model needs for one operator, from a GEMM timer (the whole or a part
// GEMM's seconds: trans_a, m, n, k) and a collective timer (algorithm, block wire bytes per
// rank). Decomposition degrees: every feasible d <= max_degree (tp_op.h ValidateDegree).
using GemmTimer = std::function<double(bool, int64_t, int64_t, int64_t)>;
using CollectiveTimer = std::function<double(comm::LinkAlgo, double)>;
StrategyInputs StrategyInputsFor(const TpOpShape& s, const GemmTimer& gemm,
                                 const CollectiveTimer& collective, int max_degree = 16);

// The collective model of an operator of `kind` (ReduceScatter for kGemmReduceScatter, else
// AllGather) on the topology: ring2 on `ring2_order`, ring1 and direct on `ring1_order` (device
// lists). The timer keeps a reference to `topology` and copies of the orders.
CollectiveTimer OperatorCollectiveTimer(const hw::Topology& topology, std::vector<int> ring1_order,
                                        std::vector<int> ring2_order, TpOpKind kind);

// InvalidArgument for a TP degree the topology cannot hold or the model cannot split, and a
// profile taken on another topology or TP degree.
core::StatusOr<CompassPlan> PlanLayer(const hw::Topology& topology, const TransformerShape& model,
                                      const PlanOptions& options,
                                      const CompassProfile* profile = nullptr,
                                      const std::string& profile_name = "");

core::Json ToJson(const CompassPlan& p);

// The plan as Transformer Engine userbuffers settings (the `ub_cfgs` dict TE's
// initialize_ub takes): per operator "ring_exchange" for a fused single ring, "pipeline" with
// num_splits = d for a decomposition, "bulk" for none; strategies TE cannot express (the
// double ring, direct copies) fall back to ring_exchange and are listed under "_notes".
core::Json TeUserbufferConfig(const CompassPlan& p);

// One layer as a Chrome/Perfetto trace (JSON): the chosen strategies on one track and `none`
// on another, operators back to back, durations in microseconds.
core::TraceWriter PlanTrace(const CompassPlan& p);

}  // namespace tessera::compass
