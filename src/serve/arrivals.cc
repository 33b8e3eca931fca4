#include "serve/arrivals.h"

#include <fmt/format.h>

#include <cmath>

namespace tessera::serve {

core::StatusOr<ArrivalKind> ParseArrivalKind(const std::string& text) {
  if (text == "poisson") return ArrivalKind::kPoisson;
  if (text == "gamma") return ArrivalKind::kGamma;
  const std::string shown = text.size() > 40 ? text.substr(0, 40) + "..." : text;
  return core::InvalidArgument("arrivals: got '" + shown + "', must be poisson or gamma");
}

double GammaDraw(core::Rng& rng, double shape) {
  if (shape < 1) {
    const double u = rng.Uniform();
    return GammaDraw(rng, shape + 1) * std::pow(u > 0 ? u : 1e-300, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = rng.Normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = rng.Uniform();
    if (u < 1 - 0.0331 * x * x * x * x) return d * v;
    if (u > 0 && std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v))) return d * v;
  }
}

core::StatusOr<std::vector<double>> ArrivalTimes(ArrivalKind kind, double rate_rps, double cv,
                                                 double duration_s, uint64_t seed) {
  if (!(rate_rps > 0) || !std::isfinite(rate_rps)) {
    return core::InvalidArgument(fmt::format("rate: got {}, must be > 0 requests/s", rate_rps));
  }
  if (!(duration_s > 0) || !std::isfinite(duration_s)) {
    return core::InvalidArgument(fmt::format("duration: got {}, must be > 0 seconds", duration_s));
  }
  if (kind == ArrivalKind::kGamma && (!(cv >= 0.05) || cv > 20)) {
    return core::InvalidArgument(fmt::format("cv: got {}, must be in [0.05, 20]", cv));
  }
  if (rate_rps * duration_s > static_cast<double>(kMaxArrivals) / 2) {
    return core::InvalidArgument(
        fmt::format("rate x duration: got {} expected requests, must be at most {}",
                    rate_rps * duration_s, kMaxArrivals / 2));
  }
  core::Rng rng(seed);
  const double shape = kind == ArrivalKind::kGamma ? 1.0 / (cv * cv) : 1.0;
  std::vector<double> times;
  double t = 0;
  for (;;) {
    double gap;
    if (kind == ArrivalKind::kPoisson) {
      gap = -std::log(1.0 - rng.Uniform()) / rate_rps;
    } else {
      gap = GammaDraw(rng, shape) / (shape * rate_rps);
    }
    t += gap;
    if (t >= duration_s) break;
    if (static_cast<int64_t>(times.size()) >= kMaxArrivals) {
      return core::InvalidArgument(
          fmt::format("arrivals: more than {} in {} s", kMaxArrivals, duration_s));
    }
    times.push_back(t);
  }
  return times;
}

core::StatusOr<std::vector<TraceArrival>> ArrivalTraceFromJson(const core::Json& j,
                                                               const std::string& source,
                                                               int templates) {
  if (!j.is_array() || j.empty()) {
    return core::InvalidArgument(
        fmt::format("{}: got {}, must be a non-empty array of {{\"at_s\", \"template\"}}", source,
                    core::ShowJson(j)));
  }
  if (j.size() > static_cast<size_t>(kMaxArrivals)) {
    return core::InvalidArgument(
        fmt::format("{}: got {} arrivals, at most {}", source, j.size(), kMaxArrivals));
  }
  std::vector<TraceArrival> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string path = fmt::format("{}[{}]", source, i);
    RETURN_IF_ERROR(core::CheckKnownKeys(j[i], path, {"at_s", "template"}));
    TraceArrival a;
    ASSIGN_OR_RETURN(a.at_s, core::GetDoubleInRange(j[i], path, "at_s", 0, 1e6));
    ASSIGN_OR_RETURN(const int64_t t,
                     core::GetIntInRange(j[i], path, "template", 0, templates - 1));
    a.template_index = static_cast<int>(t);
    if (!out.empty() && a.at_s < out.back().at_s) {
      return core::InvalidArgument(
          fmt::format("{}.at_s: got {}, before the previous arrival ({}): times must not decrease",
                      path, a.at_s, out.back().at_s));
    }
    out.push_back(a);
  }
  return out;
}

core::StatusOr<std::vector<TraceArrival>> ReadArrivalTrace(const std::string& path, int templates) {
  ASSIGN_OR_RETURN(core::Json j, core::ReadJsonFile(path));
  return ArrivalTraceFromJson(j, path, templates);
}

}  // namespace tessera::serve
