// LegacyCostModel: a verbatim copy of zellige::CostModel as it was before it became an
// interface (one class with an `if (profile_)` switch per method), kept only as the oracle
// of cost_model_differential_test.cc. Not part of the library; do not use elsewhere.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/status.h"
#include "hw/cluster.h"
#include "models/dit_spec.h"
#include "zellige/cost_model.h"
#include "zellige/parallel_config.h"
#include "zellige/profile.h"

namespace tessera::zellige::legacy {

class LegacyCostModel {
 public:
  // Analytic mode.
  LegacyCostModel(hw::Cluster cluster, models::DitModel model, CostModelOptions options = {});
  // Profile-priced mode; `profile` must be non-null (shared, read-only).
  explicit LegacyCostModel(std::shared_ptr<const Profile> profile, CostModelOptions options = {});

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

}  // namespace tessera::zellige::legacy
