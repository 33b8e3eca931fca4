// CostModel: time, communication and memory of one sequence's training step (forward +
// backward) under a parallel config on a rank set of a cluster, in one of two modes:
//
// Analytic (constructed from a Cluster and a DitModel): modeled from FLOPs and an
// alpha-beta network, with activation checkpointing. Every formula is documented in
// docs/zellige.md ("Cost model").
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
//
// Profile-priced (constructed from a Profile, profile.h; docs/zellige.md "Profile-priced
// cost model"): the cluster is ProfileCluster(profile), the model ProfileDitModel(profile),
// and per participating rank
//   fwd_s = EvalQuadratic(fwd_fit, L), bwd_s = EvalQuadratic(bwd_fit, L),
//   mem_bytes = EvalLine(mem_fit, L)  (above BaseMemoryBytes() = profile base_bytes),
//   compute_s = fwd_s + bwd_s, comm_s = 0 (the measured prices include communication),
//   comm_bytes = the analytic formulas above (bytes only, for reporting),
//   BaseMemoryBytes() = base_bytes, MemoryCapacityBytes() = usable_bytes_per_rank - base_bytes,
//   StepOverheadS() = step_overhead_s (paid once per step by every rank; the simulator adds
//   it to the makespan).
// Options.ideal is ignored (treated as false) in profile mode. Only configs the profile
// measured may be priced: callers check Supports() first (Cost() CHECK-fails otherwise);
// a valid profile holds every config of every power-of-two degree up to its ranks.
// Times are seconds, sizes bytes. Immutable after construction; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/status.h"
#include "hw/cluster.h"
#include "models/dit_spec.h"
#include "zellige/parallel_config.h"
#include "zellige/profile.h"

namespace tessera::zellige {

struct CostModelOptions {
  // Theorem-1 setting: no communication, no replicated work, unlimited memory, so a
  // sequence split over g ranks costs exactly 1/g of its whole time on each.
  bool ideal = false;
};

struct SeqCost {
  double fwd_s = 0;       // forward pass, all layers, per participating rank
  double bwd_s = 0;       // recompute + backward, all layers, per participating rank
  double compute_s = 0;   // compute part of fwd_s + bwd_s
  double comm_s = 0;      // exposed (not overlapped) communication part of fwd_s + bwd_s
  double comm_bytes = 0;  // attention communication sent by each participating rank
  double mem_bytes = 0;   // memory charged to each participating rank
  double time_s() const { return fwd_s + bwd_s; }
};

class CostModel {
 public:
  // Analytic mode.
  CostModel(hw::Cluster cluster, models::DitModel model, CostModelOptions options = {});
  // Profile-priced mode; `profile` must be non-null (shared, read-only).
  explicit CostModel(std::shared_ptr<const Profile> profile, CostModelOptions options = {});

  // Cost of `tokens` under `config` on `ranks` (|ranks| == config.degree(), distinct
  // ranks of the cluster; the caller validates). Symmetric: every member gets this.
  SeqCost Cost(int64_t tokens, const ParallelConfig& config, const std::vector<int>& ranks) const;
  // Time of the whole sequence on one rank.
  double WholeTime(int64_t tokens) const;
  // Per-rank memory of one sequence's share (activations, K/V, buffers; profile: mem_fit).
  double MemoryBytes(int64_t tokens, const ParallelConfig& config) const;
  // Memory every rank holds regardless of placement: bf16 weights (replicated), gradients
  // and AdamW state sharded over all ranks (ZeRO), 1 GiB workspace (profile: base_bytes).
  double BaseMemoryBytes() const;
  // usable_memory_bytes - BaseMemoryBytes(); +infinity in the ideal setting.
  double MemoryCapacityBytes() const;
  // Time every rank spends once per step outside the sequences (0 analytic; profile:
  // step_overhead_s: loss and gradient all-reduce, optimizer).
  double StepOverheadS() const;
  // The part of a split sequence's price (fwd, bwd) paid once per engine segment rather than
  // per sequence: split sequences with the same config and ordered rank set share their
  // collectives (zellige/engine/attention_engine.h), so the simulator charges it only to the first
  // of them. Profile mode: the fits' intercepts (a of a + b L + c L^2, clamped >= 0) for a
  // split config, measured with one sequence per segment; 0 for whole sequences (their
  // prices are measured as coalesced copies already) and in analytic mode.
  std::pair<double, double> SegmentSharedS(const ParallelConfig& config) const;
  // Speed of a rank's work while `busy_ranks` of the N ranks work (1 <= busy_ranks <= N),
  // relative to the prices (which hold with every rank busy): 1 in analytic mode; profile
  // mode 1 + (solo_speedup - 1) * (N - busy_ranks) / (N - 1), i.e. solo_speedup for a rank
  // working alone, interpolated linearly in the idle ranks (the simulator uses it).
  double ContentionSpeed(int busy_ranks) const;
  // Whether ContentionSpeed differs from 1 for some busy count.
  bool HasContention() const;
  // How many times its price a placement on `ranks` takes: the largest of the ranks'
  // profile rank_time_factors (a split sequence runs at its slowest member's pace); 1 in
  // analytic mode and for a profile without factors. The simulator applies it; planners
  // price with 1 (they assume identical ranks).
  double RankTimeFactor(const std::vector<int>& ranks) const;
  // Ok when `config` can be priced: always in analytic mode; in profile mode when the
  // profile measured it, else InvalidArgument naming the config and the profile's ranks.
  core::Status Supports(const ParallelConfig& config) const;

  // Forward FLOPs per layer of `tokens` on one rank (whole), split into linear and attention
  // (analytic quantities in both modes).
  double LinearFlopsPerLayer(double local_tokens) const;
  double AttentionFlopsPerLayer(double tokens, int degree) const;

  const hw::Cluster& cluster() const { return cluster_; }
  const models::DitModel& model() const { return model_; }
  const CostModelOptions& options() const { return options_; }
  // The profile pricing this model, or nullptr in analytic mode.
  const Profile* profile() const { return profile_.get(); }

 private:
  // Time of a collective step moving `intra_bytes` over the intra-node link and
  // `inter_bytes` over the inter-node link in parallel, plus the slowest latency.
  double StepTime(double intra_bytes, double inter_bytes, bool crosses_nodes) const;
  // Attention communication bytes sent by each participating rank, all layers, forward +
  // recompute + backward (0 for a whole sequence or in the ideal setting).
  double CommBytes(double tokens, const ParallelConfig& config) const;
  // The prices of `config` (profile mode); CHECK-fails when the profile lacks it.
  const ConfigPrices& Prices(const ParallelConfig& config) const;

  hw::Cluster cluster_;
  models::DitModel model_;
  CostModelOptions options_;
  double flops_per_s_;
  std::shared_ptr<const Profile> profile_;  // null in analytic mode
};

}  // namespace tessera::zellige
