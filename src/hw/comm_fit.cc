#include "hw/comm_fit.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/fit.h"
#include "core/parse_number.h"

namespace tessera::hw {

namespace {}  // namespace

core::StatusOr<AlphaBeta> FitAlphaBeta(const std::vector<CommSample>& samples) {
  std::vector<double> xs, ys;
  for (size_t i = 0; i < samples.size(); ++i) {
    const CommSample& s = samples[i];
    if (!(s.bytes >= 0) || !std::isfinite(s.bytes) || !(s.time_s >= 0) ||
        !std::isfinite(s.time_s)) {
      return core::InvalidArgument("comm fit: samples[" + std::to_string(i) + "]: got bytes " +
                                   core::ShowNumber(s.bytes) + ", time_s " +
                                   core::ShowNumber(s.time_s) + ", must be finite and >= 0");
    }
    xs.push_back(s.bytes);
    ys.push_back(s.time_s);
  }
  const std::set<double> distinct(xs.begin(), xs.end());
  if (distinct.size() < 2) {
    return core::InvalidArgument("comm fit: got " + std::to_string(distinct.size()) +
                                 " distinct message sizes, must be >= 2");
  }
  ASSIGN_OR_RETURN(auto line, core::FitLine(xs, ys));
  return AlphaBeta{std::max(0.0, line[0]), std::max(0.0, line[1])};
}

core::StatusOr<Link> ToLink(const AlphaBeta& fit, const std::string& name) {
  if (!(fit.beta_s_per_byte > 0) || !std::isfinite(fit.beta_s_per_byte)) {
    return core::InvalidArgument("comm fit " + name + ": beta_s_per_byte: got " +
                                 core::ShowNumber(fit.beta_s_per_byte) +
                                 ", must be > 0 and finite (a link has a finite bandwidth)");
  }
  if (!(fit.alpha_s >= 0) || !std::isfinite(fit.alpha_s)) {
    return core::InvalidArgument("comm fit " + name + ": alpha_s: got " +
                                 core::ShowNumber(fit.alpha_s) + ", must be finite and >= 0");
  }
  return Link{name, 1.0 / fit.beta_s_per_byte, fit.alpha_s};
}

}  // namespace tessera::hw
