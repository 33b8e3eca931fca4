#include "compass/paper_grid.h"

#include "core/stats.h"

namespace tessera::compass {

core::StatusOr<PaperGrid> RunPaperGrid(const hw::Topology& topology) {
  PaperGrid g;
  g.topology = topology.name();
  bool any_tp = false;
  for (const std::string& name : ModelPresetNames()) {
    ASSIGN_OR_RETURN(TransformerShape model, LoadTransformerShape(name));
    for (int tp : {2, 4, 8}) {
      if (tp > topology.num_devices()) continue;
      any_tp = true;
      for (int64_t tokens : {1024, 2048, 4096, 8192, 16384, 32768}) {
        PlanOptions o;
        o.tp = tp;
        o.seq = tokens;
        auto plan = PlanLayer(topology, model, o);
        if (!plan.ok()) {
          g.skipped.push_back(name + " TP " + std::to_string(tp) + ": " + plan.status().message());
          break;
        }
        for (const OpPlan& p : plan->ops) {
          if (p.op.name != "qkv" && p.op.name != "proj" && p.op.name != "fc1" &&
              p.op.name != "fc2") {
            continue;
          }
          GridPoint pt;
          pt.model = name;
          pt.tp = tp;
          pt.tokens = tokens;
          pt.op = p.op.name;
          pt.pick = p.StrategyText();
          double best_decomp = 0;
          for (const auto& [strategy, t] : p.pick.candidates) {
            if (strategy.family == StrategyFamily::kDecomp) {
              if (best_decomp == 0 || t < best_decomp) best_decomp = t;
            } else {
              pt.predicted_s[strategy.Name()] = t;
            }
          }
          if (best_decomp > 0) pt.predicted_s["decomp:d*"] = best_decomp;
          pt.predicted_s[StrategyFamilyName(StrategyFamily::kTe)] = p.te_s;
          pt.predicted_s["auto"] = p.pick.predicted_s;
          g.points.push_back(pt);
        }
      }
    }
  }
  if (!any_tp) {
    return core::InvalidArgument("paper grid: " + topology.name() + " has " +
                                 std::to_string(topology.num_devices()) +
                                 " devices, fewer than TP 2");
  }
  return g;
}

SpeedupStats SpeedupOverNone(const PaperGrid& g, const std::string& strategy,
                             const std::string& model) {
  std::vector<double> v;
  for (const GridPoint& p : g.points) {
    if (!model.empty() && p.model != model) continue;
    const auto none = p.predicted_s.find("none"), s = p.predicted_s.find(strategy);
    if (none == p.predicted_s.end() || s == p.predicted_s.end() || !(s->second > 0)) continue;
    v.push_back(none->second / s->second);
  }
  return core::SummarizeMinMedianMax(v);
}

core::Json ToJson(const PaperGrid& g) {
  core::Json points = core::Json::array();
  for (const GridPoint& p : g.points) {
    points.push_back({{"model", p.model},
                      {"tp", p.tp},
                      {"tokens", p.tokens},
                      {"op", p.op},
                      {"pick", p.pick},
                      {"predicted_s", p.predicted_s}});
  }
  return {{"kind", "compass-paper-grid"},
          {"version", 1},
          {"label", "MODELED: datasheet topology and tile/wave GEMM model, no profile"},
          {"topology", g.topology},
          {"points", points},
          {"skipped", g.skipped}};
}

}  // namespace tessera::compass
