#include "compass/plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "compass/collective_model.h"
#include "hw/gemm_model.h"
#include "hw/ring_order.h"

namespace tessera::compass {

StrategyInputs StrategyInputsFor(const TpOpShape& s, const GemmTimer& gemm,
                                 const CollectiveTimer& collective, int max_degree) {
  StrategyInputs in;
  in.kind = s.kind;
  in.tp = s.tp;
  const bool rs = s.kind == TpOpKind::kGemmReduceScatter,
             wgrad = s.kind == TpOpKind::kAllGatherWgrad;
  in.gemm_s = wgrad ? gemm(true, s.k, s.n, s.m) : gemm(false, s.m, s.n, s.k);
  const double block_wire = 2.0 * static_cast<double>(s.shard_rows()) * (rs ? s.n : s.k);
  for (comm::LinkAlgo a :
       {comm::LinkAlgo::kRing1, comm::LinkAlgo::kRing2, comm::LinkAlgo::kDirect}) {
    in.coll_s[a] = collective(a, block_wire);
  }
  for (int d = 1; d <= max_degree; ++d) {
    if (!ValidateDegree(s, d).ok()) continue;
    double part = 0;
    if (rs) {
      part = gemm(false, s.m, s.n / d, s.k);
    } else if (wgrad) {
      part = s.tp * gemm(true, s.k, s.n, s.m / (s.tp * d));  // t GEMMs of q rows per part
    } else {
      part = gemm(false, s.m / d, s.n, s.k);
    }
    in.part_gemm_s[d] = part;
    in.part_coll_s[d] = collective(comm::LinkAlgo::kRing1, block_wire / d);
  }
  return in;
}

CollectiveTimer OperatorCollectiveTimer(const hw::Topology& topology, std::vector<int> ring1_order,
                                        std::vector<int> ring2_order, TpOpKind kind) {
  const CollectiveKind ck = kind == TpOpKind::kGemmReduceScatter ? CollectiveKind::kReduceScatter
                                                                 : CollectiveKind::kAllGather;
  return [&topology, r1 = std::move(ring1_order), r2 = std::move(ring2_order), ck](comm::LinkAlgo a,
                                                                                   double wire) {
    return ModelCollective(topology, a == comm::LinkAlgo::kRing2 ? r2 : r1, ck, a, wire).total_s;
  };
}

core::StatusOr<CompassPlan> PlanLayer(const hw::Topology& topology, const TransformerShape& model,
                                      const PlanOptions& options, const CompassProfile* profile,
                                      const std::string& profile_name) {
  const int tp = options.tp;
  RETURN_IF_ERROR(CheckTpOnTopology(topology, tp));
  if (options.seq < 1 || options.mbs < 1) {
    return core::InvalidArgument("seq and mbs must be >= 1, got " + std::to_string(options.seq) +
                                 " and " + std::to_string(options.mbs));
  }
  ASSIGN_OR_RETURN(std::vector<LayerOp> ops, LayerOps(model, tp, options.seq * options.mbs));
  if (profile != nullptr) {
    RETURN_IF_ERROR(CheckProfileFor(*profile, profile_name, topology.name(), tp));
  }
  std::vector<int> devices(tp);
  for (int i = 0; i < tp; ++i) devices[i] = i;
  ASSIGN_OR_RETURN(hw::RingAnalysis ring1, hw::BestRing(topology, devices, hw::RingKind::kSingle));
  ASSIGN_OR_RETURN(hw::RingAnalysis ring2, hw::BestRing(topology, devices, hw::RingKind::kDouble));

  CompassPlan plan;
  plan.topology = topology.name();
  plan.model = model.name;
  plan.device = topology.device().name;
  plan.tp = tp;
  plan.tokens = options.seq * options.mbs;
  plan.layers = model.layers;
  plan.ring1_order = ring1.order;
  plan.ring2_order = ring2.order;
  OverheadTable overheads;
  if (profile != nullptr) {
    overheads = profile->overheads;
    plan.overheads_source = "profile " + profile_name + " (measured on " + profile->machine + ")";
  } else {
    plan.overheads_source = "none given: zero per-step and per-chunk overheads, kappa 1";
  }
  const hw::Device& device = topology.device();
  for (const LayerOp& op : ops) {
    int profiled = 0, modeled = 0;
    const GemmTimer gemm = [&](bool trans_a, int64_t m, int64_t n, int64_t k) {
      if (profile != nullptr) {
        auto t = profile->GemmSeconds(trans_a, m, n, k);
        if (t.ok()) {
          ++profiled;
          return *t;
        }
      }
      ++modeled;
      // The tile model's output is the (m, n) of C; trans_a only changes A's layout.
      return hw::ModeledGemmSeconds(device, m, n, k);
    };
    const CollectiveTimer collective =
        OperatorCollectiveTimer(topology, ring1.order, ring2.order, op.shape.kind);
    OpPlan p;
    p.op = op;
    if (!op.has_collective) {
      const double t = op.shape.kind == TpOpKind::kAllGatherWgrad
                           ? gemm(true, op.shape.k, op.shape.n, op.shape.m)
                           : gemm(false, op.shape.m, op.shape.n, op.shape.k);
      p.pick.predicted_s = p.pick.none_s = t;
      p.pick.reason = "no collective: the dY gathered for its dgrad is reused";
      p.none_s = p.te_s = p.ring1_s = t;
    } else {
      const StrategyInputs in = StrategyInputsFor(op.shape, gemm, collective);
      ASSIGN_OR_RETURN(p.pick, SelectStrategy(in, overheads, options.selector));
      ASSIGN_OR_RETURN(p.none_s,
                       PredictStrategy(StrategyName::Of(StrategyFamily::kNone), in, overheads));
      ASSIGN_OR_RETURN(p.te_s,
                       PredictStrategy(StrategyName::Of(StrategyFamily::kTe), in, overheads));
      ASSIGN_OR_RETURN(
          p.ring1_s, PredictStrategy(StrategyName::Of(StrategyFamily::kFusedRing1), in, overheads));
    }
    p.gemm_source = modeled == 0 ? "profile" : profiled == 0 ? "modeled (tile/wave)" : "mixed";
    plan.layer_s += p.pick.predicted_s;
    plan.layer_none_s += p.none_s;
    plan.layer_te_s += p.te_s;
    plan.layer_ring1_s += p.ring1_s;
    plan.ops.push_back(std::move(p));
  }
  return plan;
}

std::string OpPlan::StrategyText() const {
  return op.has_collective ? pick.strategy.Name() : "gemm";
}

core::Json ToJson(const CompassPlan& p) {
  core::Json ops = core::Json::array();
  for (const OpPlan& o : p.ops) {
    core::Json cands = core::Json::object();
    for (const auto& [name, t] : o.pick.candidates) cands[name.Name()] = t;
    ops.push_back({{"op", o.op.name},
                   {"kind", TpOpKindName(o.op.shape.kind)},
                   {"m", o.op.shape.m},
                   {"n", o.op.shape.n},
                   {"k", o.op.shape.k},
                   {"strategy", o.StrategyText()},
                   {"reason", o.pick.reason},
                   {"predicted_s", o.pick.predicted_s},
                   {"none_s", o.none_s},
                   {"te_s", o.te_s},
                   {"fused_ring1_s", o.ring1_s},
                   {"candidates_s", cands},
                   {"gemm_source", o.gemm_source}});
  }
  return {{"kind", "compass-plan"},
          {"version", 1},
          {"label", "MODELED: predicted times, not measured"},
          {"topology", p.topology},
          {"device", p.device},
          {"model", p.model},
          {"tp", p.tp},
          {"tokens", p.tokens},
          {"layers", p.layers},
          {"ring1_order", p.ring1_order},
          {"ring2_order", p.ring2_order},
          {"overheads", p.overheads_source},
          {"ops", ops},
          {"layer_s", p.layer_s},
          {"layer_none_s", p.layer_none_s},
          {"layer_te_s", p.layer_te_s},
          {"layer_fused_ring1_s", p.layer_ring1_s},
          {"step_s", p.step_s()},
          {"step_none_s", p.step_none_s()},
          {"step_scope", "TP GEMMs and collectives of every layer, forward and backward"}};
}

core::Json TeUserbufferConfig(const CompassPlan& p) {
  core::Json cfg = core::Json::object();
  core::Json notes = core::Json::array();
  for (const OpPlan& o : p.ops) {
    if (!o.op.has_collective) continue;
    // TE's keys: qkv_fprop, proj_dgrad, fc1_wgrad, ...
    std::string key = o.op.name;
    std::replace(key.begin(), key.end(), '-', '_');
    if (key.find('_') == std::string::npos) key += "_fprop";
    const StrategyName& s = o.pick.strategy;
    if (s.family == StrategyFamily::kDecomp) {
      cfg[key] = {{"method", "pipeline"}, {"num_splits", s.degree}};
    } else if (s.family == StrategyFamily::kNone) {
      cfg[key] = {{"method", "bulk"}};
    } else {
      cfg[key] = {{"method", "ring_exchange"}};
      if (s.family != StrategyFamily::kFusedRing1) {
        notes.push_back(key + ": tessera picks " + s.Name() +
                        ", which TE cannot express; ring_exchange");
      }
    }
  }
  cfg["_notes"] = notes;
  cfg["_source"] = fmt::format("tessera compass plan: {} on {}, TP {}, {} tokens (modeled)",
                               p.model, p.topology, p.tp, p.tokens);
  return cfg;
}

core::TraceWriter PlanTrace(const CompassPlan& p) {
  core::TraceWriter t;
  t.NameTrack(0, "chosen strategies (modeled)");
  t.NameTrack(1, "none: collective then GEMM (modeled)");
  double at = 0, at_none = 0;
  for (const OpPlan& o : p.ops) {
    t.Span(0, o.op.name + ": " + o.StrategyText(), "compass", at, o.pick.predicted_s,
           {{"reason", o.pick.reason}, {"none_us", o.none_s * 1e6}});
    t.Span(1, o.op.name, "none", at_none, o.none_s);
    at += o.pick.predicted_s;
    at_none += o.none_s;
  }
  return t;
}

}  // namespace tessera::compass
