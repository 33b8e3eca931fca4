// EngineProfile: the measured cost of one CompletionEngine iteration on this machine, fitted to
// the iterations of a real run (EngineIteration records), so that the engine simulator
// (engine_sim.h) can predict a run it has not seen. An iteration admits, prefills up to
// prefill_tokens_per_step prompt tokens, samples every prefilled request's token, then runs
// one batched forward; its time is modeled as two parts:
//   prefill_s = per_prefill_token_s x P + per_prefill_pair_s x pairs
//               (P prompt tokens; pairs = sum over chunks of len x (start + (len + 1) / 2),
//                the attention a causal chunk does over its history and itself)
//   decode_s  = base_s + per_request_s x B + per_kv_token_s x KV
//               (B requests in the forward, KV their tokens)
// Fit: weighted least squares of duration_s on those five terms with relative residuals
// (weight 1 / duration^2: short decode iterations, which set the TPOT median, count as much as
// long prefill ones); a term whose coefficient comes out negative is dropped and the rest
// refitted, so every prediction is >= 0. fit_mape_percent is the fit's error on its own
// iterations (in-sample; a prediction's error is measured on other runs).
// The machine's noise: residual_quantiles holds the 0th, 1st, ..., 100th percentile of
// measured / predicted over the fitted iterations (a scheduler hiccup, a cache miss, another
// process on the core); the engine simulator draws each iteration's factor from it
// (ResidualFactor), so its tail reflects this machine's, not a noiseless engine's.
// Errors: InvalidArgument when fewer than 10 iterations, or the fit is singular (no iteration
// with a prefill, say: then the prefill terms are dropped). JSON: kind "kernelflume-engine-
// profile", version 1, the five coefficients, iterations, fit_mape_percent, machine, source.
// Plain values; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "kernelflume/completion_engine.h"

namespace tessera::kernelflume {

struct EngineProfile {
  double base_s = 0, per_request_s = 0, per_kv_token_s = 0;
  double per_prefill_token_s = 0, per_prefill_pair_s = 0;
  int64_t iterations = 0;
  double fit_mape_percent = 0;
  std::vector<double> residual_quantiles;  // 101 values, or empty (a noiseless profile)
  std::string source;                      // where it was measured (a command, a date)

  double PrefillSeconds(int64_t tokens, double pairs) const {
    return tokens <= 0
               ? 0
               : per_prefill_token_s * static_cast<double>(tokens) + per_prefill_pair_s * pairs;
  }
  double DecodeSeconds(int64_t batch, int64_t kv_tokens) const {
    return base_s + per_request_s * static_cast<double>(batch) +
           per_kv_token_s * static_cast<double>(kv_tokens);
  }
  double IterationSeconds(const EngineIteration& it) const {
    return PrefillSeconds(it.prefill_tokens, it.prefill_pairs) +
           DecodeSeconds(it.decode_batch, it.decode_kv_tokens);
  }
  // The residual factor at uniform draw u in [0, 1] (linear between percentiles); 1 without
  // residuals.
  double ResidualFactor(double u) const;
};

core::StatusOr<EngineProfile> FitEngineProfile(const std::vector<EngineIteration>& iterations);

core::Json ToJson(const EngineProfile& p);
// Checks kind, version, that every coefficient is finite and >= 0 and that residual_quantiles
// (optional) has 101 finite, positive, non-decreasing values (naming the field).
core::StatusOr<EngineProfile> EngineProfileFromJson(const core::Json& j, const std::string& source);
core::StatusOr<EngineProfile> ReadEngineProfile(const std::string& path);

}  // namespace tessera::kernelflume
