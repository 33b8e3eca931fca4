#include "compass/selector.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tessera::compass {

core::StatusOr<StrategyPick> SelectStrategy(const StrategyInputs& in, const OverheadTable& table,
                                            const SelectorOptions& options) {
  if (!(options.margin >= 0) || options.margin >= 1) {
    return core::InvalidArgument("selector: margin " + std::to_string(options.margin) +
                                 " must be in [0, 1)");
  }
  StrategyPick pick;
  const StrategyName none = StrategyName::Of(StrategyFamily::kNone);
  ASSIGN_OR_RETURN(pick.none_s, PredictStrategy(none, in, table));
  std::vector<StrategyName> names;
  for (StrategyFamily f : SelectorFixedFamilies()) names.push_back(StrategyName::Of(f));
  for (const auto& [d, g] : in.part_gemm_s) {
    (void)g;
    if (d <= options.max_degree && d <= kMaxStrategyDegree && in.part_coll_s.count(d)) {
      names.push_back(StrategyName::Decomp(d));
    }
  }
  for (const StrategyName& name : names) {
    auto t = PredictStrategy(name, in, table);
    if (t.ok() && std::isfinite(*t)) pick.candidates.push_back({name, *t});
  }
  std::stable_sort(pick.candidates.begin(), pick.candidates.end(),
                   [](const auto& a, const auto& b) { return a.second < b.second; });
  const auto& [best, best_s] = pick.candidates.front();
  const std::string cls = OperatorClassOf(in.kind);
  if (best == none || best_s > pick.none_s * (1 - options.margin)) {
    pick.strategy = none;
    pick.predicted_s = pick.none_s;
    pick.reason =
        best == none
            ? "no overlap is predicted fastest"
            : fmt::format("{} is predicted only {:.1f}% faster, under the {:.0f}% margin",
                          best.Name(), 100 * (1 - best_s / pick.none_s), 100 * options.margin);
    return pick;
  }
  pick.strategy = best;
  pick.predicted_s = best_s;
  const auto it = table.find({best.family, cls});
  const double kappa = it == table.end() ? 1.0 : it->second.kappa;
  const double exposed = std::max(0.0, best_s - in.gemm_s);
  const double comm =
      in.coll_s.count(comm::LinkAlgo::kRing1) ? in.coll_s.at(comm::LinkAlgo::kRing1) : 0.0;
  std::string how;
  switch (best.family) {
    case StrategyFamily::kDecomp:
      how = "split into " + std::to_string(best.degree) + " pipelined parts";
      break;
    case StrategyFamily::kFusedRing2:
      how = "GEMM fused into the double ring (half of each block each way)";
      break;
    case StrategyFamily::kFusedRing1:
      how = "GEMM fused into the single ring";
      break;
    default:
      how = "GEMM fused into direct peer copies";
      break;
  }
  pick.reason = fmt::format(
      "{}: {:.2f}x over none; {:.1f} us beyond the {:.1f} us GEMM exposed (none: the whole "
      "{:.1f} us collective); overlapped compute slowed {:.2f}x",
      how, pick.none_s / best_s, exposed * 1e6, in.gemm_s * 1e6, comm * 1e6, kappa);
  return pick;
}

}  // namespace tessera::compass
