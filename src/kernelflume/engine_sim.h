// SimulateEngine: the single-process twin of a CompletionEngine run -- the same trace through
// the engine's schedule (completion_engine.h), with each iteration's time taken from a measured
// EngineProfile instead of a real forward, on sim::EventQueue. It predicts the token times a
// replay (`tessera kernelflume replay`) measures, so the way the simulators model an engine can
// be checked against real processes.
//
// The schedule, as the engine runs it: requests queue in arrival order; an iteration starts
// when the engine is idle and requests arrive (after every arrival of that instant), or right
// after the previous one while any request is queued or running. Each iteration
//   (1) admits queue heads while fewer than max_active run and the head's reservation
//       (reserve_tokens) fits the pool's capacity minus the running requests' reservations;
//   (2) prefills at most prefill_tokens_per_step prompt tokens, oldest admitted first, in
//       chunks of at most models::kPrefillChunkTokens (profile.PrefillSeconds);
//   (3) emits a token for every fully prefilled request at that instant (a request leaves
//       after max_tokens);
//   (4) runs the batched forward of the requests still running and prefilled
//       (profile.DecodeSeconds(batch, their prompt + generated tokens)).
// Both parts of an iteration are multiplied by one factor drawn from the profile's residuals
// (EngineProfile::ResidualFactor of a seeded uniform draw; 1 for a noiseless profile). The
// engine's 50 ms idle wait, node failures and cancellation are not modeled.
// Errors: InvalidArgument for options below 1, or a request that is not in arrival order, has
// no prompt or max_tokens < 1, or reserves more than the capacity (the engine refuses it).
// Deterministic for a seed; pure.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "kernelflume/engine_profile.h"

namespace tessera::kernelflume {

struct EngineSimRequest {
  double arrival_s = 0;
  int64_t prompt_tokens = 0;
  int64_t max_tokens = 0;
  int64_t reserve_tokens = 0;  // ReserveTokens(prompt + max_tokens, ...)
};

struct EngineSimOptions {
  int max_active = 16;
  int64_t prefill_tokens_per_step = 512;
  int64_t capacity_tokens = 0;  // the pool's KV capacity (all nodes)
  uint64_t seed = 1;            // draws of the profile's residual factor, one per iteration
};

struct EngineSimResult {
  std::vector<std::vector<double>> token_s;  // per request: each token's time (s)
  int64_t iterations = 0;
};

core::StatusOr<EngineSimResult> SimulateEngine(const std::vector<EngineSimRequest>& requests,
                                               const EngineSimOptions& options,
                                               const EngineProfile& profile);

}  // namespace tessera::kernelflume
