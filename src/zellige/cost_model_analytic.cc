#include "zellige/cost_model_analytic.h"

#include <algorithm>

#include "core/check.h"
#include "core/units.h"

namespace tessera::zellige {

namespace {
constexpr double kLinearBwdFactor = 2.0;     // backward of a GEMM layer: dX and dW
constexpr double kAttentionBwdFactor = 2.5;  // flash-attention backward / forward
constexpr double kWorkspaceBytes = 1 * core::kGiB;
}  // namespace

AnalyticCostModel::AnalyticCostModel(hw::Cluster cluster, models::DitModel model,
                                     CostModelOptions options)
    : CostModel(std::move(cluster), std::move(model), options),
      flops_per_s_(this->cluster().device.PeakFlops(hw::Dtype::kBF16) *
                   this->cluster().device.compute_efficiency) {}

double AnalyticCostModel::StepTime(double intra_bytes, double inter_bytes,
                                   bool crosses_nodes) const {
  const hw::Cluster& cl = cluster();
  double lat = crosses_nodes ? cl.inter.latency_s : cl.intra.latency_s;
  return lat +
         std::max(intra_bytes / cl.intra.bw_bytes_per_s, inter_bytes / cl.inter.bw_bytes_per_s);
}

double AnalyticCostModel::MemoryBytes(int64_t tokens, const ParallelConfig& c) const {
  if (options().ideal) return 0;
  const models::DitModel& m = model();
  const double d = m.hidden, f = m.ffn, b = m.bytes_per_elem;
  const double L = static_cast<double>(tokens);
  const double local = L / c.degree();
  // Checkpointed input of every layer plus one live layer during recompute/backward
  // (Q, O, cross-attn, norms, FFN in/out: 8d + 2F values per token; K/V counted below).
  double act = local * m.layers * d * b + local * (8 * d + 2 * f) * b;
  // Resident K/V of the attention: L/k tokens at H/h heads.
  double kv = (L / c.k) * (2 * d / c.h) * b;
  double buf = 0;
  if (c.k > 1) buf += 2 * (L / c.k) * (2 * d / c.h) * b;  // ring receive + dK/dV buffers
  if (c.h > 1) buf += local * 4 * d * b;                  // all-to-all staging
  return act + kv + buf;
}

double AnalyticCostModel::BaseMemoryBytes() const {
  if (options().ideal) return 0;
  const double p = model().params();
  return p * model().bytes_per_elem + p * 14.0 / cluster().num_ranks() + kWorkspaceBytes;
}

SeqCost AnalyticCostModel::Cost(int64_t tokens, const ParallelConfig& c,
                                const std::vector<int>& ranks) const {
  CHECK_EQ(static_cast<int>(ranks.size()), c.degree());
  const models::DitModel& m = model();
  const bool ideal = options().ideal;
  const double L = static_cast<double>(tokens);
  const int lambda = c.degree();
  const double local = L / lambda;
  const double d = m.hidden, b = m.bytes_per_elem;
  const int layers = m.layers;

  // Compute per layer.
  double lin = LinearFlopsPerLayer(local);
  if (!ideal) lin += 4.0 * m.text_tokens * d * d;  // text K/V, replicated
  const double lin_fwd_s = lin / flops_per_s_;
  const double attn_fwd_s = AttentionFlopsPerLayer(L, lambda) / flops_per_s_;
  const double attn_bwd_s = kAttentionBwdFactor * attn_fwd_s;
  const double lin_bwd_s = kLinearBwdFactor * lin_fwd_s;

  SeqCost out;
  out.mem_bytes = MemoryBytes(tokens, c);
  double fwd_comm_s = 0, bwd_comm_s = 0;                    // exposed, per layer
  double ring_fwd_s = attn_fwd_s, ring_bwd_s = attn_bwd_s;  // attention incl. ring overlap

  if (!ideal && lambda > 1) {
    // Member i of the set has coordinates hi = i % h, qi = (i / h) % q, ki = i / (h q).
    auto node = [&](int i) { return cluster().NodeOf(ranks[i]); };
    auto member = [&](int hi, int qi, int ki) { return (ki * c.q + qi) * c.h + hi; };
    if (c.h > 1) {
      // Worst Ulysses group: bytes to peers in the same node vs other nodes.
      double per_peer = local * 4 * d * b / c.h;
      double worst = 0;
      for (int ki = 0; ki < c.k; ++ki)
        for (int qi = 0; qi < c.q; ++qi)
          for (int hi = 0; hi < c.h; ++hi) {
            int me = member(hi, qi, ki);
            int off = 0;
            for (int hj = 0; hj < c.h; ++hj)
              if (hj != hi && node(member(hj, qi, ki)) != node(me)) ++off;
            double t = StepTime((c.h - 1 - off) * per_peer, off * per_peer, off > 0);
            worst = std::max(worst, t);
          }
      fwd_comm_s += worst;
      bwd_comm_s += 2 * worst;  // recompute + backward (dO in, dQ/dK/dV out)
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

}  // namespace tessera::zellige
