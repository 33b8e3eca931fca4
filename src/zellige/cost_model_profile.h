// ProfileCostModel: the CostModel (cost_model.h) pricing with a measured Profile
// (profile.h; docs/zellige.md "Profile-priced cost model"). The cluster is
// ProfileCluster(profile), the model ProfileDitModel(profile); per participating rank
//   fwd_s = EvalQuadratic(fwd_fit, L), bwd_s = EvalQuadratic(bwd_fit, L),
//   mem_bytes = EvalLine(mem_fit, L)  (above BaseMemoryBytes() = profile base_bytes),
//   compute_s = fwd_s + bwd_s, comm_s = 0 (the measured prices include communication),
//   comm_bytes = the analytic formulas (cost_model_analytic.h; bytes only, for reporting),
//   BaseMemoryBytes() = base_bytes, MemoryCapacityBytes() = usable_bytes_per_rank - base_bytes,
//   StepOverheadS() = step_overhead_s (paid once per step by every rank),
//   SegmentSharedS(theta) = the fits' intercepts (a of a + b L + c L^2, clamped >= 0) for a
//     split config, measured with one sequence per segment; {0, 0} for whole sequences
//     (their prices are measured as coalesced copies already),
//   ContentionSpeed(busy) = 1 + (solo_speedup - 1) * (N - busy) / (N - 1) (busy clamped to
//     [1, N]): solo_speedup for a rank working alone, interpolated linearly in the idle
//     ranks; 1 for N = 1 or solo_speedup = 1,
//   RankTimeFactor(ranks) = the largest of the ranks' rank_time_factors (1 without factors
//     or for an empty set).
// There is no ideal setting: options().ideal is false. Only configs the profile measured may
// be priced: callers check Supports() first (Cost() and MemoryBytes() CHECK-fail
// otherwise); a valid profile holds every config the planners may use at its ranks
// (planner_configs.h), so only a knapformer.bags option can ask for one it lacks. Times are
// seconds, sizes bytes. Immutable; thread-safe (the profile is shared, read-only).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "hw/cluster.h"
#include "models/dit_spec.h"
#include "zellige/cost_model.h"
#include "zellige/profile.h"

namespace tessera::zellige {

class ProfileCostModel final : public CostModel {
 public:
  // `profile` must be non-null (CHECK).
  explicit ProfileCostModel(std::shared_ptr<const Profile> profile);

  SeqCost Cost(int64_t tokens, const ParallelConfig& config,
               const std::vector<int>& ranks) const override;
  double MemoryBytes(int64_t tokens, const ParallelConfig& config) const override;
  double BaseMemoryBytes() const override { return profile_->base_bytes; }
  double StepOverheadS() const override { return profile_->step_overhead_s; }
  std::pair<double, double> SegmentSharedS(const ParallelConfig& config) const override;
  double ContentionSpeed(int busy_ranks) const override;
  bool HasContention() const override;
  double RankTimeFactor(const std::vector<int>& ranks) const override;
  core::Status Supports(const ParallelConfig& config) const override;
  const Profile* profile() const override { return profile_.get(); }

 private:
  // The prices of `config`; CHECK-fails when the profile lacks it.
  const ConfigPrices& Prices(const ParallelConfig& config) const;

  std::shared_ptr<const Profile> profile_;  // non-null
};

// The cluster a profile describes: "profile:<machine>", provenance = the profile's, one
// node of `ranks` ranks, memory = usable_bytes_per_rank (usable fraction 1), link (intra and
// inter) = the point-to-point fit with the fewest ranks (bw = 1 / beta, latency = alpha), or
// 1 GB/s and 10 us when the profile has none or its link is outside hw's plausible range. Device
// peak_flops / compute_efficiency are positive placeholders, unused for pricing.
hw::Cluster ProfileCluster(const Profile& p);
// The cost model's view of the profile's SmallDit shape: hidden, heads, layers, ffn, no
// text, fp32.
models::DitModel ProfileDitModel(const Profile& p);

}  // namespace tessera::zellige
