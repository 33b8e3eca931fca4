// BurstTrace: a seeded open-loop workload for KernelFlume's scaling benchmarks: requests arrive
// as a Poisson process whose rate steps up during a burst and back down after it, each with a
// random prompt and output length (uniform in the given ranges), so the KV the pool must hold
// climbs during the burst and falls after it.
//
//   rate(t) = burst_rate_per_s   for burst_start_s <= t < burst_end_s,
//             base_rate_per_s    otherwise, for 0 <= t < duration_s;
// arrivals are drawn by thinning a Poisson process of rate max(base, burst): candidate gaps
// ~ Exp(max rate), each candidate kept with probability rate(t) / max rate. Prompt tokens are
// uniform over [0, min(vocab, 256)) (byte-like text). Everything comes from one core::Rng of
// `seed`: the same options give the same trace on every machine.
// Errors: InvalidArgument naming the field (a rate < 0 or both 0, a burst window outside
// [0, duration_s] or empty, a min above its max, prompt + output over the model's context).
// Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "models/llama_config.h"

namespace tessera::kernelflume {

struct BurstTraceOptions {
  double duration_s = 60;
  double base_rate_per_s = 0.2;
  double burst_rate_per_s = 0.7;
  double burst_start_s = 15;
  double burst_end_s = 30;
  int64_t prompt_tokens_min = 256, prompt_tokens_max = 1024;
  int64_t output_tokens_min = 400, output_tokens_max = 800;
  uint64_t seed = 1;
};

struct TraceRequest {
  double arrival_s = 0;
  std::vector<int32_t> prompt;
  int64_t max_tokens = 0;
};

core::Status ValidateBurstTrace(const BurstTraceOptions& o, const models::LlamaConfig& config);
// Requests in arrival order.
core::StatusOr<std::vector<TraceRequest>> MakeBurstTrace(const BurstTraceOptions& o,
                                                         const models::LlamaConfig& config);

}  // namespace tessera::kernelflume
