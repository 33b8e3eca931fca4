// DecodeCostModel: the modeled time of one decode step of a Llama model on a GPU cluster preset,
// three ways -- KernelFlume (weights on weight GPUs, the batch's KV spread evenly over attention
// GPUs that hold no weights), KernelFlume with two micro-batches ping-ponged, and a whole model
// instance (weights and KV on the same GPUs) -- with the memory each needs. The roofline of the
// spec, for paper-scale questions no run on this machine can answer. Modeled, never measured:
// every output that uses it says so.
//
// Per layer, with B requests of T KV tokens each, W tensor-parallel weight GPUs, N attention
// nodes, bf16 weights, KV and activations (2 bytes):
//   t_w(B)  = sum over Wq, Wk, Wv, Wo, W_gate, W_up, W_down of the roofline
//             max(2 B n k / (bf16 peak x compute_efficiency), (B k + k n + B n) x 2 bytes / mem_bw)
//             (hw::RooflineGemmSeconds), split over W GPUs: Wq, Wk, Wv, W_gate, W_up by their
//             outputs (n / W), Wo and W_down by their inputs (k / W)
//             + (W > 1) 2 all-reduces of B x hidden x 2 bytes over the intra link (ring:
//               2 (W - 1) steps of latency + 2 (W - 1) / W x bytes / bandwidth each)
//   t_a(n)  = (KV bytes of the tokens on the node) / mem_bw
//             KV bytes = tokens x 2 (K and V) x kv_heads x head_dim x 2 bytes
//   c(n)    = inter.latency + (requests on the node) x (q + o + lse bytes) / inter.bw
//             q = o = heads x head_dim x 2 bytes, lse = heads x 4 bytes
// and once per step the LM head GEMM (B, vocab / W, hidden).
//   kernelflume           = sum_l (t_w(B) + max_n (t_a(n) + c(n)))   + LM head
//   kernelflume_pipelined = sum_l max(2 t_w(B/2), 2 (t_a + c)(B/2))
//                           + min(t_w(B/2), (t_a + c)(B/2))            + LM head
//     (two halves of B ping-pong: per layer the busier side sets the pace; the pipeline fills
//      once per step)
//   instance              = sum_l (t_w(B) + t_a of all B x T tokens over W GPUs) + LM head
// A fleet of instances serving the same batch: k = ceil(B T / an instance's KV capacity)
// instances (at least 1) of W GPUs, each with ceil(B / k) of the requests; its step is the
// instance formula at that batch. Steady-state price per million output tokens, with the
// device's price per GPU-hour p (0 when the preset has none):
//   kernelflume: (W + N) p / 3600 x kernelflume / B x 1e6
//   instances:   k W p / 3600 x instance step at ceil(B / k) / B x 1e6
// (one batch shape held forever: no autoscaling, no queueing, no prefill -- the fleet
// simulator answers those). A request longer than an instance's KV capacity makes the fleet
// infeasible (instances 0, its price 0), which is reported, not refused.
// The KV spreads evenly: each attention node holds B x T / N tokens of ceil(B / N) requests.
// Memory: a weight GPU holds ParamCount x 2 / W bytes; an attention node's KV capacity is its
// usable memory / KV bytes per token; an instance's is its W GPUs' usable memory minus the
// weights, over the KV bytes per token.
// Errors: InvalidArgument naming the field (batch < 1, context < 0, attn_nodes < 1,
// weight_gpus < 1 or more than a node's GPUs); FailedPrecondition when the weights do not fit
// the weight GPUs (naming both sizes) or the KV does not fit the attention nodes.
// Pure; thread-safe.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "hw/cluster.h"
#include "models/llama_config.h"

namespace tessera::kernelflume {

struct DecodeShape {
  int64_t batch = 1;           // requests decoding together
  int64_t context_tokens = 0;  // KV tokens per request
  int attn_nodes = 1;          // attention GPUs the KV spreads over
  int weight_gpus = 1;         // tensor-parallel GPUs of the weight node (and of an instance)
};

struct DecodeStepCost {
  // Per layer.
  double weight_s = 0;     // t_w(B), all-reduces included
  double allreduce_s = 0;  // of which the tensor-parallel all-reduces
  double attention_s = 0;  // t_a on the busiest attention node
  double comm_s = 0;       // c on the busiest attention node
  double instance_attention_s = 0;
  // Per step.
  double lm_head_s = 0;
  double kernelflume_s = 0;
  double kernelflume_pipelined_s = 0;
  double instance_s = 0;
  // Memory.
  double weight_bytes_per_gpu = 0;
  double kv_bytes_per_token = 0;
  double kv_tokens_per_attn_node = 0;  // capacity of one attention node
  double kv_tokens_per_instance = 0;   // capacity left beside the weights on W GPUs (>= 0)
  double kv_tokens_needed = 0;         // B x T
  bool instance_fits = false;          // B x T <= kv_tokens_per_instance
  // The same batch on a fleet of whole instances, and the price of both.
  bool instances_feasible = false;  // an instance holds one request's KV (0 < T <= capacity)
  int64_t instances = 0;            // k (0 when not feasible)
  int64_t instance_batch = 0;       // requests per instance
  double instance_fleet_s = 0;      // one instance's step with instance_batch requests
  double kernelflume_usd_per_mtok = 0;
  double instances_usd_per_mtok = 0;
};

// The step formulas above without the shape and memory checks, for a caller that places the KV
// itself (the fleet simulator): `batch` requests holding `kv_tokens` tokens in all (a request
// need not hold the same share), attention nodes of `attn_device` (a cheaper SKU than the
// cluster's; the cluster's device otherwise). 0 for an empty batch. The caller keeps
// 1 <= weight_gpus and attn_nodes >= 1.
struct FleetStep {
  int64_t batch = 0;
  double kv_tokens = 0;
  int attn_nodes = 1;
  int weight_gpus = 1;
};
double KernelFlumeStepSeconds(const models::LlamaConfig& model, const hw::Cluster& cluster,
                              const hw::Device& attn_device, const FleetStep& step, bool pipelined);
// attention_s (optional): the per-layer KV read.
double InstanceStepSeconds(const models::LlamaConfig& model, const hw::Cluster& cluster,
                           const FleetStep& step, double* attention_s = nullptr);
// Prefill of `new_tokens` after `cached_tokens` already in KV, on W GPUs (the same for an
// instance and a weight node: its history attention is priced on the weight GPUs):
//   sum_l (t_w(new_tokens) + max(4 heads head_dim new (cached + (new + 1) / 2) / W / achieved
//          bf16 FLOP/s, cached KV bytes of the layer / W / mem_bw)) + LM head of one row.
double PrefillSeconds(const models::LlamaConfig& model, const hw::Cluster& cluster,
                      int64_t new_tokens, int64_t cached_tokens, int weight_gpus);
// KernelFlume's prefill (the query-first path of the spec): the prompt goes in chunks of C =
// models::kPrefillChunkTokens (512, the engine's); the weight node runs the linears and each
// chunk's causal self-attention; each chunk's history (the cached tokens and the earlier chunks,
// already appended) is attended on the attention nodes, spread over `attn_nodes` `attn_device`s,
// its queries and outputs crossing the inter link:
//   sum_l (t_w(new) + self / W + max(hist FLOPs / (N x achieved), history KV bytes read of the
//          layer / (N x mem_bw)) + chunks x inter.latency + new x (q + o + lse bytes) / inter.bw)
//   + LM head of one row,
// self = 4 heads head_dim x sum over chunks of c (c + 1) / 2 FLOPs / achieved;
// hist = 4 heads head_dim x sum over chunks of c x (cached + tokens of earlier chunks); the
// history KV is read once per chunk.
double KernelFlumePrefillSeconds(const models::LlamaConfig& model, const hw::Cluster& cluster,
                                 const hw::Device& attn_device, int64_t new_tokens,
                                 int64_t cached_tokens, int attn_nodes, int weight_gpus);

core::StatusOr<DecodeStepCost> ModelDecodeStep(const models::LlamaConfig& model,
                                               const hw::Cluster& cluster,
                                               const DecodeShape& shape);

}  // namespace tessera::kernelflume
