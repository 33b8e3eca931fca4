#include "compass/strategy_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
  if (in.kind == TpOpKind::kGemmRs) {
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

core::Json ToJson(const OverheadTable& t) {
  core::Json j = core::Json::object();
  for (const auto& [key, o] : t) {
    j[key.first][key.second] = {{"alpha_s", o.alpha_s}, {"delta_s", o.delta_s}, {"kappa", o.kappa}};
  }
  return j;
}

const std::vector<std::string>& StrategyFamilies() {
  static const std::vector<std::string> kFamilies = {"none", "fused-ring1", "fused-ring2",
                                                     "fused-direct", "decomp"};
  return kFamilies;
}

std::string FamilyOf(const std::string& strategy) {
  if (strategy.rfind("decomp:", 0) == 0) return "decomp";
  return strategy;
}

bool IsStrategyFamily(const std::string& family) {
  const std::vector<std::string>& f = StrategyFamilies();
  return std::find(f.begin(), f.end(), family) != f.end();
}

const char* OperatorClassOf(TpOpKind kind) { return kind == TpOpKind::kGemmRs ? "rs" : "ag"; }

core::StatusOr<double> PredictFamily(const std::string& family, int degree,
                                     const StrategyInputs& in, const Overheads& o) {
  auto coll = [&](comm::LinkAlgo a) -> core::StatusOr<double> {
    const auto it = in.coll_s.find(a);
    if (it == in.coll_s.end()) {
      return core::InvalidArgument(std::string("strategy model: no modeled ") +
                                   comm::LinkAlgoName(a) + " collective");
    }
    return it->second;
  };
  if (family == "none") {
    ASSIGN_OR_RETURN(double m, coll(comm::LinkAlgo::kRing1));
    return in.gemm_s + m + o.alpha_s + o.delta_s;
  }
  if (family == "fused-ring1" || family == "fused-ring2" || family == "fused-direct") {
    const comm::LinkAlgo a = family == "fused-ring1"   ? comm::LinkAlgo::kRing1
                             : family == "fused-ring2" ? comm::LinkAlgo::kRing2
                                                       : comm::LinkAlgo::kDirect;
    ASSIGN_OR_RETURN(double m, coll(a));
    return FusedTime(in, m, o);
  }
  if (family == "decomp") {
    const auto g = in.part_gemm_s.find(degree), m = in.part_coll_s.find(degree);
    if (g == in.part_gemm_s.end() || m == in.part_coll_s.end()) {
      return core::InvalidArgument("strategy model: no part times for decomp:" +
                                   std::to_string(degree));
    }
    return o.Predict(g->second, m->second, degree);
  }
  return core::InvalidArgument("strategy model: unknown family '" + family + "'");
}

core::StatusOr<double> PredictStrategy(const std::string& strategy, const StrategyInputs& in,
                                       const OverheadTable& table) {
  const std::string cls = OperatorClassOf(in.kind);
  auto overheads = [&](const std::string& family) {
    const auto it = table.find({family, cls});
    return it == table.end() ? Overheads{} : it->second;
  };
  if (strategy == "te") {
    switch (in.kind) {
      case TpOpKind::kAgGemm:
        return PredictFamily("fused-ring1", 0, in, overheads("fused-ring1"));
      case TpOpKind::kGemmRs: {
        return PredictFamily("decomp", TeRsDegree(in), in, overheads("decomp"));
      }
      case TpOpKind::kWgrad:
        return PredictFamily("none", 0, in, overheads("none"));
    }
  }
  int degree = 0;
  const std::string family = FamilyOf(strategy);
  if (family == "decomp") {
    try {
      degree = std::stoi(strategy.substr(7));
    } catch (...) {
      degree = 0;
    }
    if (degree < 1)
      return core::InvalidArgument("strategy model: bad degree in '" + strategy + "'");
  }
  return PredictFamily(family, degree, in, overheads(family));
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
    t.push_back(s.t_s / std::max(1, s.family == "decomp" ? s.degree : s.inputs->tp));
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
  if (samples[0].family == "none") {
    // Only alpha + delta enters `none`, and no overlap is slowed: one constant, kappa 1.
    return Overheads{best.alpha_s + best.delta_s, 0, 1};
  }
  return best;
}

}  // namespace tessera::compass
