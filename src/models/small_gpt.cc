#include "models/small_gpt.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/rng.h"
#include "kernels/attention.h"
#include "models/ops.h"

namespace tessera::models {

namespace {

using core::InvalidArgument;

core::Status InRange(const char* field, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) {
    return InvalidArgument(std::string("gpt config: ") + field + ": got " + std::to_string(v) +
                           ", must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return core::Status::Ok();
}

core::Status Divides(const char* what, int64_t d, const char* field, int64_t v) {
  if (d < 1 || v % d != 0) {
    return InvalidArgument(std::string("gpt config: ") + what + " " + std::to_string(d) +
                           " must divide " + field + " = " + std::to_string(v));
  }
  return core::Status::Ok();
}

// out (cols, rows) = in (rows, cols)^T.
void Transpose(const float* in, int64_t rows, int64_t cols, float* out) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) out[j * rows + i] = in[i * cols + j];
}

// acc (rows, cols) += in (cols, rows)^T.
void AddTransposed(const float* in, int64_t rows, int64_t cols, float* acc) {
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i) acc[i * cols + j] += in[j * rows + i];
}

void Add(const float* in, int64_t n, float* acc) {
  for (int64_t i = 0; i < n; ++i) acc[i] += in[i];
}

// A whole-model tensor of `rows` x `cols` normal values times `std`, from (seed, index).
std::vector<float> InitTensor(uint64_t seed, int index, int64_t rows, int64_t cols, double std) {
  core::Rng rng = core::Rng(seed).Fork(static_cast<uint64_t>(index));
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (float& v : out) v = static_cast<float>(std * rng.Normal());
  return out;
}

}  // namespace

core::StatusOr<SmallGptConfig> SmallGptPreset(const std::string& name) {
  if (name == "gpt-small") return SmallGptConfig{};
  if (name == "gpt-tiny") {
    return SmallGptConfig{.vocab = 128,
                          .hidden = 64,
                          .num_heads = 4,
                          .num_layers = 2,
                          .ffn_hidden = 256,
                          .max_seq = 64};
  }
  if (name == "gpt-medium") {
    return SmallGptConfig{.vocab = 2048,
                          .hidden = 1024,
                          .num_heads = 16,
                          .num_layers = 2,
                          .ffn_hidden = 4096,
                          .max_seq = 512};
  }
  return core::NotFound("model: got '" + name + "', allowed: gpt-small, gpt-medium, gpt-tiny");
}

core::Status ValidateSmallGptConfig(const SmallGptConfig& c, int tp) {
  RETURN_IF_ERROR(InRange("vocab", c.vocab, 2, int64_t{1} << 20));
  RETURN_IF_ERROR(InRange("hidden", c.hidden, 1, int64_t{1} << 16));
  RETURN_IF_ERROR(InRange("heads", c.num_heads, 1, c.hidden));
  RETURN_IF_ERROR(InRange("layers", c.num_layers, 1, int64_t{1} << 10));
  RETURN_IF_ERROR(InRange("ffn", c.ffn_hidden, 1, int64_t{1} << 18));
  RETURN_IF_ERROR(InRange("max_seq", c.max_seq, 1, int64_t{1} << 16));
  RETURN_IF_ERROR(InRange("tp", tp, 1, 64));
  RETURN_IF_ERROR(Divides("heads", c.num_heads, "hidden", c.hidden));
  RETURN_IF_ERROR(Divides("tp", tp, "heads", c.num_heads));
  RETURN_IF_ERROR(Divides("tp", tp, "ffn", c.ffn_hidden));
  if (!(c.layer_norm_eps > 0) || !std::isfinite(c.layer_norm_eps)) {
    return InvalidArgument("gpt config: layer_norm_eps must be positive and finite");
  }
  const double params = static_cast<double>(c.vocab) * c.hidden * 2 +
                        static_cast<double>(c.max_seq) * c.hidden +
                        static_cast<double>(c.num_layers) *
                            (4.0 * c.hidden * c.hidden + 2.0 * c.hidden * c.ffn_hidden);
  if (params > static_cast<double>(int64_t{1} << 31)) {
    return InvalidArgument("gpt config: " + std::to_string(static_cast<int64_t>(params)) +
                           " parameters, more than 2^31");
  }
  return core::Status::Ok();
}

core::StatusOr<GptBatch> MakeSyntheticGptBatch(int64_t vocab, int64_t batch, int64_t seq,
                                               uint64_t seed, int64_t step) {
  if (vocab < 2 || batch < 1 || seq < 1 || batch * seq > (int64_t{1} << 26)) {
    return InvalidArgument("gpt batch: vocab " + std::to_string(vocab) + ", batch " +
                           std::to_string(batch) + ", seq " + std::to_string(seq) +
                           ": need vocab >= 2, batch and seq >= 1, batch x seq <= 2^26");
  }
  GptBatch b;
  b.batch = batch;
  b.seq = seq;
  b.tokens.resize(static_cast<size_t>(batch * seq));
  b.targets.resize(b.tokens.size());
  core::Rng rng = core::Rng(seed).Fork(static_cast<uint64_t>(step));
  const uint64_t v = static_cast<uint64_t>(vocab);
  for (int64_t s = 0; s < batch; ++s) {
    uint64_t cur = rng.Below(v);
    for (int64_t i = 0; i < seq; ++i) {
      const uint64_t e = rng.Below(4) == 0 ? rng.Below(v) : 0;
      const uint64_t next = (5 * cur + 3 + e) % v;
      b.tokens[s * seq + i] = static_cast<int32_t>(cur);
      b.targets[s * seq + i] = static_cast<int32_t>(next);
      cur = next;
    }
  }
  return b;
}

SmallGpt::SmallGpt(const SmallGptConfig& config, int tp, int rank)
    : config_(config), tp_(tp), rank_(rank) {}

core::StatusOr<SmallGpt> SmallGpt::Create(const SmallGptConfig& c, int tp, int rank) {
  RETURN_IF_ERROR(ValidateSmallGptConfig(c, tp));
  if (rank < 0 || rank >= tp) {
    return InvalidArgument("gpt: rank " + std::to_string(rank) + " outside [0, " +
                           std::to_string(tp) + ")");
  }
  SmallGpt g(c, tp, rank);
  const int64_t h = c.hidden, f = c.ffn_hidden, v = c.vocab;
  const int64_t hl = h / tp, fl = f / tp;
  int64_t offset = 0;
  auto add = [&](const std::string& name, int64_t rows, int64_t cols) {
    g.tensors_.push_back(ParameterTensor{name, offset, rows, cols, false});
    offset += rows * cols;
    return offset - rows * cols;
  };
  g.tok_emb_ = add("tok_emb", v, h);
  g.pos_emb_ = add("pos_emb", c.max_seq, h);
  g.w_head_ = add("w_head", h, v);
  g.replicated_ = offset;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    LayerOffsets lo;
    lo.w_qkv = add(p + "w_qkv", h, 3 * hl);
    lo.w_proj = add(p + "w_proj", hl, h);
    lo.w_fc1 = add(p + "w_fc1", h, fl);
    lo.w_fc2 = add(p + "w_fc2", fl, h);
    g.layers_.push_back(lo);
  }
  g.params_.assign(static_cast<size_t>(offset), 0.0f);
  g.grads_.assign(static_cast<size_t>(offset), 0.0f);

  // Whole-model values, then this rank's slices.
  const double sh = 1.0 / std::sqrt(static_cast<double>(h));
  const double sf = 1.0 / std::sqrt(static_cast<double>(f));
  auto copy_all = [&](int64_t at, const std::vector<float>& full) {
    std::copy(full.begin(), full.end(), g.params_.begin() + at);
  };
  copy_all(g.tok_emb_, InitTensor(c.init_seed, 0, v, h, 0.02));
  copy_all(g.pos_emb_, InitTensor(c.init_seed, 1, c.max_seq, h, 0.02));
  copy_all(g.w_head_, InitTensor(c.init_seed, 2, h, v, sh));
  float* p = g.params_.data();
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const LayerOffsets& lo = g.layers_[l];
    const int base = 3 + 4 * static_cast<int>(l);
    const std::vector<float> qkv = InitTensor(c.init_seed, base, h, 3 * h, sh);
    for (int64_t i = 0; i < h; ++i)
      for (int part = 0; part < 3; ++part)
        for (int64_t j = 0; j < hl; ++j)
          p[lo.w_qkv + i * 3 * hl + part * hl + j] = qkv[i * 3 * h + part * h + rank * hl + j];
    const std::vector<float> proj = InitTensor(c.init_seed, base + 1, h, h, sh);
    std::copy_n(proj.begin() + rank * hl * h, hl * h, p + lo.w_proj);
    const std::vector<float> fc1 = InitTensor(c.init_seed, base + 2, h, f, sh);
    for (int64_t i = 0; i < h; ++i)
      std::copy_n(fc1.begin() + i * f + rank * fl, fl, p + lo.w_fc1 + i * fl);
    const std::vector<float> fc2 = InitTensor(c.init_seed, base + 3, f, h, sf);
    std::copy_n(fc2.begin() + rank * fl * h, fl * h, p + lo.w_fc2);
  }
  return g;
}

std::vector<TpLayerOp> SmallGpt::LayerTpCalls(int64_t m) const {
  return MegatronTpLayerOps(TpLayerShape{.hidden = config_.hidden,
                                         .ffn = config_.ffn_hidden,
                                         .heads = config_.num_heads,
                                         .kv_heads = config_.num_heads,
                                         .gated_mlp = false,
                                         .tp = tp_,
                                         .tokens = m});
}

core::StatusOr<double> SmallGpt::TrainStep(const GptBatch& batch, TensorParallelOps& ops,
                                           AdamW& opt) {
  ASSIGN_OR_RETURN(const double loss, ForwardBackward(batch, ops));
  RETURN_IF_ERROR(opt.Step(params_, grads_));
  return loss;
}

namespace {

// The sequence boundaries of `batch`: batch + 1 offsets, seq tokens apart.
std::vector<int64_t> CuSeqlens(const GptBatch& batch) {
  std::vector<int64_t> cu(static_cast<size_t>(batch.batch + 1));
  for (int64_t s = 0; s <= batch.batch; ++s) cu[s] = s * batch.seq;
  return cu;
}

// The causal attention over this rank's heads; it views `cu`, which must outlive it.
kernels::AttentionShape CausalShape(const std::vector<int64_t>& cu, int64_t heads,
                                    int64_t head_dim) {
  kernels::AttentionShape shape;
  shape.num_heads = heads;
  shape.head_dim = head_dim;
  shape.cu_seqlens_q = cu;
  shape.cu_seqlens_k = cu;
  shape.causal = true;
  return shape;
}

}  // namespace

core::StatusOr<double> SmallGpt::ForwardBackward(const GptBatch& batch, TensorParallelOps& ops) {
  RETURN_IF_ERROR(CheckBatch(batch, ops));
  ASSIGN_OR_RETURN(const double loss, Forward(batch, ops));
  RETURN_IF_ERROR(Backward(batch, ops));
  return loss;
}

core::Status SmallGpt::CheckBatch(const GptBatch& batch, const TensorParallelOps& ops) const {
  const SmallGptConfig& c = config_;
  const int64_t m = batch.num_tokens();
  if (batch.seq < 1 || batch.seq > c.max_seq) {
    return InvalidArgument("gpt batch: seq " + std::to_string(batch.seq) + " outside [1, " +
                           std::to_string(c.max_seq) + "] (max_seq)");
  }
  if (m < tp_ || m % tp_ != 0) {
    return InvalidArgument("gpt batch: " + std::to_string(m) +
                           " tokens, not a positive multiple of tp " + std::to_string(tp_));
  }
  if (static_cast<int64_t>(batch.tokens.size()) != m ||
      static_cast<int64_t>(batch.targets.size()) != m) {
    return InvalidArgument(
        "gpt batch: tokens and targets must hold batch x seq = " + std::to_string(m) + " entries");
  }
  for (int64_t t = 0; t < m; ++t) {
    if (batch.tokens[t] < 0 || batch.tokens[t] >= c.vocab || batch.targets[t] < 0 ||
        batch.targets[t] >= c.vocab) {
      return InvalidArgument("gpt batch: token or target at " + std::to_string(t) +
                             " outside [0, " + std::to_string(c.vocab) + ")");
    }
  }
  if (ops.tp() != tp_ || ops.rank() != rank_) {
    return InvalidArgument("gpt: model is rank " + std::to_string(rank_) + " of " +
                           std::to_string(tp_) + ", the operators rank " +
                           std::to_string(ops.rank()) + " of " + std::to_string(ops.tp()));
  }
  return core::Status::Ok();
}

// Embeddings, the layers, the head and the cross-entropy; keeps the activations for Backward.
core::StatusOr<double> SmallGpt::Forward(const GptBatch& batch, TensorParallelOps& ops) {
  const SmallGptConfig& c = config_;
  const int64_t m = batch.num_tokens();
  const int64_t h = c.hidden, v = c.vocab, fl = c.ffn_hidden / tp_;
  const int64_t hl = h / tp_, heads = c.num_heads / tp_;
  const int64_t mr = m / tp_, row0 = rank_ * mr;
  const float eps = c.layer_norm_eps;
  const float* p = params_.data();
  auto sized = [](std::vector<float>& x, int64_t n) { x.resize(static_cast<size_t>(n)); };
  const std::vector<int64_t> cu = CuSeqlens(batch);
  const kernels::AttentionShape shape = CausalShape(cu, heads, c.head_dim());
  sized(x_, mr * h);
  for (int64_t i = 0; i < mr; ++i) {
    const int64_t t = row0 + i;
    const float* te = p + tok_emb_ + batch.tokens[t] * h;
    const float* pe = p + pos_emb_ + (t % batch.seq) * h;
    for (int64_t j = 0; j < h; ++j) x_[i * h + j] = te[j] + pe[j];
  }
  acts_.resize(static_cast<size_t>(c.num_layers));
  sized(dtmp_, mr * h);
  sized(qkv_, m * 3 * hl);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const LayerOffsets& lo = layers_[l];
    LayerActs& la = acts_[l];
    sized(la.a, mr * h), sized(la.rstd1, mr), sized(la.q, m * hl), sized(la.k, m * hl);
    sized(la.v, m * hl), sized(la.o, m * hl), sized(la.lse, m * heads), sized(la.b, mr * h);
    sized(la.rstd2, mr), sized(la.f, m * fl), sized(la.g, m * fl);
    ops::LayerNormForward(x_.data(), mr, h, eps, la.a.data(), la.rstd1.data());
    RETURN_IF_ERROR(
        ops.AllGatherGemm("qkv", {m, 3 * hl, h}, la.a.data(), p + lo.w_qkv, qkv_.data()));
    for (int64_t t = 0; t < m; ++t) {
      const float* row = qkv_.data() + t * 3 * hl;
      std::copy_n(row, hl, la.q.data() + t * hl);
      std::copy_n(row + hl, hl, la.k.data() + t * hl);
      std::copy_n(row + 2 * hl, hl, la.v.data() + t * hl);
    }
    RETURN_IF_ERROR(kernels::AttentionForward(shape, la.q.data(), la.k.data(), la.v.data(),
                                              la.o.data(), la.lse.data()));
    RETURN_IF_ERROR(
        ops.GemmReduceScatter("proj", {m, h, hl}, la.o.data(), p + lo.w_proj, dtmp_.data()));
    Add(dtmp_.data(), mr * h, x_.data());
    ops::LayerNormForward(x_.data(), mr, h, eps, la.b.data(), la.rstd2.data());
    RETURN_IF_ERROR(ops.AllGatherGemm("fc1", {m, fl, h}, la.b.data(), p + lo.w_fc1, la.f.data()));
    ops::GeluForward(la.f.data(), m * fl, la.g.data());
    RETURN_IF_ERROR(
        ops.GemmReduceScatter("fc2", {m, h, fl}, la.g.data(), p + lo.w_fc2, dtmp_.data()));
    Add(dtmp_.data(), mr * h, x_.data());
  }
  sized(z_, mr * h), sized(rstdf_, mr), sized(probs_, mr * v);
  ops::LayerNormForward(x_.data(), mr, h, eps, z_.data(), rstdf_.data());
  ops::LinearForward(z_.data(), mr, h, p + w_head_, v, nullptr, v, probs_.data(), v);
  // Cross-entropy on this rank's rows; probs_ becomes dLoss/dlogits = (softmax - onehot) / M.
  double loss = 0;
  const float inv_m = 1.0f / static_cast<float>(m);
  for (int64_t i = 0; i < mr; ++i) {
    float* row = probs_.data() + i * v;
    const float mx = *std::max_element(row, row + v);
    double sum = 0;
    for (int64_t j = 0; j < v; ++j) sum += std::exp(static_cast<double>(row[j] - mx));
    const int32_t target = batch.targets[row0 + i];
    loss += std::log(sum) + mx - row[target];
    const float inv_sum = static_cast<float>(1.0 / sum);
    for (int64_t j = 0; j < v; ++j) row[j] = std::exp(row[j] - mx) * inv_sum * inv_m;
    row[target] -= inv_m;
  }
  RETURN_IF_ERROR(ops.AllReduceSum(std::span<double>(&loss, 1)));
  loss /= static_cast<double>(m);
  return loss;
}

// The gradients of the loss Forward returned: fills grads_ (zeroed first, the replicated
// prefix summed over ranks).
core::Status SmallGpt::Backward(const GptBatch& batch, TensorParallelOps& ops) {
  const SmallGptConfig& c = config_;
  const int64_t m = batch.num_tokens();
  const int64_t h = c.hidden, v = c.vocab, fl = c.ffn_hidden / tp_;
  const int64_t hl = h / tp_, heads = c.num_heads / tp_;
  const int64_t mr = m / tp_, row0 = rank_ * mr;
  const float* p = params_.data();
  float* gr = grads_.data();
  auto sized = [](std::vector<float>& x, int64_t n) { x.resize(static_cast<size_t>(n)); };
  const std::vector<int64_t> cu = CuSeqlens(batch);
  const kernels::AttentionShape shape = CausalShape(cu, heads, c.head_dim());
  std::fill(grads_.begin(), grads_.end(), 0.0f);
  sized(dx_, mr * h);
  ops::LinearBackward(z_.data(), mr, h, p + w_head_, v, v, probs_.data(), v, gr + w_head_, nullptr,
                      dtmp_.data(), false);
  ops::LayerNormBackward(dtmp_.data(), z_.data(), rstdf_.data(), mr, h, dx_.data(), false);
  sized(dq_, m * hl), sized(dk_, m * hl), sized(dv_, m * hl), sized(dqkv_, m * 3 * hl);
  const int64_t wide = std::max(fl, 3 * hl);
  sized(dwide_, m * wide), sized(dwide2_, m * wide), sized(wt_, h * wide), sized(dw_, h * wide);
  for (int64_t l = c.num_layers - 1; l >= 0; --l) {
    const LayerOffsets& lo = layers_[l];
    const LayerActs& la = acts_[l];
    // MLP: x += GELU(b W_fc1) W_fc2.
    Transpose(p + lo.w_fc2, fl, h, wt_.data());
    RETURN_IF_ERROR(
        ops.AllGatherGemm("fc2-dgrad", {m, fl, h}, dx_.data(), wt_.data(), dwide_.data()));
    RETURN_IF_ERROR(
        ops.AllGatherWgrad("fc2-wgrad", {m, fl, h}, dx_.data(), la.g.data(), dw_.data()));
    AddTransposed(dw_.data(), fl, h, gr + lo.w_fc2);
    ops::GeluBackward(dwide_.data(), la.f.data(), m * fl, dwide2_.data());
    Transpose(p + lo.w_fc1, h, fl, wt_.data());
    RETURN_IF_ERROR(
        ops.GemmReduceScatter("fc1-dgrad", {m, h, fl}, dwide2_.data(), wt_.data(), dtmp_.data()));
    RETURN_IF_ERROR(
        ops.AllGatherWgrad("fc1-wgrad", {m, fl, h}, la.b.data(), dwide2_.data(), dw_.data()));
    Add(dw_.data(), h * fl, gr + lo.w_fc1);
    ops::LayerNormBackward(dtmp_.data(), la.b.data(), la.rstd2.data(), mr, h, dx_.data(), true);
    // Attention: x += CausalAttention(a W_qkv) W_proj.
    Transpose(p + lo.w_proj, hl, h, wt_.data());
    RETURN_IF_ERROR(
        ops.AllGatherGemm("proj-dgrad", {m, hl, h}, dx_.data(), wt_.data(), dwide_.data()));
    RETURN_IF_ERROR(
        ops.AllGatherWgrad("proj-wgrad", {m, hl, h}, dx_.data(), la.o.data(), dw_.data()));
    AddTransposed(dw_.data(), hl, h, gr + lo.w_proj);
    RETURN_IF_ERROR(kernels::AttentionBackward(shape, la.q.data(), la.k.data(), la.v.data(),
                                               la.o.data(), dwide_.data(), la.lse.data(),
                                               dq_.data(), dk_.data(), dv_.data()));
    for (int64_t t = 0; t < m; ++t) {
      float* row = dqkv_.data() + t * 3 * hl;
      std::copy_n(dq_.data() + t * hl, hl, row);
      std::copy_n(dk_.data() + t * hl, hl, row + hl);
      std::copy_n(dv_.data() + t * hl, hl, row + 2 * hl);
    }
    Transpose(p + lo.w_qkv, h, 3 * hl, wt_.data());
    RETURN_IF_ERROR(
        ops.GemmReduceScatter("qkv-dgrad", {m, h, 3 * hl}, dqkv_.data(), wt_.data(), dtmp_.data()));
    RETURN_IF_ERROR(
        ops.AllGatherWgrad("qkv-wgrad", {m, 3 * hl, h}, la.a.data(), dqkv_.data(), dw_.data()));
    Add(dw_.data(), h * 3 * hl, gr + lo.w_qkv);
    ops::LayerNormBackward(dtmp_.data(), la.a.data(), la.rstd1.data(), mr, h, dx_.data(), true);
  }
  for (int64_t i = 0; i < mr; ++i) {
    const int64_t t = row0 + i;
    Add(dx_.data() + i * h, h, gr + tok_emb_ + batch.tokens[t] * h);
    Add(dx_.data() + i * h, h, gr + pos_emb_ + (t % batch.seq) * h);
  }
  RETURN_IF_ERROR(ops.AllReduceSum(std::span<float>(grads_.data(), replicated_)));
  return core::Status::Ok();
}

}  // namespace tessera::models
