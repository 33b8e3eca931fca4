// SimulateFleet: a trace-driven, discrete-event simulation (sim::EventQueue) of a GPU fleet
// serving a Mooncake-format trace (workload/request_trace.h) two ways under the same autoscaler
// (kernelflume/autoscaler.h, the policy the real server runs):
//   kernelflume    `weight_nodes` weight nodes of `weight_gpus` GPUs (always on) and an elastic
//                  pool of weightless attention nodes holding every request's KV; the policy
//                  adds or drains attention nodes (start: attn_start_s + route_install_s);
//   serverlessllm  whole instances (weights + KV on `weight_gpus` GPUs); the policy adds or
//                  releases instances; an instance starts in weight bytes / tier bandwidth +
//                  instance_init_s, the tier being host DRAM when its machine (a cluster node
//                  of ranks_per_node GPUs) loaded the model before, else SSD (defaults fit the
//                  paper's 1.1 s warm and 10.8 s cold start of Llama-3.1-8B).
// Costs come from decode_cost_model.h (KernelFlumeStepSeconds, InstanceStepSeconds,
// PrefillSeconds): every figure is modeled.
//
// Requests, in both systems alike:
//  - a request whose prompt starts with a request still in flight (its whole full-block list:
//    the previous turn of an agentic session) and is at least that request's prompt + output
//    long (it contains the answer; a request that merely shares a system prompt is not held)
//    is held until
//    that one finishes and arrives then (the trace's time is kept when later); the trace's
//    times assume some decode speed, a slower system must not receive turns it has not
//    answered yet;
//  - wait in one FIFO queue; the head is admitted when some place holds its prompt's KV
//    (active KV + prompt <= capacity; cached KV is evicted, oldest first, to make room) and
//    has fewer than max_batch requests; kernelflume: the weight node with the fewest requests;
//    serverlessllm: the instance holding the longest cached prefix of the prompt (sessions are
//    pinned to their KV) when it fits, else the one with the most free KV;
//  - prefill the prompt minus the cached prefix (kv_prefix_cache.h) before the place's next
//    decode step; decode stalls meanwhile, so the stall is part of the next token's TPOT. With
//    prefill_chunk_tokens = C > 0 (chunked prefill, as the completion engine runs it) each step
//    instead prefills up to C prompt tokens of the admitted requests (oldest first) beside one
//    decode step of the running batch, and takes the sum of both;
//  - decode in steps of the whole batch; a step's time is the cost model's at the batch's KV
//    (kernelflume: the pool's KV over its active attention nodes, two micro-batches when
//    `pipelined`); steps run in chunks of up to chunk_s of simulated time (the step time at
//    the chunk's middle; admissions wait for the chunk's end);
//  - when the place's KV cannot grow by a step, the newest request is preempted (vLLM's
//    recompute: its KV is freed, it returns to the head of the queue with its generated tokens
//    appended to its prompt, and is prefilled again without a cached prefix);
//  - when finished, leave their KV (prompt + output) to the place's prefix cache, for
//    cache_ttl_s (dropped at the first tick after; earlier when room is needed).
// A request whose prompt + output exceeds the largest KV a place can have (kernelflume: every
// attention node the cluster allows; serverlessllm: one instance) is rejected and counted.
// Autoscaler: every tick_s, one decision per tier (kernelflume: attention nodes, then weight
// nodes; serverlessllm: instances) over its nodes, starting ones included with no load. A node's
// load is a share of what it holds: attention node: the pool's KV use; weight node: max(its
// requests / max_batch, the share of the last tick it spent prefilling); instance: max(its KV
// use, its prefill share); KV use counts the cache (a session's KV between turns is worth
// keeping). With tpot_target_ms > 0, the slowest decode step since the last tick over the
// target is a load too: of every attention node (the slowest weight node's step: more
// attention nodes shorten it) and of an instance (its own step). That is the spec's "attention
// time over its share of the TPOT target" trigger, applied to both systems. The policy's "KV use"
// is the tier's mean share with the queue's demand added (a queued request: its prompt's KV over a
// node's capacity for attention nodes; for weight nodes and instances the larger of that share
// (instances) or 1 / max_batch (weight nodes) and its prefill time (uncached tokens; an instance's
// cache is not consulted) over a tick), so kv_high, kv_low, keep_alive_s and cooldown_s act on
// every tier alike; utilisation is not reported (util_high unused). Scale-in drains the emptiest
// node: a weight node or an instance only when it runs nothing (an instance's cache is dropped); an
// attention node when the rest holds the live KV (cache evicted to fit; its sealed ranges move for
// free: migration is not priced). A node still starting is cancelled. A scale-out past the
// cluster's GPUs is skipped. min_nodes start warm at time 0. Output: cost = sum over nodes of GPU
// seconds (from the start request to release or the end of the run) x price per GPU-hour / 3600
// (attention nodes: attn_device's price x attn_price_factor); USD per million output tokens = cost
// / (output tokens of completed requests / 1e6). TPOT samples are token-weighted inter-token gaps,
// each step's tokens in the window of the step's end; p50/p99 are weighted nearest-rank percentiles
// (core::WeightedPercentile). Errors: InvalidArgument naming the option; FailedPrecondition when
// the model's weights do not fit `weight_gpus` GPUs, an instance has no room for KV, or the cluster
// cannot hold the weight nodes and one attention node. Deterministic: the same inputs give the same
// result. Not thread-safe per call; separate calls are independent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "core/trace.h"
#include "hw/cluster.h"
#include "kernelflume/autoscaler.h"
#include "models/llama_config.h"
#include "workload/request_trace.h"

namespace tessera::kernelflume {

enum class FleetSystem { kKernelFlume, kServerlessLlm };
const char* FleetSystemName(FleetSystem s);  // "kernelflume", "serverlessllm"

struct FleetSimOptions {
  int max_gpus = 0;              // the fleet: the cluster's first max_gpus GPUs (0: all)
  int weight_gpus = 1;           // tensor-parallel GPUs of a weight node and of an instance
  int weight_nodes = 1;          // kernelflume's weight nodes always on (started warm)
  int max_weight_nodes = 0;      // kernelflume's weight nodes at most (0: what the cluster holds)
  int64_t max_batch = 256;       // requests decoding together per weight node or instance
  bool pipelined = true;         // kernelflume: two ping-ponged micro-batches
  hw::Device attn_device;        // kernelflume attention-node SKU; empty name: the cluster's
  double attn_price_factor = 1;  // an attention GPU is billed at this x its price (spot, ...)
  AutoscalerOptions autoscaler{.kv_high = 0.85,
                               .kv_low = 0.4,
                               .util_high = 1,
                               .keep_alive_s = 30,
                               .cooldown_s = 2,
                               .min_nodes = 1,
                               .max_nodes = 0};  // 0: as many as the cluster holds (<= 64)
  double tick_s = 5;                             // also the window of the prefill-busy signal
  double attn_start_s = 2;                       // [X]
  double route_install_s = 7.2e-6;               // [P]
  double instance_init_s = 0.5;                  // [X]
  double dram_bytes_per_s = 26.8e9;              // 16.06 GB / (1.1 - 0.5) s  [X fit to P]
  double ssd_bytes_per_s = 1.56e9;               // 16.06 GB / (10.8 - 0.5) s [X fit to P]
  double window_s = 60;
  double chunk_s = 0.1;
  double cache_ttl_s = 60;    // a finished request's KV is kept this long for its next turn [X]
  double tpot_target_ms = 0;  // > 0: a decode step's share of it is a load too (see above)
  int64_t prefill_chunk_tokens = 0;  // > 0: chunked prefill (see above); 0: one stall
};
core::Status ValidateFleetSimOptions(const FleetSimOptions& o);

struct FleetWindow {
  double start_s = 0;
  double tokens = 0;  // TPOT sample weight (output tokens after each request's first)
  double tpot_p50_ms = 0, tpot_p99_ms = 0;
  double gpus_mean = 0;
  int gpus_max = 0;
  double kv_use_mean = 0;  // at the ticks in the window
};

struct FleetRunResult {
  FleetSystem system = FleetSystem::kKernelFlume;
  int64_t requests = 0, completed = 0, rejected = 0;
  int64_t output_tokens = 0;   // of completed requests
  int64_t prefill_tokens = 0;  // computed by prefills (recomputation included)
  int64_t cached_tokens = 0;   // prompt tokens served from a prefix cache
  int64_t preemptions = 0, recomputed_tokens = 0;
  int64_t held_turns = 0;  // arrivals held until the previous turn of their session finished
  int64_t scale_outs = 0, scale_ins = 0, cold_starts = 0, warm_starts = 0;
  int gpus_max = 0;
  double end_s = 0;  // the last completion
  double gpu_hours = 0, cost_usd = 0, usd_per_mtok = 0;
  double tpot_p50_ms = 0, tpot_p99_ms = 0;
  double ttft_p50_s = 0, ttft_p99_s = 0;  // from joining the queue (a held turn: its release)
  // max / min of the window p99 over windows with at least 1% of the mean window's tokens.
  double p99_flatness = 0;
  std::vector<FleetWindow> windows;
  int64_t events = 0;
};

// `trace` is a validated trace (workload::ValidateTrace); `perfetto` (optional) receives one
// track per node (starting, up) and per weight node or instance (prefill spans).
core::StatusOr<FleetRunResult> SimulateFleet(const std::vector<workload::TraceRequest>& trace,
                                             const models::LlamaConfig& model,
                                             const hw::Cluster& cluster, FleetSystem system,
                                             const FleetSimOptions& options,
                                             core::TraceWriter* perfetto = nullptr);

core::Json ToJson(const FleetRunResult& r);

// 1 - KernelFlume's USD per million output tokens / the baseline's (0.61: 61% cheaper); 0 when
// either produced no token.
double FleetCostReduction(const FleetRunResult& kernelflume, const FleetRunResult& baseline);

// The data of the nodes-and-p99-over-time figure (scripts/plot_kernelflume_fleet.py): per run,
// its system and per window start_s, gpus_mean, tpot_p99_ms.
core::Json FleetPlotJson(const std::vector<FleetRunResult>& runs, const std::string& title);

}  // namespace tessera::kernelflume
