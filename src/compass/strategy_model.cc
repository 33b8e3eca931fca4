#include "compass/strategy_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

namespace tessera::compass {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The fused strategies: n block stages (strategy_model.h).
double FusedTime(const StrategyInputs& in, double coll_s, const Overheads& o) {
  const int n = in.tp;
  const double block = in.gemm_s / n + o.delta_s;
  if (block <= 0 || n < 1) return kInf;
  if (n == 1) return block;
  const double step = coll_s / (n - 1) + o.alpha_s;
  if (step <= 0) return kInf;
  if (in.kind == TpOpKind::kGemmReduceScatter) {
    // Partials computed back to back (slowed while sends are in flight), each sent once
    // computed and the previous send done; the own block's partial last.
    double computed = 0, sent = 0;
    for (int s = 0; s < n - 1; ++s) {
      computed += (s == 0 ? 1.0 : o.kappa) * block;
      sent = std::max(sent, computed) + step;
    }
    computed += o.kappa * block;
    return std::max(sent, computed);
  }
  // AllGather / wgrad: block s arrives at s * step; computed once arrived and the previous
  // one is done, slowed while later blocks are still arriving.
  double done = 0;
  for (int s = 0; s < n; ++s) {
    const double arrival = s * step;
    const bool overlapped = s < n - 1;
    done = std::max(done, arrival) + (overlapped ? o.kappa : 1.0) * block;
  }
  return done;
}

int TeRsDegree(const StrategyInputs& in) {
  int d = 4;
  while (d > 1 && in.part_gemm_s.count(d) == 0) --d;
  return d;
}

}  // namespace

bool OverheadKey::operator<(const OverheadKey& o) const {
  const std::string_view a = StrategyFamilyName(family), b = StrategyFamilyName(o.family);
  if (a != b) return a < b;
  return op_class < o.op_class;
}

core::Json ToJson(const OverheadTable& t) {
  core::Json j = core::Json::object();
  for (const auto& [key, o] : t) {
    j[StrategyFamilyName(key.family)][key.op_class] = {
        {"alpha_s", o.alpha_s}, {"delta_s", o.delta_s}, {"kappa", o.kappa}};
  }
  return j;
}

const char* OperatorClassOf(TpOpKind kind) {
  return kind == TpOpKind::kGemmReduceScatter ? "rs" : "ag";
}

core::StatusOr<double> PredictFamily(StrategyFamily family, int degree, const StrategyInputs& in,
                                     const Overheads& o) {
  auto coll = [&](comm::LinkAlgo a) -> core::StatusOr<double> {
    const auto it = in.coll_s.find(a);
    if (it == in.coll_s.end()) {
      return core::InvalidArgument(std::string("strategy model: no modeled ") +
                                   comm::LinkAlgoName(a) + " collective");
    }
    return it->second;
  };
  switch (family) {
    case StrategyFamily::kNone: {
      ASSIGN_OR_RETURN(double m, coll(comm::LinkAlgo::kRing1));
      return in.gemm_s + m + o.alpha_s + o.delta_s;
    }
    case StrategyFamily::kFusedRing1:
    case StrategyFamily::kFusedRing2:
    case StrategyFamily::kFusedDirect: {
      const comm::LinkAlgo a = family == StrategyFamily::kFusedRing1   ? comm::LinkAlgo::kRing1
                               : family == StrategyFamily::kFusedRing2 ? comm::LinkAlgo::kRing2
                                                                       : comm::LinkAlgo::kDirect;
      ASSIGN_OR_RETURN(double m, coll(a));
      return FusedTime(in, m, o);
    }
    case StrategyFamily::kDecomp: {
      const auto g = in.part_gemm_s.find(degree), m = in.part_coll_s.find(degree);
      if (g == in.part_gemm_s.end() || m == in.part_coll_s.end()) {
        return core::InvalidArgument("strategy model: no part times for " +
                                     StrategyName{family, degree}.Name());
      }
      return o.Predict(g->second, m->second, degree);
    }
    case StrategyFamily::kTe:
    case StrategyFamily::kMpi:
      break;
  }
  return core::InvalidArgument(std::string("strategy model: unknown family '") +
                               StrategyFamilyName(family) + "'");
}

core::StatusOr<double> PredictStrategy(const StrategyName& strategy, const StrategyInputs& in,
                                       const OverheadTable& table) {
  const std::string cls = OperatorClassOf(in.kind);
  auto overheads = [&](StrategyFamily family) {
    const auto it = table.find({family, cls});
    return it == table.end() ? Overheads{} : it->second;
  };
  if (strategy.family == StrategyFamily::kTe) {
    switch (in.kind) {
      case TpOpKind::kAllGatherGemm:
        return PredictFamily(StrategyFamily::kFusedRing1, 0, in,
                             overheads(StrategyFamily::kFusedRing1));
      case TpOpKind::kGemmReduceScatter:
        return PredictFamily(StrategyFamily::kDecomp, TeRsDegree(in), in,
                             overheads(StrategyFamily::kDecomp));
      case TpOpKind::kAllGatherWgrad:
        return PredictFamily(StrategyFamily::kNone, 0, in, overheads(StrategyFamily::kNone));
    }
  }
  return PredictFamily(strategy.family, strategy.degree, in, overheads(strategy.family));
}

core::StatusOr<Overheads> FitOverheads(const std::vector<StrategySample>& samples) {
  if (samples.size() < 3) {
    return core::InvalidArgument("overhead fit: needs at least 3 samples, got " +
                                 std::to_string(samples.size()));
  }
  std::vector<double> t;
  for (const StrategySample& s : samples) {
    if (s.inputs == nullptr || s.family != samples[0].family || !(s.t_s > 0) ||
        !std::isfinite(s.t_s)) {
      return core::InvalidArgument("overhead fit: samples must be of one family with T > 0");
    }
    RETURN_IF_ERROR(PredictFamily(s.family, s.degree, *s.inputs, Overheads{}).status());
    t.push_back(s.t_s / std::max(1, s.family == StrategyFamily::kDecomp ? s.degree : s.inputs->tp));
  }
  std::sort(t.begin(), t.end());
  double best_e = 0;
  const Overheads best = MinimisePipelineParams(
      [&](const Overheads& o) {
        double e = 0;
        for (const StrategySample& s : samples) {
          auto p = PredictFamily(s.family, s.degree, *s.inputs, o);
          if (!p.ok() || !std::isfinite(*p)) return kInf;
          e += (*p - s.t_s) * (*p - s.t_s) / (s.t_s * s.t_s);
        }
        return e;
      },
      t[t.size() / 2], &best_e);
  if (!std::isfinite(best_e)) {
    return core::InvalidArgument("overhead fit: no overheads give finite predictions");
  }
  if (samples[0].family == StrategyFamily::kNone) {
    // Only alpha + delta enters `none`, and no overlap is slowed: one constant, kappa 1.
    return Overheads{best.alpha_s + best.delta_s, 0, 1};
  }
  return best;
}

}  // namespace tessera::compass
