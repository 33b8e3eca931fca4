// Trace replay: a Mooncake-format trace (workload/request_trace.h), scaled down to what this
// machine can serve, replayed on real processes (the completion engine over attention-node
// processes: ScaleBench with explicit requests), and the same scaled trace predicted by the
// engine simulator (engine_sim.h) from a measured EngineProfile -- the check that the way the
// simulators model an engine matches real runs. `tessera kernelflume replay` is the command.
//
// Scaling (ScaleTraceForReplay): the requests at or after start_s of trace time, at most
// max_requests of them (0: all); each arrives at (timestamp - start) x time_scale; its prompt
// has max(1, round(input_length x token_scale)) tokens and its output max(1, round(
// output_length x output_scale)) (output_scale 0: token_scale), both clamped so that prompt +
// output fits the model's context (counted in `clamped`); prompt tokens are seeded bytes
// uniform over [0, min(vocab, 256)) (the prompt's content does not change the engine's work).
// Comparison (CompareReplay): TPOT samples are every gap between consecutive tokens of one
// request (TpotGapsMs); p50 and p99 (core::Percentile) of the real and the predicted run, and
// the absolute relative error of each prediction, |predicted - real| / real.
// Errors: InvalidArgument naming the option (scales <= 0, an empty selection).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "kernelflume/burst_trace.h"
#include "kernelflume/engine_sim.h"
#include "models/llama_config.h"
#include "workload/request_trace.h"

namespace tessera::kernelflume {

struct ReplayScaling {
  double token_scale = 0.01;
  double output_scale = 0;  // 0: token_scale
  double time_scale = 1;
  double start_s = 0;
  int64_t max_requests = 0;  // 0: every request from start_s
  uint64_t seed = 1;
};

struct ScaledTrace {
  std::vector<TraceRequest> requests;
  int64_t clamped = 0;  // requests whose lengths were cut to fit the context
};

core::StatusOr<ScaledTrace> ScaleTraceForReplay(const std::vector<workload::TraceRequest>& trace,
                                                const ReplayScaling& scaling,
                                                const models::LlamaConfig& config);

// The engine simulator's requests for a scaled trace, each reserving what the engine reserves
// (ReserveTokens with the cluster's page size and range length).
std::vector<EngineSimRequest> EngineSimRequestsOf(const std::vector<TraceRequest>& requests,
                                                  int64_t page_tokens, int64_t range_tokens);

struct ReplayComparison {
  int64_t real_samples = 0, predicted_samples = 0;
  double real_p50_ms = 0, real_p99_ms = 0, predicted_p50_ms = 0, predicted_p99_ms = 0;
  double p50_error = 0, p99_error = 0;  // |predicted - real| / real
};

ReplayComparison CompareReplay(const std::vector<std::vector<double>>& real_token_s,
                               const std::vector<std::vector<double>>& predicted_token_s);

}  // namespace tessera::kernelflume
