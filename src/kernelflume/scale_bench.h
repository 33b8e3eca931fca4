// ScaleBench: `tessera kernelflume bench tpot` and `bench scale` as a library service -- a
// bursty trace (BurstTrace) served while the pool scales out and back in, with the TPOT each
// client saw judged per window (TpotByWindow).
//
// Two systems serve the same trace on the same machine:
//   kernelflume  one weight node (this process: CompletionEngine over an AttentionCluster of
//                attention-node processes over UCX) whose attention pool the AutoscaleLoop
//                takes from min_nodes up to max_nodes and back, on promised KV;
//   instances    the baseline: whole model instances (InstancePool), each loading its own
//                weights from weights_dir and holding its own KV, scaled by the same policy.
// Both start with min_nodes units before the clock starts; a node and an instance hold the
// same KV (capacity_tokens), and both engines run the same batching (max_active, chunked
// prefill of prefill_tokens_per_step). Each request runs on its own client thread: it sleeps
// until its arrival, submits (an instance pool may hold it in its queue), and stamps every
// token as it reaches the client (steady clock, seconds since the start). A sampler records
// the pool (units, KV use, queue) every 0.25 s. The run ends when every request has ended,
// and then waits up to settle_s more for the pool to shrink back to min_nodes (sampled).
// Exactness: with check = true every request's tokens are compared with the monolithic model's
// greedy tokens afterwards (mismatches counted).
// Errors: bad options are InvalidArgument naming the field; a failed start is returned.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "kernelflume/burst_trace.h"
#include "kernelflume/completion_engine.h"
#include "kernelflume/tpot_windows.h"
#include "kernelflume/weight_node.h"
#include "models/llama.h"

namespace tessera::kernelflume {

struct ScaleBenchOptions {
  BurstTraceOptions trace;
  std::vector<TraceRequest> requests;  // when not empty, served instead of `trace` (a replay)
  bool record_iterations = false;      // kernelflume: keep the engine's iterations
  int min_nodes = 1, max_nodes = 3;
  int64_t capacity_tokens = 2048;  // per attention node, or per instance
  int32_t page_tokens = 64;
  double keep_alive_s = 8, cooldown_s = 2;
  double window_s = 10;
  int64_t min_window_samples = 20;
  int max_active = 16;
  int64_t prefill_tokens_per_step = 64;
  double settle_s = 30;
  bool check = false;
  std::vector<std::string> node_command;  // kernelflume: argv prefix of `attn-node` (empty:
                                          // in-process nodes, "fake" transport -- tests)
  std::string weights_dir;                // instances: where each instance loads from
};

enum class ScaleSystem { kKernelFlume, kInstances };
const char* ScaleSystemName(ScaleSystem s);

struct PoolSample {
  double t_s = 0;
  int units = 0;  // attention nodes, or instances
  double kv_use = 0;
  int64_t queued = 0;
};

struct ScaleRunReport {
  std::string system;
  int64_t requests = 0, completed = 0, failed = 0, tokens = 0, mismatched = 0;
  std::string first_error;
  TpotWindowReport tpot;
  std::vector<PoolSample> pool;
  int most_units = 0, units_at_end = 0;
  std::vector<int> units_path;        // the unit counts in the order the pool went through them
  std::vector<int> window_units_max;  // per TPOT window: the most units sampled in it
  std::vector<double> unit_start_ms;  // scale-out decision -> node joined / instance loaded
  std::vector<ElasticEvent> events;   // kernelflume: the pool's changes, t_s on the run's clock
  double ttft_ms_p50 = 0, ttft_ms_p99 = 0;
  double tpot_ms_p50 = 0, tpot_ms_p99 = 0;   // over every token gap of the run
  std::vector<EngineIteration> iterations;   // with record_iterations
  std::vector<std::vector<double>> token_s;  // per request, each token's time (s)
  double window_s = 0;
  double wall_s = 0;
};

core::Status ValidateScaleBench(const ScaleBenchOptions& o, const models::LlamaConfig& config);
// Internal when a request differs from the monolithic model (with check), Unavailable when a
// request failed (naming the first error); Ok otherwise. Timings are reported, never judged.
core::Status ScaleVerdict(const ScaleRunReport& report);
core::StatusOr<ScaleRunReport> RunScaleBench(const models::LlamaModel& model,
                                             const ScaleBenchOptions& options, ScaleSystem system);

}  // namespace tessera::kernelflume
