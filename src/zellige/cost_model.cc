#include "zellige/cost_model.h"

#include <limits>

#include "zellige/cost_model_analytic.h"
#include "zellige/cost_model_profile.h"

namespace tessera::zellige {

CostModel::CostModel(hw::Cluster cluster, models::DitModel model, CostModelOptions options)
    : cluster_(std::move(cluster)), model_(std::move(model)), options_(options) {}

double CostModel::WholeTime(int64_t tokens) const {
  return Cost(tokens, ParallelConfig{}, {0}).time_s();
}

double CostModel::MemoryCapacityBytes() const {
  if (options_.ideal) return std::numeric_limits<double>::infinity();
  return cluster_.usable_memory_bytes() - BaseMemoryBytes();
}

double CostModel::LinearFlopsPerLayer(double local_tokens) const {
  const double d = model_.hidden, f = model_.ffn, t = model_.text_tokens;
  // self-attn QKV+O (8d^2), cross-attn Q+O (4d^2), FFN (4dF), cross-attn scores+PV (4Td).
  return local_tokens * (12 * d * d + 4 * d * f + 4 * t * d);
}

double CostModel::AttentionFlopsPerLayer(double tokens, int degree) const {
  return 4.0 * tokens * tokens * model_.hidden / degree;
}

double CostModel::CommBytes(double L, const ParallelConfig& c) const {
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

std::unique_ptr<CostModel> MakeAnalyticCostModel(hw::Cluster cluster, models::DitModel model,
                                                 CostModelOptions options) {
  return std::make_unique<AnalyticCostModel>(std::move(cluster), std::move(model), options);
}

std::unique_ptr<CostModel> MakeProfileCostModel(std::shared_ptr<const Profile> profile) {
  return std::make_unique<ProfileCostModel>(std::move(profile));
}

}  // namespace tessera::zellige
