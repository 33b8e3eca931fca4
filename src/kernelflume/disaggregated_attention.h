// DisaggregatedAttention: a request's core attention run on KernelFlume attention nodes
// (models::CoreAttention), by query-first dispatch:
//   BeginLayer   at layer 0, reads ONE routing snapshot for the whole step (the router may
//                re-route the tail at this token boundary); then sends the step's queries q to
//                every node holding a range of the request's history [0, pos0), with the
//                tokens each range must hold.
//   FinishLayer  (the model has computed K and V meanwhile) computes the self partial of the
//                new tokens locally (causal among themselves), appends their K and V to the
//                tail's node (needed by later steps only), waits for the nodes' partials and
//                merges them by log-sum-exp in range-start order, the self partial last -- a
//                fixed order, so a run is bitwise reproducible for a given routing.
// With a SendBatch (set_send_batch) queries and appends are gathered for one message per node.
// A partial with NaN or +inf is DataLoss-like (Internal naming the node), never masked.
// Errors name the node, the layer and the step. Destroying it drops the request's routes and
// tells the nodes to free its ranges.
// Each step registers the routing version it reads with the weight node from layer 0 until its
// last layer (epoch reclamation of migrated ranges) and draws a fresh step id, so a retried
// step never takes a late partial of its failed attempt.
// Recovery: when an attention node holding some of the request's ranges is lost, the step
// fails with Unavailable naming it; Recover(model, tokens) then forgets the failed step and
// re-prefills every lost range [t0, t1) on its new node as chunks of at most 512 tokens, each
// a forward of tokens[t0, t1) over the history before it (the same query-first path, appending
// to the re-homed range instead of the tail); the caller then retries the step
// (ForwardWithRecovery does all of it). With WeightNodeOptions::refill_nice > 0 the re-prefill
// runs on a thread of its own at that lower CPU priority while the request's thread waits for
// it; it computes the same forwards either way (exactness unchanged).
// Thread-safety: one thread at a time (the request's, or the re-prefill thread it waits for),
// as CoreAttention requires.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kernelflume/send_batch.h"
#include "kernelflume/weight_node.h"
#include "models/core_attention.h"
#include "models/llama.h"

namespace tessera::kernelflume {

class DisaggregatedAttention final : public models::CoreAttention {
 public:
  DisaggregatedAttention(WeightNode& weight_node, uint64_t request_id);
  ~DisaggregatedAttention() override;

  [[nodiscard]] core::Status BeginLayer(int64_t layer, int64_t pos0, int64_t num_tokens,
                                        const float* q) override;
  [[nodiscard]] core::Status FinishLayer(int64_t layer, const float* k, const float* v,
                                         float* o) override;

  // Stores the K and V (T, Hkv, D) of T = num_tokens new positions at pos0 for `layer` without
  // computing attention: a step whose outputs are not needed (restoring a cache computed
  // elsewhere, benchmarks). Routes like a step at layer 0 and appends to the tail's node
  // through the normal protocol; sends no query and waits for nothing. Layers go 0..L-1 as in
  // BeginLayer; FailedPrecondition on a layer of another step.
  [[nodiscard]] core::Status AppendOnly(int64_t layer, int64_t pos0, int64_t num_tokens,
                                        const float* k, const float* v);

  // Re-prefills the ranges this request lost with an attention node (see the file comment).
  // `tokens` are the request's token ids at positions [0, n) where n is the number of positions
  // stored before the failed step. A batched step fails as a whole: a request whose own step
  // had finished (every layer) before another's failed is recovered to the position before
  // that step too, and its finished step is forgotten like a failed one (its appends are
  // re-sent by the retry), so the retry can prepare it again. OK with nothing to do; the failure
  // that makes recovery impossible (no surviving node with room) is returned as it is.
  [[nodiscard]] core::Status Recover(const models::LlamaModel& model,
                                     std::span<const int32_t> tokens);
  int64_t recoveries() const { return recoveries_; }
  // From now on, queries and appends go into `batch` (sent by its owner's Flush) instead of out
  // at once; nullptr sends at once again. The batch must outlive its use here.
  void set_send_batch(SendBatch* batch) { batch_ = batch; }

  uint64_t request_id() const { return request_id_; }
  // Routing version used by the last step.
  uint64_t version() const { return snapshot_ ? snapshot_->version() : 0; }

 private:
  // Recover's re-prefill of the ranges `todo` (in position order).
  [[nodiscard]] core::Status Refill(const models::LlamaModel& model,
                                    std::span<const int32_t> tokens,
                                    const std::vector<RouteRange>& todo);
  // At layer 0: reads the step's snapshot and plans its queries; later layers: checks that
  // they belong to the same step.
  [[nodiscard]] core::Status StartStep(int64_t layer, int64_t pos0, int64_t num_tokens);
  // Appends the step's new K and V of `layer` to the tail's node.
  [[nodiscard]] core::Status AppendNew(int64_t layer, const float* k, const float* v);
  // Unregisters the step's routing version (idempotent).
  void EndStep();
  // A step whose layer `layer` just finished: ends it after the last layer.
  void LayerDone(int64_t layer);
  // To the send batch when one is set, else at once.
  [[nodiscard]] core::Status Send(int32_t node_id, uint16_t am_id,
                                  std::span<const std::byte> header,
                                  std::span<const std::byte> payload);

  struct NodePlan {
    int32_t node_id = 0;
    std::vector<RangeNeed> ranges;
  };
  WeightNode& wn_;
  uint64_t request_id_;
  SendBatch* batch_ = nullptr;
  std::shared_ptr<const RoutingTable> snapshot_;
  int64_t pos0_ = 0;
  int64_t num_tokens_ = 0;
  std::vector<NodePlan> plan_;  // nodes with history, by their first range's start
  std::vector<int32_t> plan_nodes_;
  uint64_t tail_range_ = 0;
  int32_t tail_node_ = 0;
  int64_t tail_offset_ = 0;
  std::vector<float> q_;
  std::vector<float> self_o_, self_lse_, kv_;
  std::vector<Partial> partials_;
  uint64_t step_id_ = 0;
  bool in_step_ = false;                // registered with the weight node
  int64_t prepared_pos0_ = -1;          // a prepared step not yet finished (rolled back on Recover)
  int64_t finished_pos0_ = -1;          // the last step that finished, until the next starts
  const RouteRange* refill_ = nullptr;  // set while Recover re-prefills this range
  int64_t recoveries_ = 0;
};

// model.Forward of tokens[pos0, pos0 + n) of `tokens` (all the request's token ids so far,
// the step's included) through `attn`, recovering from lost attention nodes: on Unavailable it
// calls attn.Recover(model, tokens[0, pos0)) and retries, at most max_recoveries times.
[[nodiscard]] core::Status ForwardWithRecovery(const models::LlamaModel& model,
                                               DisaggregatedAttention& attn,
                                               std::span<const int32_t> tokens, int64_t pos0,
                                               int64_t n, float* logits, bool last_only,
                                               int max_recoveries = 8);

}  // namespace tessera::kernelflume
