#include "zellige/cost_model_profile.h"

#include <algorithm>
#include <string>

#include "core/check.h"
#include "core/units.h"
#include "hw/comm_fit.h"

namespace tessera::zellige {

namespace {

const Profile& Deref(const std::shared_ptr<const Profile>& p) {
  CHECK(p != nullptr) << "ProfileCostModel: null profile";
  return *p;
}

// Used when a profile has no usable point-to-point fit (modeled guesses, shared memory).
constexpr double kFallbackBwBytesPerS = 1 * core::kGB;
constexpr double kFallbackLatencyS = 1e-5;
// Not used to price anything in profile mode (the measured fits are); positive so that the
// cluster validates and analytic helpers stay finite.
constexpr double kUnusedPeakFlops = 1e11;
constexpr double kUnusedMemBwBytesPerS = 1e10;

}  // namespace

ProfileCostModel::ProfileCostModel(std::shared_ptr<const Profile> profile)
    : CostModel(ProfileCluster(Deref(profile)), ProfileDitModel(*profile), CostModelOptions{}),
      profile_(std::move(profile)) {}

const ConfigPrices& ProfileCostModel::Prices(const ParallelConfig& config) const {
  const ConfigPrices* p = profile_->Find(config);
  CHECK(p != nullptr) << "config " << config.ToString()
                      << " is not in the profile; check CostModel::Supports first";
  return *p;
}

core::Status ProfileCostModel::Supports(const ParallelConfig& config) const {
  if (profile_->Find(config) != nullptr) return core::Status::Ok();
  return core::InvalidArgument("config " + config.ToString() + ": not measured by the profile (" +
                               std::to_string(profile_->ranks) + " ranks, configs up to degree " +
                               std::to_string(profile_->ranks) + ")");
}

bool ProfileCostModel::HasContention() const {
  return profile_->ranks > 1 && profile_->solo_speedup != 1.0;
}

double ProfileCostModel::ContentionSpeed(int busy_ranks) const {
  if (!HasContention()) return 1.0;
  const int n = profile_->ranks;
  const int idle = n - std::clamp(busy_ranks, 1, n);
  return 1.0 + (profile_->solo_speedup - 1.0) * static_cast<double>(idle) / (n - 1);
}

double ProfileCostModel::RankTimeFactor(const std::vector<int>& ranks) const {
  if (profile_->rank_time_factors.empty() || ranks.empty()) return 1.0;
  double f = 0;
  for (int r : ranks) f = std::max(f, profile_->rank_time_factors.at(r));
  return f;
}

std::pair<double, double> ProfileCostModel::SegmentSharedS(const ParallelConfig& config) const {
  if (config.whole()) return {0.0, 0.0};
  const ConfigPrices* cp = profile_->Find(config);
  if (cp == nullptr) return {0.0, 0.0};
  return {std::max(0.0, cp->fwd_fit[0]), std::max(0.0, cp->bwd_fit[0])};
}

double ProfileCostModel::MemoryBytes(int64_t tokens, const ParallelConfig& config) const {
  return EvalLine(Prices(config).mem_fit, static_cast<double>(tokens));
}

SeqCost ProfileCostModel::Cost(int64_t tokens, const ParallelConfig& config,
                               const std::vector<int>& ranks) const {
  CHECK_EQ(static_cast<int>(ranks.size()), config.degree());
  const ConfigPrices& prices = Prices(config);
  const double L = static_cast<double>(tokens);
  SeqCost out;
  out.fwd_s = EvalQuadratic(prices.fwd_fit, L);
  out.bwd_s = EvalQuadratic(prices.bwd_fit, L);
  out.compute_s = out.time_s();  // measured prices include communication
  out.comm_s = 0;
  out.comm_bytes = CommBytes(L, config);
  out.mem_bytes = EvalLine(prices.mem_fit, L);
  return out;
}

hw::Cluster ProfileCluster(const Profile& p) {
  hw::Cluster c;
  c.name = "profile:" + p.machine;
  c.provenance = p.provenance;
  c.device.name = p.machine;
  c.device.peak_flops.bf16 = kUnusedPeakFlops;
  c.device.mem_bw_bytes_per_s = kUnusedMemBwBytesPerS;
  c.device.memory_bytes = p.usable_bytes_per_rank;
  c.device.memory_usable_fraction = 1.0;
  c.device.compute_efficiency = 1.0;
  c.nodes = 1;
  c.ranks_per_node = p.ranks;
  hw::Link link{"p2p (fallback, modeled)", kFallbackBwBytesPerS, kFallbackLatencyS};
  // The point-to-point fit with the fewest participants (2 when measured).
  const CommFit* best = nullptr;
  for (const CommFit& f : p.comm) {
    if (f.primitive != "p2p" || !(f.beta_s_per_byte > 0)) continue;
    if (best == nullptr || f.ranks < best->ranks) best = &f;
  }
  if (best != nullptr) {
    auto measured = hw::ToLink(best->alpha_beta(), "p2p (measured)");
    if (measured.ok() && hw::Validate(*measured, "p2p").ok()) link = *measured;
  }
  c.intra = link;
  c.inter = link;
  return c;
}

models::DitModel ProfileDitModel(const Profile& p) {
  return models::DitModel{"small-dit",
                          static_cast<int>(p.model.hidden),
                          static_cast<int>(p.model.heads),
                          static_cast<int>(p.model.layers),
                          static_cast<int>(p.model.ffn),
                          /*text_tokens=*/0,
                          /*bytes_per_elem=*/4};
}

}  // namespace tessera::zellige
