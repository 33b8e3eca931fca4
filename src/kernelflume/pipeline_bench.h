// RunPipelineBench: KernelFlume's inter-layer pipelining measured -- `tessera kernelflume bench
// pipeline` as a library service (the CLI parses and prints; the arithmetic is here).
//
// Setup: an AttentionCluster of ONE attention node (by default a child process over ucx, the
// CLI's `kernelflume attn-node`), `batch` requests each filled to `context_tokens` positions of
// random KV through DisaggregatedAttention::AppendOnly (the normal append protocol, no model
// forward, so a long context fills in seconds). With pin_cpus and >= 2 CPUs, the node process
// runs on CPU 1 and every thread of this process (compute and transport) on CPU 0, for the rest
// of this process's life: "1 weight + 1 attention process on 2 cores".
// Validation before timing: a mirror set of `batch` requests holding the same KV takes the same
// step as ONE micro-batch, its messages never batched, while the bench's set takes it as TWO
// (batched when batch_messages); their logits must agree within
// 1e-5 (norm-wise relative, per request), else Internal. The mirror is then freed.
// Then `warmup_steps + steps` rounds, each of four decode steps (one new token per request;
// tokens fed back greedily), p50 over the last `steps` rounds:
//   t_w       the weight node's compute of one step alone: models::LlamaBatchDecode over the
//             batch with an instantaneous core attention (each query attends only its own new
//             token: zero-length history), no transport;
//   t_w_split the same weight work as two micro-batches, one after the other (the GEMMs over
//             half the rows each re-read the weights);
//   t_a       the attention side of one step: per layer the real queries' round trip (every
//             request's BeginLayer, then every FinishLayer: self partial, append, the node's
//             partial, merge) with precomputed q, k, v, i.e. the step with an instantaneous
//             weight side, timed on the weight node (its queries leave as the real steps'
//             do: batched per layer when batch_messages);
//   one_mb    a real decode step as ONE micro-batch (PipelinedDecode::StepOne);
//   two_mb    the same as TWO ping-ponged micro-batches split by SplitByAttentionTokens.
// bound = PipelineBound(t_w, t_a) = (t_w + t_a) / max(t_w, t_a); speedup = one_mb / two_mb;
// t_a_weight_cpu is the CPU time this (weight) process spends during the attention-only step,
// all its threads (sending, the self partials, merging, the transport's threads): the part of
// t_a that two micro-batches cannot overlap with the weight side's GEMMs on one core.
// split_bound = (t_w + t_a) / max(t_w_split, t_a): the bound once halving the batch's GEMMs is
// paid for (on a CPU each micro-batch's GEMMs re-read every weight).
// Every figure is measured on this machine; nothing here asserts on a time.
// Errors: batch < 2, context_tokens < 1, steps < 1, or a context past the model's max_context
// are InvalidArgument naming the field; a cluster that cannot start, a lost node or a failed
// validation end the run with that error.
// Thread-safety: one call at a time; it may re-pin this process's threads (pin_cpus).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/llama.h"

namespace tessera::kernelflume {

struct PipelineBenchOptions {
  int64_t batch = 256;
  int64_t context_tokens = 384;  // with batch 256: t_w ~ t_a (bound ~2) on the 2-core VM
  int64_t steps = 20;
  int64_t warmup_steps = 2;
  std::string transport = "ucx";          // "ucx" | "fake"
  bool processes = true;                  // the node as a child process (ucx only)
  std::vector<std::string> node_command;  // argv prefix of `kernelflume attn-node`
  bool pin_cpus = true;
  // With pin_cpus: the weight process's transport threads on CPU 1 beside the node (a "host
  // proxy" placement), only its compute thread on CPU 0. Reported in `placement`.
  bool transport_threads_on_node_cpu = false;
  // Queries and appends of a micro-batch's layer as one message per node (send_batch.h), in
  // every timed step (one_mb, two_mb, t_a); false: one message per request and layer.
  bool batch_messages = true;
  uint64_t seed = 1;  // random KV and first tokens
};

struct PipelineBenchReport {
  std::string model;
  int64_t batch = 0, context_tokens = 0, steps = 0;
  int64_t micro_batch_a = 0, micro_batch_b = 0;  // requests in each
  int64_t tokens_a = 0, tokens_b = 0;            // their attention tokens at the first step
  std::string placement;                         // where the processes ran
  bool batch_messages = false;
  double validation_max_rel_err = 0;  // two vs one micro-batches, logits
  double t_w_ms = 0, t_w_split_ms = 0, t_a_ms = 0, t_a_weight_cpu_ms = 0;
  double bound = 0, split_bound = 0;
  double one_mb_ms = 0, two_mb_ms = 0;
  double speedup = 0;
  double fill_s = 0;  // filling the KV (both sets)
  // Every round's times (ms), in order.
  std::vector<double> t_w_samples, t_w_split_samples, t_a_samples, t_a_weight_cpu_samples,
      one_mb_samples, two_mb_samples;
};

// Called with a short phase name ("fill", "validate", "steps") and a fraction done in [0, 1].
using PipelineBenchProgress = std::function<void(const char*, double)>;

core::StatusOr<PipelineBenchReport> RunPipelineBench(const models::LlamaModel& model,
                                                     const PipelineBenchOptions& options,
                                                     const PipelineBenchProgress& progress = {});

}  // namespace tessera::kernelflume
