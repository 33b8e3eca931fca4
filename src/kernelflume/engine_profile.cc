#include "kernelflume/engine_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "core/fit.h"
#include "core/stats.h"

namespace tessera::kernelflume {

namespace {

constexpr int kTerms = 5;  // base, per request, per KV token, per prefill token, per pair

std::array<double, kTerms> Terms(const EngineIteration& it) {
  return {1.0, static_cast<double>(it.decode_batch), static_cast<double>(it.decode_kv_tokens),
          static_cast<double>(it.prefill_tokens), it.prefill_pairs};
}

EngineProfile FromCoefficients(const std::array<double, kTerms>& c) {
  EngineProfile p;
  p.base_s = c[0];
  p.per_request_s = c[1];
  p.per_kv_token_s = c[2];
  p.per_prefill_token_s = c[3];
  p.per_prefill_pair_s = c[4];
  return p;
}

}  // namespace

core::StatusOr<EngineProfile> FitEngineProfile(const std::vector<EngineIteration>& iterations) {
  std::vector<const EngineIteration*> used;
  for (const EngineIteration& it : iterations) {
    if (it.duration_s > 0 && std::isfinite(it.duration_s)) used.push_back(&it);
  }
  if (used.size() < 10) {
    return core::InvalidArgument(
        fmt::format("iterations: got {} with a positive duration, must be >= 10 to fit a profile",
                    used.size()));
  }
  std::array<bool, kTerms> on = {true, true, true, true, true};
  bool any_prefill = false;
  for (const EngineIteration* it : used) any_prefill = any_prefill || it->prefill_tokens > 0;
  if (!any_prefill) on[3] = on[4] = false;
  std::array<double, kTerms> c{};
  for (int round = 0; round < kTerms; ++round) {
    std::vector<int> cols;
    for (int j = 0; j < kTerms; ++j) {
      if (on[j]) cols.push_back(j);
    }
    if (cols.empty()) return core::InvalidArgument("iterations: every term of the fit dropped");
    std::vector<std::vector<double>> rows;
    std::vector<double> y, w;
    for (const EngineIteration* it : used) {
      const std::array<double, kTerms> t = Terms(*it);
      std::vector<double> row;
      for (int j : cols) row.push_back(t[j]);
      rows.push_back(std::move(row));
      y.push_back(it->duration_s);
      w.push_back(1 / (it->duration_s * it->duration_s));
    }
    auto solved = core::SolveWeightedLeastSquares(rows, y, w);
    if (!solved.ok()) return solved.status().WithPrefix("engine profile fit");
    c.fill(0);
    int worst = -1;
    for (size_t k = 0; k < cols.size(); ++k) {
      c[cols[k]] = (*solved)[k];
      if ((*solved)[k] < 0 && (worst < 0 || (*solved)[k] < c[worst])) worst = cols[k];
    }
    if (worst < 0) break;
    on[worst] = false;  // a negative cost: drop the term and refit
  }
  EngineProfile p = FromCoefficients(c);
  p.iterations = static_cast<int64_t>(used.size());
  double ape = 0;
  for (const EngineIteration* it : used) {
    ape += std::abs(p.IterationSeconds(*it) - it->duration_s) / it->duration_s;
  }
  p.fit_mape_percent = 100 * ape / static_cast<double>(used.size());
  std::vector<double> ratios;
  for (const EngineIteration* it : used) {
    const double predicted = p.IterationSeconds(*it);
    if (predicted > 0) ratios.push_back(it->duration_s / predicted);
  }
  if (!ratios.empty()) {
    for (int q = 0; q <= 100; ++q) p.residual_quantiles.push_back(core::Percentile(ratios, q));
  }
  return p;
}

double EngineProfile::ResidualFactor(double u) const {
  if (residual_quantiles.size() != 101) return 1;
  const double x = std::clamp(u, 0.0, 1.0) * 100;
  const size_t i = std::min<size_t>(static_cast<size_t>(x), 99);
  const double f = x - static_cast<double>(i);
  return residual_quantiles[i] * (1 - f) + residual_quantiles[i + 1] * f;
}

core::Json ToJson(const EngineProfile& p) {
  return {{"kind", "kernelflume-engine-profile"},
          {"version", 1},
          {"base_s", p.base_s},
          {"per_request_s", p.per_request_s},
          {"per_kv_token_s", p.per_kv_token_s},
          {"per_prefill_token_s", p.per_prefill_token_s},
          {"per_prefill_pair_s", p.per_prefill_pair_s},
          {"iterations", p.iterations},
          {"fit_mape_percent", p.fit_mape_percent},
          {"residual_quantiles", p.residual_quantiles},
          {"source", p.source}};
}

core::StatusOr<EngineProfile> EngineProfileFromJson(const core::Json& j,
                                                    const std::string& source) {
  if (!j.is_object()) return core::InvalidArgument(source + ": not a JSON object");
  if (j.value("kind", std::string()) != "kernelflume-engine-profile") {
    return core::InvalidArgument(fmt::format(
        "{}: kind: got '{}', must be kernelflume-engine-profile (write one with `tessera "
        "kernelflume replay --fit-profile-out`)",
        source, j.value("kind", std::string())));
  }
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"] != 1) {
    return core::InvalidArgument(source + ": version: must be 1");
  }
  EngineProfile p;
  const std::pair<const char*, double*> fields[] = {{"base_s", &p.base_s},
                                                    {"per_request_s", &p.per_request_s},
                                                    {"per_kv_token_s", &p.per_kv_token_s},
                                                    {"per_prefill_token_s", &p.per_prefill_token_s},
                                                    {"per_prefill_pair_s", &p.per_prefill_pair_s}};
  for (const auto& [name, out] : fields) {
    if (!j.contains(name) || !j[name].is_number()) {
      return core::InvalidArgument(fmt::format("{}: {}: missing or not a number", source, name));
    }
    const double v = j[name].get<double>();
    if (!std::isfinite(v) || v < 0) {
      return core::InvalidArgument(
          fmt::format("{}: {}: got {}, must be a finite number >= 0", source, name, v));
    }
    *out = v;
  }
  if (j.contains("iterations") && j["iterations"].is_number_integer()) {
    p.iterations = j["iterations"].get<int64_t>();
  }
  if (j.contains("fit_mape_percent") && j["fit_mape_percent"].is_number()) {
    p.fit_mape_percent = j["fit_mape_percent"].get<double>();
  }
  if (j.contains("source") && j["source"].is_string()) p.source = j["source"].get<std::string>();
  if (j.contains("residual_quantiles")) {
    const core::Json& q = j["residual_quantiles"];
    bool good = q.is_array() && (q.empty() || q.size() == 101);
    double last = 0;
    for (size_t i = 0; good && i < q.size(); ++i) {
      good = q[i].is_number() && std::isfinite(q[i].get<double>()) && q[i].get<double>() > 0 &&
             q[i].get<double>() >= last;
      if (good) last = q[i].get<double>();
      if (good) p.residual_quantiles.push_back(last);
    }
    if (!good) {
      return core::InvalidArgument(
          source + ": residual_quantiles: must be 101 positive, non-decreasing numbers (or [])");
    }
  }
  return p;
}

core::StatusOr<EngineProfile> ReadEngineProfile(const std::string& path) {
  ASSIGN_OR_RETURN(core::Json j, core::ReadJsonFile(path));
  return EngineProfileFromJson(j, path);
}

}  // namespace tessera::kernelflume
