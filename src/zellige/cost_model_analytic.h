// AnalyticCostModel: the CostModel (cost_model.h) of a DitModel on a Cluster, modeled from
// FLOPs and an alpha-beta network, with activation checkpointing. Every formula is
// documented in docs/zellige.md ("Cost model").
// Per participating rank r of a sequence of L tokens under theta = (q,h,k), lambda = qhk,
// with L_r = L / lambda local tokens, d = hidden, F = ffn, T = text tokens, b = bytes/elem:
//   linear FLOPs/layer (fwd)  = L_r * (12 d^2 + 4 d F + 4 T d) + 4 T d^2 (text K/V, replicated)
//   attention FLOPs/layer     = 4 L^2 d / lambda
//   train = fwd + recompute (1x fwd) + backward (2x linear, 2.5x attention)
//   communication (alpha-beta over the links the rank set spans), per layer and pass:
//     Ulysses (h>1): all-to-all of Q,K,V in and O out, (h-1)/h * L_r * 4 d b bytes
//     all-gather (q>1): (q-1) chunks of (L/(qk)) * (2d/h) * b bytes, ring all-gather
//     ring (k>1): k-1 steps of (L/k) * (2d/h) * b bytes, overlapped with attention
//   memory = activations (checkpointed layer inputs + one live layer) + resident K/V
//            + communication buffers (see MemoryBytes).
//   base memory = bf16 weights (replicated) + gradients and AdamW state sharded over all
//                 ranks (ZeRO, 14 bytes/param) + 1 GiB workspace; 0 in the ideal setting.
// No step overhead, no shared per-segment part, no contention, every rank factor 1, every
// config supported. Times are seconds, sizes bytes. Immutable; thread-safe.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "zellige/cost_model.h"

namespace tessera::zellige {

class AnalyticCostModel final : public CostModel {
 public:
  AnalyticCostModel(hw::Cluster cluster, models::DitModel model, CostModelOptions options = {});

  SeqCost Cost(int64_t tokens, const ParallelConfig& config,
               const std::vector<int>& ranks) const override;
  double MemoryBytes(int64_t tokens, const ParallelConfig& config) const override;
  double BaseMemoryBytes() const override;
  double StepOverheadS() const override { return 0.0; }
  std::pair<double, double> SegmentSharedS(const ParallelConfig&) const override {
    return {0.0, 0.0};
  }
  double ContentionSpeed(int) const override { return 1.0; }
  bool HasContention() const override { return false; }
  double RankTimeFactor(const std::vector<int>&) const override { return 1.0; }
  core::Status Supports(const ParallelConfig&) const override { return core::Status::Ok(); }

 private:
  // Time of a collective step moving `intra_bytes` over the intra-node link and
  // `inter_bytes` over the inter-node link in parallel, plus the slowest latency.
  double StepTime(double intra_bytes, double inter_bytes, bool crosses_nodes) const;

  double flops_per_s_;  // peak bf16 FLOP/s x compute efficiency of the cluster's device
};

}  // namespace tessera::zellige
