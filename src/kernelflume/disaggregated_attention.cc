#include "kernelflume/disaggregated_attention.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/thread_priority.h"
#include "kernels/decode_attention.h"
#include "kernels/lse_merge.h"
#include "models/generate.h"

namespace tessera::kernelflume {

using core::Status;

DisaggregatedAttention::DisaggregatedAttention(WeightNode& weight_node, uint64_t request_id)
    : wn_(weight_node), request_id_(request_id) {}

DisaggregatedAttention::~DisaggregatedAttention() {
  EndStep();
  wn_.CloseRequest(request_id_);
}

void DisaggregatedAttention::EndStep() {
  if (!in_step_) return;
  in_step_ = false;
  wn_.ExitStep(snapshot_->version());
}

void DisaggregatedAttention::LayerDone(int64_t layer) {
  if (layer + 1 < wn_.shape().num_layers) return;
  EndStep();
  if (refill_ == nullptr && prepared_pos0_ >= 0) finished_pos0_ = prepared_pos0_;
  prepared_pos0_ = -1;
}

Status DisaggregatedAttention::StartStep(int64_t layer, int64_t pos0, int64_t num_tokens) {
  if (layer == 0) {
    EndStep();
    if (refill_ != nullptr) {
      snapshot_ = wn_.routes();
    } else {
      if (prepared_pos0_ >= 0) {
        return core::FailedPrecondition(fmt::format(
            "request {}: the step at position {} failed; call Recover before the next step",
            request_id_, prepared_pos0_));
      }
      auto snap = wn_.PrepareStep(request_id_, pos0, num_tokens);
      if (!snap.ok()) return snap.status();
      snapshot_ = *snap;
      prepared_pos0_ = pos0;
      finished_pos0_ = -1;
    }
    wn_.EnterStep(snapshot_->version());
    in_step_ = true;
    step_id_ = wn_.NextStepId();
    pos0_ = pos0;
    num_tokens_ = num_tokens;
    plan_.clear();
    plan_nodes_.clear();
    const RequestRoute* route = snapshot_->Find(request_id_);
    if (route == nullptr) {
      return core::NotFound(fmt::format("request {} is not routed", request_id_));
    }
    for (const RouteRange& g : route->ranges) {
      if (g.start >= pos0) continue;  // holds none of this step's history
      const int64_t end = g.open() ? pos0 : std::min(g.end, pos0);
      auto it = std::find_if(plan_.begin(), plan_.end(),
                             [&](const NodePlan& p) { return p.node_id == g.node; });
      if (it == plan_.end()) {
        plan_.push_back(NodePlan{g.node, {}});
        it = plan_.end() - 1;
      }
      it->ranges.push_back(RangeNeed{g.range_id, end - g.start});
    }
    for (const NodePlan& p : plan_) plan_nodes_.push_back(p.node_id);
    const RouteRange& tail = refill_ != nullptr ? *refill_ : route->tail();
    tail_range_ = tail.range_id;
    tail_node_ = tail.node;
    tail_offset_ = pos0 - tail.start;
  } else if (pos0 != pos0_ || num_tokens != num_tokens_) {
    return core::FailedPrecondition(fmt::format(
        "layer {} of a step at position {} ({} tokens) inside the step at {} ({} tokens)", layer,
        pos0, num_tokens, pos0_, num_tokens_));
  }
  return Status::Ok();
}

Status DisaggregatedAttention::BeginLayer(int64_t layer, int64_t pos0, int64_t num_tokens,
                                          const float* q) {
  const AttentionShape& s = wn_.shape();
  if (Status st = StartStep(layer, pos0, num_tokens); !st.ok()) return st;
  const size_t qn = static_cast<size_t>(num_tokens) * s.num_heads * s.head_dim;
  q_.assign(q, q + qn);
  const std::span<const std::byte> payload = std::as_bytes(std::span<const float>(q_));
  for (const NodePlan& p : plan_) {
    QueryMsg m{request_id_,
               snapshot_->version(),
               static_cast<int64_t>(step_id_),
               static_cast<int32_t>(layer),
               static_cast<int32_t>(num_tokens),
               p.ranges};
    const std::vector<std::byte> header = Encode(m);
    if (Status st = Send(p.node_id, kQuery, header, payload); !st.ok()) return st;
  }
  return Status::Ok();
}

Status DisaggregatedAttention::AppendNew(int64_t layer, const float* k, const float* v) {
  const AttentionShape& s = wn_.shape();
  const size_t per = static_cast<size_t>(num_tokens_) * s.num_kv_heads * s.head_dim;
  kv_.resize(2 * per);
  std::memcpy(kv_.data(), k, per * sizeof(float));
  std::memcpy(kv_.data() + per, v, per * sizeof(float));
  AppendMsg a{request_id_, tail_range_, static_cast<int32_t>(layer), tail_offset_,
              static_cast<int32_t>(num_tokens_)};
  const std::vector<std::byte> header = Encode(a);
  return Send(tail_node_, kAppend, header, std::as_bytes(std::span<const float>(kv_)));
}

Status DisaggregatedAttention::Send(int32_t node_id, uint16_t am_id,
                                    std::span<const std::byte> header,
                                    std::span<const std::byte> payload) {
  if (batch_ == nullptr) return wn_.SendTo(node_id, am_id, header, payload);
  batch_->Add(node_id, am_id, header, payload);
  return Status::Ok();
}

Status DisaggregatedAttention::AppendOnly(int64_t layer, int64_t pos0, int64_t num_tokens,
                                          const float* k, const float* v) {
  if (Status st = StartStep(layer, pos0, num_tokens); !st.ok()) return st;
  RETURN_IF_ERROR(AppendNew(layer, k, v));
  LayerDone(layer);
  return Status::Ok();
}

Status DisaggregatedAttention::FinishLayer(int64_t layer, const float* k, const float* v,
                                           float* o) {
  const AttentionShape& s = wn_.shape();
  const int64_t t = num_tokens_, h = s.num_heads, d = s.head_dim, hkv = s.num_kv_heads;
  // The self partial: the new tokens among themselves, causally.
  kernels::DecodeAttentionShape shape;
  shape.num_q_tokens = t;
  shape.num_heads = h;
  shape.num_kv_heads = hkv;
  shape.head_dim = d;
  shape.scale = s.scale;
  shape.causal = true;
  kernels::KvSegment self{k, v, t, hkv * d, d};
  self_o_.resize(t * h * d);
  self_lse_.resize(t * h);
  if (Status st = kernels::PartialAttention(shape, q_.data(), std::span(&self, 1), self_o_.data(),
                                            self_lse_.data());
      !st.ok()) {
    return st;
  }
  // Append the new K and V to the tail's node (later steps read them).
  if (Status st = AppendNew(layer, k, v); !st.ok()) return st;
  if (plan_.empty()) {
    std::memcpy(o, self_o_.data(), self_o_.size() * sizeof(float));
    LayerDone(layer);
    return Status::Ok();
  }
  if (Status st = wn_.WaitPartials(request_id_, static_cast<int64_t>(step_id_), pos0_,
                                   static_cast<int32_t>(layer), plan_nodes_, partials_);
      !st.ok()) {
    return st;
  }
  const size_t on = static_cast<size_t>(t * h * d), ln = static_cast<size_t>(t * h);
  for (const Partial& p : partials_) {
    if (!p.status.ok()) return p.status;
    if (p.o_lse.size() != on + ln) {
      return core::Internal(fmt::format(
          "attention node {}: partial of {} floats for layer {} of the step at position {}, "
          "expected {}",
          p.node_id, p.o_lse.size(), layer, pos0_, on + ln));
    }
    for (float x : p.o_lse) {
      if (std::isnan(x) || x == INFINITY) {
        return core::Internal(fmt::format(
            "attention node {}: non-finite partial (NaN or +inf) for layer {} of the step at "
            "position {} (data loss; not masked)",
            p.node_id, layer, pos0_));
      }
    }
  }
  // Merge in range-start order, the self partial (the newest positions) last.
  std::vector<float> lse(partials_[0].o_lse.begin() + on, partials_[0].o_lse.end());
  std::memcpy(o, partials_[0].o_lse.data(), on * sizeof(float));
  for (size_t i = 1; i < partials_.size(); ++i) {
    const float* po = partials_[i].o_lse.data();
    if (Status st = kernels::MergeAttentionPartialsInPlace(t, h, d, o, lse.data(), po, po + on);
        !st.ok()) {
      return st;
    }
  }
  RETURN_IF_ERROR(kernels::MergeAttentionPartialsInPlace(t, h, d, o, lse.data(), self_o_.data(),
                                                         self_lse_.data()));
  LayerDone(layer);
  return Status::Ok();
}

Status DisaggregatedAttention::Recover(const models::LlamaModel& model,
                                       std::span<const int32_t> tokens) {
  EndStep();
  const int64_t stored = static_cast<int64_t>(tokens.size());
  if (prepared_pos0_ >= 0 && prepared_pos0_ != stored) {
    return core::InvalidArgument(fmt::format(
        "request {}: recover with {} tokens, but the failed step started at position {}",
        request_id_, stored, prepared_pos0_));
  }
  // A step that finished but is to be forgotten (the batch it ran in failed) is rolled back
  // like a prepared one.
  const bool forget_finished = prepared_pos0_ < 0 && finished_pos0_ == stored;
  ASSIGN_OR_RETURN(std::vector<RouteRange> todo,
                   wn_.BeginRecovery(request_id_, stored, prepared_pos0_ >= 0 || forget_finished));
  prepared_pos0_ = -1;
  finished_pos0_ = -1;
  // With refill_nice > 0, below the request threads' priority, on a thread of its own while
  // this one waits.
  RETURN_IF_ERROR(core::RunAtLowerPriority(wn_.options_.refill_nice,
                                           [&] { return Refill(model, tokens, todo); }));
  ++recoveries_;
  return Status::Ok();
}

Status DisaggregatedAttention::Refill(const models::LlamaModel& model,
                                      std::span<const int32_t> tokens,
                                      const std::vector<RouteRange>& todo) {
  const int64_t stored = static_cast<int64_t>(tokens.size());
  std::vector<float> logits(model.config().vocab);
  for (size_t i = 0; i < todo.size(); ++i) {
    const RouteRange& g = todo[i];
    // A range sealed after the failed step (a re-route raced it) ends past what is kept.
    const int64_t end = g.open() ? stored : std::min(g.end, stored);
    const auto t0 = std::chrono::steady_clock::now();
    refill_ = &g;
    Status st = Status::Ok();
    for (int64_t c0 = g.start; c0 < end && st.ok();) {
      const int64_t len = std::min<int64_t>(models::kPrefillChunkTokens, end - c0);
      st = model.Forward(tokens.subspan(c0, len), c0, *this, logits.data(), true);
      c0 += len;
    }
    refill_ = nullptr;
    EndStep();
    if (!st.ok()) {
      wn_.RequeueRefill(request_id_, std::span(todo).subspan(i));
      return st;
    }
    wn_.NoteRefilled(request_id_, g,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return Status::Ok();
}

Status ForwardWithRecovery(const models::LlamaModel& model, DisaggregatedAttention& attn,
                           std::span<const int32_t> tokens, int64_t pos0, int64_t n, float* logits,
                           bool last_only, int max_recoveries) {
  const std::span<const int32_t> step = tokens.subspan(pos0, n);
  Status st = model.Forward(step, pos0, attn, logits, last_only);
  for (int i = 0; i < max_recoveries && st.code() == core::StatusCode::kUnavailable; ++i) {
    Status rec = attn.Recover(model, tokens.first(pos0));
    if (!rec.ok() && rec.code() != core::StatusCode::kUnavailable) return rec;
    st = rec.ok() ? model.Forward(step, pos0, attn, logits, last_only) : rec;
  }
  return st;
}

}  // namespace tessera::kernelflume
