// Autoscaler: KernelFlume's attention-pool scaling policy, a pure function of the pool's load
// over time (so it is unit-tested with hand-made snapshots), and the loop that applies it to an
// AttentionCluster.
//
// Each tick sees every active node's capacity, live KV tokens and the attention compute it has
// reported so far (WeightNode::PoolLoad), and the tokens the server has promised (demand: the
// running requests' reservations plus the waiting requests'; 0 when the caller has none). From
// two consecutive ticks:
//   kv_use       = max(sum(live tokens), demand) / sum(capacity) over active nodes (a queue
//                  waiting for KV counts before its tokens are written);
//   utilization  = per node, attention compute seconds (the CPU time its compute thread spent
//                  on partials) / wall seconds between the ticks.
// The spec scales out "when the slowest node's attention time exceeds its share of the TPOT
// target": a node busy for a fraction u of the wall time adds queueing of about u / (1 - u) of
// its compute to every step it serves, so we bound u (util_high, default 0.7) instead of
// estimating per-step time.
// Decisions:
//   scale out   kv_use > kv_high (0.85) or the busiest node's utilization > util_high, while
//               fewer than max_nodes are active and no scale-out happened in the last
//               cooldown_s (a joining node needs time to take load);
//   scale in    kv_use < kv_low (0.4) and every node's utilization < util_high / 2, without a
//               break for keep_alive_s (30 s), more than min_nodes active, and the pool without
//               its emptiest node would stay under kv_high: drain that node;
//   otherwise   none.
// Every decision carries its reason with the numbers it used; AutoscaleLoop records the
// decisions it acts on as WeightNode events ("scale-out", "scale-in").
// Thread-safety: Autoscaler: one thread; AutoscaleLoop runs its own thread, stopped by Stop or
// the destructor.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "kernelflume/attention_cluster.h"
#include "kernelflume/weight_node.h"

namespace tessera::kernelflume {

struct AutoscalerOptions {
  double kv_high = 0.85;
  double kv_low = 0.4;
  double util_high = 0.7;
  double keep_alive_s = 30;
  double cooldown_s = 2;
  int min_nodes = 1;
  int max_nodes = 8;
};
// InvalidArgument naming the field unless 0 < kv_low < kv_high <= 1, 0 < util_high <= 1,
// keep_alive_s >= 0, cooldown_s >= 0, 1 <= min_nodes <= max_nodes <= 64.
core::Status ValidateAutoscalerOptions(const AutoscalerOptions& o);

struct AutoscaleDecision {
  enum class Kind { kNone, kScaleOut, kScaleIn };
  Kind kind = Kind::kNone;
  int32_t node = -1;  // scale in: the node to drain
  std::string reason;
  double kv_use = 0;
  double max_utilization = 0;
};

class Autoscaler {
 public:
  explicit Autoscaler(AutoscalerOptions options) : options_(options) {}
  // `now_s` increases between calls; `nodes` are the active nodes' loads at now_s;
  // `demand_tokens` the promised tokens (see above).
  AutoscaleDecision Decide(double now_s, const std::vector<WeightNode::NodeLoad>& nodes,
                           int64_t demand_tokens = 0);
  // Tells the policy a scale-out was carried out at now_s (starts the cooldown).
  void NoteScaledOut(double now_s) { last_scale_out_s_ = now_s; }

 private:
  AutoscalerOptions options_;
  double last_now_s_ = -1;
  std::map<int32_t, double> last_busy_s_;
  double low_since_s_ = -1;  // kv_use below kv_low (and nodes idle) since; -1: not low
  double last_scale_out_s_ = -1e18;
};

// Each tick reads the pool's load, decides, and acts -- cluster.AddNode() to scale out,
// WeightNode::DrainNode to scale in (a drain blocks the next tick). With tick_s > 0 a thread
// ticks every tick_s and the first action error stops it and is kept (error()); with tick_s = 0
// the owner calls Tick() (tests step it deterministically). `demand_tokens`, when given, is
// called each tick (CompletionEngine::DemandTokens).
class AutoscaleLoop {
 public:
  AutoscaleLoop(AttentionCluster& cluster, AutoscalerOptions options, double tick_s = 0.1,
                std::function<int64_t()> demand_tokens = {});
  ~AutoscaleLoop();
  void Stop();
  // One decision and its action; returns the action's error.
  core::Status Tick();
  core::Status error() const;
  int64_t scale_outs() const { return scale_outs_.load(); }
  int64_t scale_ins() const { return scale_ins_.load(); }
  // Each carried-out scale-out's duration: from the decision to the new node joined (ms).
  std::vector<double> scale_out_ms() const;

 private:
  void Run();
  AttentionCluster& cluster_;
  Autoscaler policy_;
  std::function<int64_t()> demand_tokens_;
  double tick_s_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> scale_outs_{0}, scale_ins_{0};
  mutable std::mutex mu_;
  core::Status error_ = core::Status::Ok();
  std::vector<double> scale_out_ms_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace tessera::kernelflume
