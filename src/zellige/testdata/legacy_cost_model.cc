#include "zellige/testdata/legacy_cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"
#include "core/units.h"

namespace tessera::zellige::legacy {

namespace {
constexpr double kLinearBwdFactor = 2.0;     // backward of a GEMM layer: dX and dW
constexpr double kAttentionBwdFactor = 2.5;  // flash-attention backward / forward
constexpr double kWorkspaceBytes = 1 * core::kGiB;

// Used when a profile has no usable point-to-point fit (modeled guesses, shared memory).
constexpr double kFallbackBwBytesPerS = 1 * core::kGB;
constexpr double kFallbackLatencyS = 1e-5;
// Not used to price anything in profile mode (the measured fits are); positive so that the
// cluster validates and analytic helpers stay finite.
constexpr double kUnusedPeakFlops = 1e11;
constexpr double kUnusedMemBwBytesPerS = 1e10;

hw::Cluster LegacyProfileCluster(const Profile& p) {
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
    if (measured.ok()) link = *measured;
  }
  c.intra = link;
  c.inter = link;
  return c;
}

models::DitModel LegacyProfileDitModel(const Profile& p) {
  return models::DitModel{"small-dit",
                          static_cast<int>(p.model.hidden),
                          static_cast<int>(p.model.heads),
                          static_cast<int>(p.model.layers),
                          static_cast<int>(p.model.ffn),
                          /*text_tokens=*/0,
                          /*bytes_per_elem=*/4};
}

const Profile& Deref(const std::shared_ptr<const Profile>& p) {
  CHECK(p != nullptr) << "LegacyCostModel: null profile";
  return *p;
}
}  // namespace

LegacyCostModel::LegacyCostModel(hw::Cluster cluster, models::DitModel model,
                                 CostModelOptions options)
    : cluster_(std::move(cluster)),
      model_(std::move(model)),
      options_(options),
      flops_per_s_(cluster_.device.PeakFlops(hw::Dtype::kBF16) *
                   cluster_.device.compute_efficiency) {}

LegacyCostModel::LegacyCostModel(std::shared_ptr<const Profile> profile, CostModelOptions options)
    : cluster_(LegacyProfileCluster(Deref(profile))),
      model_(LegacyProfileDitModel(*profile)),
      options_(options),
      flops_per_s_(cluster_.device.PeakFlops(hw::Dtype::kBF16) *
                   cluster_.device.compute_efficiency),
      profile_(std::move(profile)) {
  options_.ideal = false;  // measured prices have no ideal setting
}

const ConfigPrices& LegacyCostModel::Prices(const ParallelConfig& config) const {
  const ConfigPrices* p = profile_->Find(config);
  CHECK(p != nullptr) << "config " << config.ToString()
                      << " is not in the profile; check LegacyCostModel::Supports first";
  return *p;
}

core::Status LegacyCostModel::Supports(const ParallelConfig& config) const {
  if (!profile_ || profile_->Find(config) != nullptr) return core::Status::Ok();
  return core::InvalidArgument("config " + config.ToString() + ": not measured by the profile (" +
                               std::to_string(profile_->ranks) + " ranks, configs up to degree " +
                               std::to_string(profile_->ranks) + ")");
}

double LegacyCostModel::StepOverheadS() const { return profile_ ? profile_->step_overhead_s : 0.0; }

bool LegacyCostModel::HasContention() const {
  return profile_ && profile_->ranks > 1 && profile_->solo_speedup != 1.0;
}

double LegacyCostModel::ContentionSpeed(int busy_ranks) const {
  if (!HasContention()) return 1.0;
  const int n = profile_->ranks;
  const int idle = n - std::clamp(busy_ranks, 1, n);
  return 1.0 + (profile_->solo_speedup - 1.0) * static_cast<double>(idle) / (n - 1);
}

double LegacyCostModel::RankTimeFactor(const std::vector<int>& ranks) const {
  if (!profile_ || profile_->rank_time_factors.empty()) return 1.0;
  double f = 0;
  for (int r : ranks) f = std::max(f, profile_->rank_time_factors.at(r));
  return ranks.empty() ? 1.0 : f;
}

std::pair<double, double> LegacyCostModel::SegmentSharedS(const ParallelConfig& config) const {
  if (!profile_ || config.whole()) return {0.0, 0.0};
  const ConfigPrices* cp = profile_->Find(config);
  if (cp == nullptr) return {0.0, 0.0};
  return {std::max(0.0, cp->fwd_fit[0]), std::max(0.0, cp->bwd_fit[0])};
}

double LegacyCostModel::LinearFlopsPerLayer(double local_tokens) const {
  const double d = model_.hidden, f = model_.ffn, t = model_.text_tokens;
  // self-attn QKV+O (8d^2), cross-attn Q+O (4d^2), FFN (4dF), cross-attn scores+PV (4Td).
  return local_tokens * (12 * d * d + 4 * d * f + 4 * t * d);
}

double LegacyCostModel::AttentionFlopsPerLayer(double tokens, int degree) const {
  return 4.0 * tokens * tokens * model_.hidden / degree;
}

double LegacyCostModel::StepTime(double intra_bytes, double inter_bytes, bool crosses_nodes) const {
  double lat = crosses_nodes ? cluster_.inter.latency_s : cluster_.intra.latency_s;
  return lat + std::max(intra_bytes / cluster_.intra.bw_bytes_per_s,
                        inter_bytes / cluster_.inter.bw_bytes_per_s);
}

double LegacyCostModel::MemoryBytes(int64_t tokens, const ParallelConfig& c) const {
  if (profile_) return EvalLine(Prices(c).mem_fit, static_cast<double>(tokens));
  if (options_.ideal) return 0;
  const double d = model_.hidden, f = model_.ffn, b = model_.bytes_per_elem;
  const double L = static_cast<double>(tokens);
  const double local = L / c.degree();
  // Checkpointed input of every layer plus one live layer during recompute/backward
  // (Q, O, cross-attn, norms, FFN in/out: 8d + 2F values per token; K/V counted below).
  double act = local * model_.layers * d * b + local * (8 * d + 2 * f) * b;
  // Resident K/V of the attention: L/k tokens at H/h heads.
  double kv = (L / c.k) * (2 * d / c.h) * b;
  double buf = 0;
  if (c.k > 1) buf += 2 * (L / c.k) * (2 * d / c.h) * b;  // ring receive + dK/dV buffers
  if (c.h > 1) buf += local * 4 * d * b;                  // all-to-all staging
  return act + kv + buf;
}

double LegacyCostModel::BaseMemoryBytes() const {
  if (profile_) return profile_->base_bytes;
  if (options_.ideal) return 0;
  const double p = model_.params();
  return p * model_.bytes_per_elem + p * 14.0 / cluster_.num_ranks() + kWorkspaceBytes;
}

double LegacyCostModel::MemoryCapacityBytes() const {
  if (options_.ideal) return std::numeric_limits<double>::infinity();
  return cluster_.usable_memory_bytes() - BaseMemoryBytes();
}

double LegacyCostModel::WholeTime(int64_t tokens) const {
  return Cost(tokens, ParallelConfig{}, {0}).time_s();
}

double LegacyCostModel::CommBytes(double L, const ParallelConfig& c) const {
  const int lambda = c.degree();
  if (options_.ideal || lambda == 1) return 0;
  const double d = model_.hidden, b = model_.bytes_per_elem;
  double fwd_bytes = 0, bwd_bytes = 0;  // per layer; bwd = recompute + backward
  if (c.h > 1) {
    const double per_peer = (L / lambda) * 4 * d * b / c.h;
    fwd_bytes += (c.h - 1) * per_peer;
    bwd_bytes += 2 * (c.h - 1) * per_peer;  // dO in, dQ/dK/dV out
  }
  if (c.q > 1) {
    const double chunk = (L / (c.q * c.k)) * (2 * d / c.h) * b;
    fwd_bytes += (c.q - 1) * chunk;
    bwd_bytes += 2 * (c.q - 1) * chunk;  // recompute all-gather + reduce-scatter of dK/dV
  }
  if (c.k > 1) {
    const double block = (L / c.k) * (2 * d / c.h) * b;
    fwd_bytes += (c.k - 1) * block;
    bwd_bytes += (c.k - 1) * block + (c.k - 1) * 2 * block;  // recompute + (K/V + dK/dV)
  }
  return model_.layers * (fwd_bytes + bwd_bytes);
}

SeqCost LegacyCostModel::Cost(int64_t tokens, const ParallelConfig& c,
                              const std::vector<int>& ranks) const {
  CHECK_EQ(static_cast<int>(ranks.size()), c.degree());
  if (profile_) {
    const ConfigPrices& prices = Prices(c);
    const double L = static_cast<double>(tokens);
    SeqCost out;
    out.fwd_s = EvalQuadratic(prices.fwd_fit, L);
    out.bwd_s = EvalQuadratic(prices.bwd_fit, L);
    out.compute_s = out.time_s();  // measured prices include communication
    out.comm_s = 0;
    out.comm_bytes = CommBytes(L, c);
    out.mem_bytes = EvalLine(prices.mem_fit, L);
    return out;
  }
  const double L = static_cast<double>(tokens);
  const int lambda = c.degree();
  const double local = L / lambda;
  const double d = model_.hidden, b = model_.bytes_per_elem;
  const int layers = model_.layers;

  // Compute per layer.
  double lin = LinearFlopsPerLayer(local);
  if (!options_.ideal) lin += 4.0 * model_.text_tokens * d * d;  // text K/V, replicated
  const double lin_fwd_s = lin / flops_per_s_;
  const double attn_fwd_s = AttentionFlopsPerLayer(L, lambda) / flops_per_s_;
  const double attn_bwd_s = kAttentionBwdFactor * attn_fwd_s;
  const double lin_bwd_s = kLinearBwdFactor * lin_fwd_s;

  SeqCost out;
  out.mem_bytes = MemoryBytes(tokens, c);
  double fwd_comm_s = 0, bwd_comm_s = 0;                    // exposed, per layer
  double ring_fwd_s = attn_fwd_s, ring_bwd_s = attn_bwd_s;  // attention incl. ring overlap

  if (!options_.ideal && lambda > 1) {
    // Member i of the set has coordinates hi = i % h, qi = (i / h) % q, ki = i / (h q).
    auto node = [&](int i) { return cluster_.NodeOf(ranks[i]); };
    auto member = [&](int hi, int qi, int ki) { return (ki * c.q + qi) * c.h + hi; };
    if (c.h > 1) {
      // Worst Ulysses group: bytes to peers in the same node vs other nodes.
      double per_peer = local * 4 * d * b / c.h;
      double worst = 0;
      bool crosses = false;
      for (int ki = 0; ki < c.k; ++ki)
        for (int qi = 0; qi < c.q; ++qi)
          for (int hi = 0; hi < c.h; ++hi) {
            int me = member(hi, qi, ki);
            int off = 0;
            for (int hj = 0; hj < c.h; ++hj)
              if (hj != hi && node(member(hj, qi, ki)) != node(me)) ++off;
            crosses |= off > 0;
            double t = StepTime((c.h - 1 - off) * per_peer, off * per_peer, off > 0);
            worst = std::max(worst, t);
          }
      fwd_comm_s += worst;
      bwd_comm_s += 2 * worst;  // recompute + backward (dO in, dQ/dK/dV out)
      (void)crosses;
    }
    auto ring_crosses = [&](auto next_of, int n, int count_groups, auto member_of) {
      // true if any hop of any ring of `n` members crosses nodes.
      for (int g = 0; g < count_groups; ++g)
        for (int j = 0; j < n; ++j)
          if (node(member_of(g, j)) != node(member_of(g, next_of(j)))) return true;
      return false;
    };
    if (c.q > 1) {
      double chunk = (L / (c.q * c.k)) * (2 * d / c.h) * b;
      bool x = ring_crosses([&](int j) { return (j + 1) % c.q; }, c.q, c.h * c.k,
                            [&](int g, int j) { return member(g % c.h, j, g / c.h); });
      double t = (c.q - 1) * StepTime(x ? 0 : chunk, x ? chunk : 0, x);
      fwd_comm_s += t;
      bwd_comm_s += 2 * t;  // recompute all-gather + reduce-scatter of dK/dV
    }
    if (c.k > 1) {
      double block = (L / c.k) * (2 * d / c.h) * b;
      bool x = ring_crosses([&](int j) { return (j + 1) % c.k; }, c.k, c.h * c.q,
                            [&](int g, int j) { return member(g % c.h, g / c.h, j); });
      double step_comm = StepTime(x ? 0 : block, x ? block : 0, x);
      double step_comm_bwd = StepTime(x ? 0 : 2 * block, x ? 2 * block : 0, x);
      ring_fwd_s = attn_fwd_s / c.k + (c.k - 1) * std::max(attn_fwd_s / c.k, step_comm);
      ring_bwd_s = attn_bwd_s / c.k + (c.k - 1) * std::max(attn_bwd_s / c.k, step_comm_bwd);
    }
  }
  // Forward: linear + attention (+ ring overlap) + exposed collectives.
  const double fwd_layer = lin_fwd_s + ring_fwd_s + fwd_comm_s;
  // Backward phase: recompute the forward, then the backward.
  const double bwd_layer = (lin_fwd_s + ring_fwd_s) + (lin_bwd_s + ring_bwd_s) + bwd_comm_s;
  out.fwd_s = layers * fwd_layer;
  out.bwd_s = layers * bwd_layer;
  out.compute_s = layers * (2 * lin_fwd_s + lin_bwd_s + 2 * attn_fwd_s + attn_bwd_s);
  out.comm_s = out.time_s() - out.compute_s;
  out.comm_bytes = CommBytes(L, c);
  return out;
}

}  // namespace tessera::zellige::legacy
