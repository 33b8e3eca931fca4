#include "models/small_gpt_stage.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/rng.h"
#include "kernels/attention.h"
#include "models/ops.h"

namespace tessera::models {

namespace {

using core::InvalidArgument;

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

void Sized(std::vector<float>& x, int64_t n) { x.resize(static_cast<size_t>(n)); }

// A whole-model tensor of `rows` x `cols` normal values times `std`, from (seed, index).
std::vector<float> InitTensor(uint64_t seed, int64_t index, int64_t rows, int64_t cols,
                              double std) {
  core::Rng rng = core::Rng(seed).Fork(static_cast<uint64_t>(index));
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (float& v : out) v = static_cast<float>(std * rng.Normal());
  return out;
}

// The sequence boundaries of a micro-batch: batch + 1 offsets, seq tokens apart.
std::vector<int64_t> CuSeqlens(int64_t batch, int64_t seq) {
  std::vector<int64_t> cu(static_cast<size_t>(batch + 1));
  for (int64_t s = 0; s <= batch; ++s) cu[s] = s * seq;
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

std::string KeyName(MicroBatchKey key) {
  return "(step " + std::to_string(key.step) + ", micro_batch " + std::to_string(key.micro_batch) +
         ")";
}

// An activation span must hold `want` elements (0: the stage has no such side).
core::Status CheckSpan(const char* field, size_t got, int64_t want, const char* why_empty) {
  if (static_cast<int64_t>(got) == want) return core::Status::Ok();
  if (want == 0) {
    return InvalidArgument(std::string("gpt stage: ") + field + ": got " + std::to_string(got) +
                           " elements, must be empty (" + why_empty + ")");
  }
  return InvalidArgument(std::string("gpt stage: ") + field + ": got " + std::to_string(got) +
                         " elements, want " + std::to_string(want) +
                         " (this rank's tokens x hidden)");
}

}  // namespace

SmallGptStage::SmallGptStage(const SmallGptConfig& config, int tp, int rank, int64_t slot_begin,
                             int64_t slot_end)
    : config_(config), tp_(tp), rank_(rank), slot_begin_(slot_begin), slot_end_(slot_end) {}

core::StatusOr<SmallGptStage> SmallGptStage::Create(const SmallGptConfig& c, int tp, int rank,
                                                    int64_t slot_begin, int64_t slot_end) {
  RETURN_IF_ERROR(ValidateSmallGptConfig(c, tp));
  if (rank < 0 || rank >= tp) {
    return InvalidArgument("gpt: rank " + std::to_string(rank) + " outside [0, " +
                           std::to_string(tp) + ")");
  }
  const int64_t num_slots = NumSlots(c);
  if (slot_begin < 0 || slot_begin >= slot_end || slot_end > num_slots) {
    return InvalidArgument(
        "gpt stage: slots [" + std::to_string(slot_begin) + ", " + std::to_string(slot_end) +
        "): need 0 <= slot_begin < slot_end <= " + std::to_string(num_slots) + " (num_layers + 2)");
  }
  SmallGptStage g(c, tp, rank, slot_begin, slot_end);
  const int64_t h = c.hidden, f = c.ffn_hidden, v = c.vocab, layers = c.num_layers;
  const int64_t hl = h / tp, fl = f / tp;
  const bool first = slot_begin == 0, last = slot_end == num_slots;
  // Blocks: slots [max(begin, 1), min(end, L + 1)) are layers slot - 1.
  g.first_layer_ = std::max<int64_t>(slot_begin, 1) - 1;
  const int64_t end_layer = std::min<int64_t>(slot_end, layers + 1) - 1;
  int64_t offset = 0;
  auto add = [&](const std::string& name, int64_t rows, int64_t cols) {
    g.tensors_.push_back(ParameterTensor{name, offset, rows, cols, false});
    offset += rows * cols;
    return offset - rows * cols;
  };
  g.slots_.resize(static_cast<size_t>(slot_end - slot_begin));
  auto slot = [&](int64_t s) -> SlotRange& { return g.slots_[s - slot_begin]; };
  if (first) {
    g.tok_emb_ = add("tok_emb", v, h);
    g.pos_emb_ = add("pos_emb", c.max_seq, h);
    slot(0) = SlotRange{g.tok_emb_, offset - g.tok_emb_};
  }
  if (last) {
    g.w_head_ = add("w_head", h, v);
    slot(layers + 1) = SlotRange{g.w_head_, offset - g.w_head_};
  }
  g.replicated_ = offset;
  for (int64_t l = g.first_layer_; l < end_layer; ++l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    BlockOffsets lo;
    lo.w_qkv = add(p + "w_qkv", h, 3 * hl);
    lo.w_proj = add(p + "w_proj", hl, h);
    lo.w_fc1 = add(p + "w_fc1", h, fl);
    lo.w_fc2 = add(p + "w_fc2", fl, h);
    g.blocks_.push_back(lo);
    slot(l + 1) = SlotRange{lo.w_qkv, offset - lo.w_qkv};
  }
  g.params_.assign(static_cast<size_t>(offset), 0.0f);
  g.grads_.assign(static_cast<size_t>(offset), 0.0f);

  // Whole-model values (tensor i of the model from Rng(init_seed).Fork(i)), then this rank's
  // slices.
  const double sh = 1.0 / std::sqrt(static_cast<double>(h));
  const double sf = 1.0 / std::sqrt(static_cast<double>(f));
  auto copy_all = [&](int64_t at, const std::vector<float>& full) {
    std::copy(full.begin(), full.end(), g.params_.begin() + at);
  };
  if (first) {
    copy_all(g.tok_emb_, InitTensor(c.init_seed, 0, v, h, 0.02));
    copy_all(g.pos_emb_, InitTensor(c.init_seed, 1, c.max_seq, h, 0.02));
  }
  if (last) copy_all(g.w_head_, InitTensor(c.init_seed, 2, h, v, sh));
  float* p = g.params_.data();
  for (int64_t i = 0; i < g.num_blocks(); ++i) {
    const BlockOffsets& lo = g.blocks_[i];
    const int64_t base = 3 + 4 * g.LayerOf(i);
    const std::vector<float> qkv = InitTensor(c.init_seed, base, h, 3 * h, sh);
    for (int64_t r = 0; r < h; ++r)
      for (int part = 0; part < 3; ++part)
        for (int64_t j = 0; j < hl; ++j)
          p[lo.w_qkv + r * 3 * hl + part * hl + j] = qkv[r * 3 * h + part * h + rank * hl + j];
    const std::vector<float> proj = InitTensor(c.init_seed, base + 1, h, h, sh);
    std::copy_n(proj.begin() + rank * hl * h, hl * h, p + lo.w_proj);
    const std::vector<float> fc1 = InitTensor(c.init_seed, base + 2, h, f, sh);
    for (int64_t r = 0; r < h; ++r)
      std::copy_n(fc1.begin() + r * f + rank * fl, fl, p + lo.w_fc1 + r * fl);
    const std::vector<float> fc2 = InitTensor(c.init_seed, base + 3, f, h, sf);
    std::copy_n(fc2.begin() + rank * fl * h, fl * h, p + lo.w_fc2);
  }
  return g;
}

core::StatusOr<SmallGptStage::SlotRange> SmallGptStage::SlotRangeOf(int64_t slot) const {
  if (slot < slot_begin_ || slot >= slot_end_) {
    return InvalidArgument("gpt stage: slot " + std::to_string(slot) + " outside this stage's [" +
                           std::to_string(slot_begin_) + ", " + std::to_string(slot_end_) + ")");
  }
  return slots_[slot - slot_begin_];
}

core::StatusOr<std::span<float>> SmallGptStage::SlotParameters(int64_t slot) {
  ASSIGN_OR_RETURN(const SlotRange r, SlotRangeOf(slot));
  return std::span<float>(params_).subspan(r.offset, r.size);
}

core::StatusOr<std::span<const float>> SmallGptStage::SlotGradients(int64_t slot) const {
  ASSIGN_OR_RETURN(const SlotRange r, SlotRangeOf(slot));
  return std::span<const float>(grads_).subspan(r.offset, r.size);
}

void SmallGptStage::ZeroGradients() { std::fill(grads_.begin(), grads_.end(), 0.0f); }

core::Status SmallGptStage::ReduceReplicatedGradients(TensorParallelOps& ops) {
  if (replicated_ == 0) return core::Status::Ok();
  return ops.AllReduceSum(std::span<float>(grads_.data(), replicated_));
}

void SmallGptStage::DiscardInFlight() {
  for (auto& [key, acts] : in_flight_) pool_.push_back(std::move(acts));
  in_flight_.clear();
}

SmallGptStage::Dims SmallGptStage::DimsOf(int64_t batch, int64_t seq) const {
  const int64_t m = batch * seq, mr = m / tp_;
  return Dims{.m = m,
              .mr = mr,
              .row0 = rank_ * mr,
              .h = config_.hidden,
              .hl = config_.hidden / tp_,
              .fl = config_.ffn_hidden / tp_,
              .heads = config_.num_heads / tp_,
              .v = config_.vocab};
}

core::StatusOr<double> SmallGptStage::Forward(MicroBatchKey key, const GptBatch& batch,
                                              std::span<const float> input_act,
                                              std::span<float> output_act, TensorParallelOps& ops) {
  RETURN_IF_ERROR(ValidateGptBatch(config_, tp_, batch));
  if (ops.tp() != tp_ || ops.rank() != rank_) {
    return InvalidArgument("gpt: model is rank " + std::to_string(rank_) + " of " +
                           std::to_string(tp_) + ", the operators rank " +
                           std::to_string(ops.rank()) + " of " + std::to_string(ops.tp()));
  }
  const int64_t act = ActivationSize(batch.num_tokens());
  RETURN_IF_ERROR(CheckSpan("input_act", input_act.size(), is_first() ? 0 : act,
                            "the first stage reads tokens"));
  RETURN_IF_ERROR(CheckSpan("output_act", output_act.size(), is_last() ? 0 : act,
                            "the last stage ends in the loss"));
  if (in_flight_.contains(key)) {
    return core::FailedPrecondition("gpt stage: micro-batch " + KeyName(key) +
                                    " is already in flight: Backward it first");
  }
  MicroBatchActs acts;
  if (!pool_.empty()) {
    acts = std::move(pool_.back());
    pool_.pop_back();
  }
  core::StatusOr<double> loss = RunForward(key, batch, input_act, output_act, ops, acts);
  if (!loss.ok()) {
    pool_.push_back(std::move(acts));
    return loss.status();
  }
  in_flight_.emplace(key, std::move(acts));
  return loss;
}

// Embeddings or input_act, the owned blocks, then output_act or the head and the loss.
core::StatusOr<double> SmallGptStage::RunForward(MicroBatchKey key, const GptBatch& batch,
                                                 std::span<const float> input_act,
                                                 std::span<float> output_act,
                                                 TensorParallelOps& ops, MicroBatchActs& acts) {
  const SmallGptConfig& c = config_;
  const Dims d = DimsOf(batch.batch, batch.seq);
  const int64_t mr = d.mr, h = d.h, v = d.v;
  const float* p = params_.data();
  acts.batch = batch.batch;
  acts.seq = batch.seq;
  acts.tokens.clear();
  acts.targets.clear();
  Sized(x_, mr * h);
  if (is_first()) {
    acts.tokens.assign(batch.tokens.begin() + d.row0, batch.tokens.begin() + d.row0 + mr);
    for (int64_t i = 0; i < mr; ++i) {
      const int64_t t = d.row0 + i;
      const float* te = p + tok_emb_ + batch.tokens[t] * h;
      const float* pe = p + pos_emb_ + (t % batch.seq) * h;
      for (int64_t j = 0; j < h; ++j) x_[i * h + j] = te[j] + pe[j];
    }
  } else {
    std::copy(input_act.begin(), input_act.end(), x_.begin());
  }
  acts.blocks.resize(static_cast<size_t>(num_blocks()));
  for (int64_t i = 0; i < num_blocks(); ++i) {
    RETURN_IF_ERROR(BlockForward(i, key, d, acts, acts.blocks[i], ops));
  }
  if (!is_last()) {
    std::copy(x_.begin(), x_.end(), output_act.begin());
    return 0.0;
  }
  acts.targets.assign(batch.targets.begin() + d.row0, batch.targets.begin() + d.row0 + mr);
  Sized(acts.z, mr * h), Sized(acts.rstdf, mr), Sized(acts.probs, mr * v);
  ops::LayerNormForward(x_.data(), mr, h, c.layer_norm_eps, acts.z.data(), acts.rstdf.data());
  ops::LinearForward(acts.z.data(), mr, h, p + w_head_, v, nullptr, v, acts.probs.data(), v);
  // Cross-entropy on this rank's rows; probs becomes softmax(logits).
  double loss = 0;
  for (int64_t i = 0; i < mr; ++i) {
    float* row = acts.probs.data() + i * v;
    const float mx = *std::max_element(row, row + v);
    double sum = 0;
    for (int64_t j = 0; j < v; ++j) sum += std::exp(static_cast<double>(row[j] - mx));
    loss += std::log(sum) + mx - row[acts.targets[i]];
    const float inv_sum = static_cast<float>(1.0 / sum);
    for (int64_t j = 0; j < v; ++j) row[j] = std::exp(row[j] - mx) * inv_sum;
  }
  RETURN_IF_ERROR(ops.AllReduceSum(std::span<double>(&loss, 1)));
  return loss;
}

// One block on the residual stream x_: x += Dropout(Attn(LN(x)) W_proj);
// x += Dropout(GELU(LN(x) W_fc1) W_fc2).
core::Status SmallGptStage::BlockForward(int64_t i, MicroBatchKey key, const Dims& d,
                                         const MicroBatchActs& mb, BlockActs& la,
                                         TensorParallelOps& ops) {
  const SmallGptConfig& c = config_;
  const int64_t m = d.m, mr = d.mr, h = d.h, hl = d.hl, fl = d.fl, heads = d.heads;
  const BlockOffsets& lo = blocks_[i];
  const float* p = params_.data();
  const std::vector<int64_t> cu = CuSeqlens(mb.batch, mb.seq);
  const kernels::AttentionShape shape = CausalShape(cu, heads, c.head_dim());
  Sized(dtmp_, mr * h);
  Sized(qkv_, m * 3 * hl);
  Sized(la.a, mr * h), Sized(la.rstd1, mr), Sized(la.q, m * hl), Sized(la.k, m * hl);
  Sized(la.v, m * hl), Sized(la.o, m * hl), Sized(la.lse, m * heads), Sized(la.b, mr * h);
  Sized(la.rstd2, mr), Sized(la.f, m * fl), Sized(la.g, m * fl);
  ops::LayerNormForward(x_.data(), mr, h, c.layer_norm_eps, la.a.data(), la.rstd1.data());
  RETURN_IF_ERROR(ops.AllGatherGemm("qkv", {m, 3 * hl, h}, la.a.data(), p + lo.w_qkv, qkv_.data()));
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
  ApplyGptDropout(c.dropout_seed, c.dropout, key, LayerOf(i), GptDropoutSite::kAttentionOut, d.row0,
                  mr, h, dtmp_.data());
  Add(dtmp_.data(), mr * h, x_.data());
  ops::LayerNormForward(x_.data(), mr, h, c.layer_norm_eps, la.b.data(), la.rstd2.data());
  RETURN_IF_ERROR(ops.AllGatherGemm("fc1", {m, fl, h}, la.b.data(), p + lo.w_fc1, la.f.data()));
  ops::GeluForward(la.f.data(), m * fl, la.g.data());
  RETURN_IF_ERROR(
      ops.GemmReduceScatter("fc2", {m, h, fl}, la.g.data(), p + lo.w_fc2, dtmp_.data()));
  ApplyGptDropout(c.dropout_seed, c.dropout, key, LayerOf(i), GptDropoutSite::kMlpOut, d.row0, mr,
                  h, dtmp_.data());
  Add(dtmp_.data(), mr * h, x_.data());
  return core::Status::Ok();
}

core::Status SmallGptStage::Backward(MicroBatchKey key, std::span<const float> grad_output,
                                     std::span<float> grad_input, float loss_scale,
                                     TensorParallelOps& ops) {
  auto it = in_flight_.find(key);
  if (it == in_flight_.end()) {
    return core::NotFound("gpt stage: micro-batch " + KeyName(key) +
                          " is not in flight on this stage: Forward it first");
  }
  const int64_t act = ActivationSize(it->second.batch * it->second.seq);
  RETURN_IF_ERROR(CheckSpan("grad_output", grad_output.size(), is_last() ? 0 : act,
                            "the last stage starts from the loss"));
  RETURN_IF_ERROR(CheckSpan("grad_input", grad_input.size(), is_first() ? 0 : act,
                            "the first stage ends in the embeddings"));
  if (is_last() && !std::isfinite(loss_scale)) {
    return InvalidArgument("gpt stage: loss_scale: got " + std::to_string(loss_scale) +
                           ", must be finite");
  }
  if (ops.tp() != tp_ || ops.rank() != rank_) {
    return InvalidArgument("gpt: model is rank " + std::to_string(rank_) + " of " +
                           std::to_string(tp_) + ", the operators rank " +
                           std::to_string(ops.rank()) + " of " + std::to_string(ops.tp()));
  }
  MicroBatchActs acts = std::move(it->second);
  in_flight_.erase(it);
  const core::Status s = RunBackward(key, grad_output, grad_input, loss_scale, ops, acts);
  pool_.push_back(std::move(acts));
  return s;
}

// The head (or grad_output), the owned blocks in reverse, then the embeddings (or grad_input).
core::Status SmallGptStage::RunBackward(MicroBatchKey key, std::span<const float> grad_output,
                                        std::span<float> grad_input, float loss_scale,
                                        TensorParallelOps& ops, MicroBatchActs& acts) {
  const Dims d = DimsOf(acts.batch, acts.seq);
  const int64_t mr = d.mr, h = d.h, v = d.v;
  const float* p = params_.data();
  float* gr = grads_.data();
  Sized(dx_, mr * h);
  Sized(dtmp_, mr * h);
  if (is_last()) {
    // dLoss/dlogits = (softmax - onehot) * loss_scale, in place of the softmax.
    for (int64_t i = 0; i < mr; ++i) {
      float* row = acts.probs.data() + i * v;
      for (int64_t j = 0; j < v; ++j) row[j] = row[j] * loss_scale;
      row[acts.targets[i]] -= loss_scale;
    }
    ops::LinearBackward(acts.z.data(), mr, h, p + w_head_, v, v, acts.probs.data(), v, gr + w_head_,
                        nullptr, dtmp_.data(), false);
    ops::LayerNormBackward(dtmp_.data(), acts.z.data(), acts.rstdf.data(), mr, h, dx_.data(),
                           false);
  } else {
    std::copy(grad_output.begin(), grad_output.end(), dx_.begin());
  }
  for (int64_t i = num_blocks() - 1; i >= 0; --i) {
    RETURN_IF_ERROR(BlockBackward(i, key, d, acts, acts.blocks[i], ops));
  }
  if (!is_first()) {
    std::copy(dx_.begin(), dx_.end(), grad_input.begin());
    return core::Status::Ok();
  }
  for (int64_t i = 0; i < mr; ++i) {
    const int64_t t = d.row0 + i;
    Add(dx_.data() + i * h, h, gr + tok_emb_ + acts.tokens[i] * h);
    Add(dx_.data() + i * h, h, gr + pos_emb_ + (t % acts.seq) * h);
  }
  return core::Status::Ok();
}

// dx_ (the gradient of the residual stream after block i) becomes the gradient before it; the
// block's weight gradients accumulate.
core::Status SmallGptStage::BlockBackward(int64_t i, MicroBatchKey key, const Dims& d,
                                          const MicroBatchActs& mb, const BlockActs& la,
                                          TensorParallelOps& ops) {
  const SmallGptConfig& c = config_;
  const int64_t m = d.m, mr = d.mr, h = d.h, hl = d.hl, fl = d.fl, heads = d.heads;
  const BlockOffsets& lo = blocks_[i];
  const float* p = params_.data();
  float* gr = grads_.data();
  const std::vector<int64_t> cu = CuSeqlens(mb.batch, mb.seq);
  const kernels::AttentionShape shape = CausalShape(cu, heads, c.head_dim());
  Sized(dq_, m * hl), Sized(dk_, m * hl), Sized(dv_, m * hl), Sized(dqkv_, m * 3 * hl);
  const int64_t wide = std::max(fl, 3 * hl);
  Sized(dwide_, m * wide), Sized(dwide2_, m * wide), Sized(wt_, h * wide), Sized(dw_, h * wide);
  // The gradient of a dropped-out branch's output: dx_ masked (dx_ itself without dropout).
  auto branch_grad = [&](GptDropoutSite site) -> const float* {
    if (c.dropout == 0.0f) return dx_.data();
    dres_.assign(dx_.begin(), dx_.end());
    ApplyGptDropout(c.dropout_seed, c.dropout, key, LayerOf(i), site, d.row0, mr, h, dres_.data());
    return dres_.data();
  };
  // MLP: x += Dropout(GELU(b W_fc1) W_fc2).
  const float* dy = branch_grad(GptDropoutSite::kMlpOut);
  Transpose(p + lo.w_fc2, fl, h, wt_.data());
  RETURN_IF_ERROR(ops.AllGatherGemm("fc2-dgrad", {m, fl, h}, dy, wt_.data(), dwide_.data()));
  RETURN_IF_ERROR(ops.AllGatherWgrad("fc2-wgrad", {m, fl, h}, dy, la.g.data(), dw_.data()));
  AddTransposed(dw_.data(), fl, h, gr + lo.w_fc2);
  ops::GeluBackward(dwide_.data(), la.f.data(), m * fl, dwide2_.data());
  Transpose(p + lo.w_fc1, h, fl, wt_.data());
  RETURN_IF_ERROR(
      ops.GemmReduceScatter("fc1-dgrad", {m, h, fl}, dwide2_.data(), wt_.data(), dtmp_.data()));
  RETURN_IF_ERROR(
      ops.AllGatherWgrad("fc1-wgrad", {m, fl, h}, la.b.data(), dwide2_.data(), dw_.data()));
  Add(dw_.data(), h * fl, gr + lo.w_fc1);
  ops::LayerNormBackward(dtmp_.data(), la.b.data(), la.rstd2.data(), mr, h, dx_.data(), true);
  // Attention: x += Dropout(CausalAttention(a W_qkv) W_proj).
  dy = branch_grad(GptDropoutSite::kAttentionOut);
  Transpose(p + lo.w_proj, hl, h, wt_.data());
  RETURN_IF_ERROR(ops.AllGatherGemm("proj-dgrad", {m, hl, h}, dy, wt_.data(), dwide_.data()));
  RETURN_IF_ERROR(ops.AllGatherWgrad("proj-wgrad", {m, hl, h}, dy, la.o.data(), dw_.data()));
  AddTransposed(dw_.data(), hl, h, gr + lo.w_proj);
  RETURN_IF_ERROR(kernels::AttentionBackward(shape, la.q.data(), la.k.data(), la.v.data(),
                                             la.o.data(), dwide_.data(), la.lse.data(), dq_.data(),
                                             dk_.data(), dv_.data()));
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
  return core::Status::Ok();
}

}  // namespace tessera::models
