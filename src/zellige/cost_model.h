// CostModel: time, communication and memory of one sequence's training step (forward +
// backward) under a parallel config on a rank set of a cluster. An interface with two
// implementations, each documented in its header:
//
//   AnalyticCostModel (cost_model_analytic.h; MakeAnalyticCostModel): a Cluster and a
//     DitModel, modeled from FLOPs and an alpha-beta network with activation checkpointing
//     (docs/zellige.md "Cost model").
//   ProfileCostModel (cost_model_profile.h; MakeProfileCostModel): prices measured on one
//     machine (a Profile, profile.h; docs/zellige.md "Profile-priced cost model").
//
// Shared by both (this class): the cluster and model priced, the options, the analytic FLOP
// counts, the attention communication bytes (reported by both, priced only analytically),
// WholeTime and MemoryCapacityBytes.
// Times are seconds, sizes bytes. Implementations are immutable after construction and
// thread-safe.
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
  virtual ~CostModel() = default;
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  // Cost of `tokens` under `config` on `ranks` (|ranks| == config.degree(), distinct
  // ranks of the cluster; the caller validates and checks Supports(config) first).
  // Symmetric: every member gets this.
  virtual SeqCost Cost(int64_t tokens, const ParallelConfig& config,
                       const std::vector<int>& ranks) const = 0;
  // Per-rank memory of one sequence's share (activations, K/V, buffers).
  virtual double MemoryBytes(int64_t tokens, const ParallelConfig& config) const = 0;
  // Memory every rank holds regardless of placement (weights, optimizer state, workspace).
  virtual double BaseMemoryBytes() const = 0;
  // Time every rank spends once per step outside the sequences (loss, gradient all-reduce,
  // optimizer); the simulator adds it to the makespan.
  virtual double StepOverheadS() const = 0;
  // The part (fwd, bwd) of a split sequence's price paid once per engine segment rather than
  // per sequence: split sequences with the same config and ordered rank set share their
  // collectives (zellige/engine/attention_engine.h), so the simulator charges it only to the
  // first of them. {0, 0} when nothing is shared.
  virtual std::pair<double, double> SegmentSharedS(const ParallelConfig& config) const = 0;
  // Speed of a rank's work while `busy_ranks` of the N ranks work (1 <= busy_ranks <= N),
  // relative to the prices (which hold with every rank busy); the simulator uses it.
  virtual double ContentionSpeed(int busy_ranks) const = 0;
  // Whether ContentionSpeed differs from 1 for some busy count.
  virtual bool HasContention() const = 0;
  // How many times its price a placement on `ranks` takes (a split sequence runs at its
  // slowest member's pace). The simulator applies it; planners price with 1 (they assume
  // identical ranks).
  virtual double RankTimeFactor(const std::vector<int>& ranks) const = 0;
  // Ok when `config` can be priced, else InvalidArgument naming the config.
  virtual core::Status Supports(const ParallelConfig& config) const = 0;
  // The measured profile behind the prices, or nullptr when the model is not profile-priced.
  virtual const Profile* profile() const { return nullptr; }

  // Time of the whole sequence on one rank: Cost(tokens, {1,1,1}, {0}).time_s().
  double WholeTime(int64_t tokens) const;
  // cluster().usable_memory_bytes() - BaseMemoryBytes(); +infinity in the ideal setting.
  double MemoryCapacityBytes() const;

  // Forward FLOPs per layer on one rank, split into linear and attention (analytic
  // quantities of model(), whichever implementation prices):
  //   linear    = local_tokens * (12 d^2 + 4 d F + 4 T d)
  //   attention = 4 tokens^2 d / degree
  double LinearFlopsPerLayer(double local_tokens) const;
  double AttentionFlopsPerLayer(double tokens, int degree) const;

  const hw::Cluster& cluster() const { return cluster_; }
  const models::DitModel& model() const { return model_; }
  const CostModelOptions& options() const { return options_; }

 protected:
  CostModel(hw::Cluster cluster, models::DitModel model, CostModelOptions options);

  // Attention communication bytes sent by each participating rank of a `tokens`-token
  // sequence under `config`, all layers, forward + recompute + backward (0 for a whole
  // sequence or in the ideal setting); formulas in cost_model_analytic.h.
  double CommBytes(double tokens, const ParallelConfig& config) const;

 private:
  hw::Cluster cluster_;
  models::DitModel model_;
  CostModelOptions options_;
};

// The analytic cost model of `model` on `cluster` (AnalyticCostModel).
std::unique_ptr<CostModel> MakeAnalyticCostModel(hw::Cluster cluster, models::DitModel model,
                                                 CostModelOptions options = {});
// The cost model pricing with `profile` (ProfileCostModel); `profile` must be non-null.
std::unique_ptr<CostModel> MakeProfileCostModel(std::shared_ptr<const Profile> profile);

}  // namespace tessera::zellige
