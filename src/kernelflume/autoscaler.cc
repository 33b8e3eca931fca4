#include "kernelflume/autoscaler.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace tessera::kernelflume {

using core::Status;

Status ValidateAutoscalerOptions(const AutoscalerOptions& o) {
  if (!(o.kv_low > 0 && o.kv_low < o.kv_high && o.kv_high <= 1)) {
    return core::InvalidArgument(fmt::format(
        "kv_low {} and kv_high {}: need 0 < kv_low < kv_high <= 1", o.kv_low, o.kv_high));
  }
  if (!(o.util_high > 0 && o.util_high <= 1)) {
    return core::InvalidArgument(fmt::format("util_high: got {}, must be in (0, 1]", o.util_high));
  }
  if (!(o.keep_alive_s >= 0) || !(o.cooldown_s >= 0)) {
    return core::InvalidArgument(fmt::format("keep_alive_s {} and cooldown_s {}: must be >= 0",
                                             o.keep_alive_s, o.cooldown_s));
  }
  if (o.min_nodes < 1 || o.min_nodes > o.max_nodes || o.max_nodes > 64) {
    return core::InvalidArgument(
        fmt::format("min_nodes {} and max_nodes {}: need 1 <= min_nodes <= max_nodes <= 64",
                    o.min_nodes, o.max_nodes));
  }
  return Status::Ok();
}

AutoscaleDecision Autoscaler::Decide(double now_s, const std::vector<WeightNode::NodeLoad>& nodes,
                                     int64_t demand_tokens) {
  AutoscaleDecision d;
  int64_t live = 0, capacity = 0;
  for (const WeightNode::NodeLoad& n : nodes) {
    live += n.live_tokens;
    capacity += n.capacity_tokens;
  }
  live = std::max(live, demand_tokens);
  d.kv_use = capacity > 0 ? static_cast<double>(live) / static_cast<double>(capacity) : 0;
  const double dt = last_now_s_ < 0 ? 0 : now_s - last_now_s_;
  int32_t busiest = -1;
  for (const WeightNode::NodeLoad& n : nodes) {
    auto prev = last_busy_s_.find(n.id);
    if (dt > 0 && prev != last_busy_s_.end()) {
      const double u = std::clamp((n.busy_s - prev->second) / dt, 0.0, 1.0);
      if (u > d.max_utilization) {
        d.max_utilization = u;
        busiest = n.id;
      }
    }
  }
  last_busy_s_.clear();
  for (const WeightNode::NodeLoad& n : nodes) last_busy_s_[n.id] = n.busy_s;
  last_now_s_ = now_s;
  const int active = static_cast<int>(nodes.size());
  const bool kv_high = d.kv_use > options_.kv_high;
  const bool hot = d.max_utilization > options_.util_high;
  if (kv_high || hot) {
    low_since_s_ = -1;
    if (active >= options_.max_nodes) {
      d.reason = fmt::format(
          "would scale out (kv use {:.2f}, busiest node {:.2f}) but {} nodes "
          "is the maximum",
          d.kv_use, d.max_utilization, active);
      return d;
    }
    if (now_s - last_scale_out_s_ < options_.cooldown_s) {
      d.reason = "cooling down after the last scale-out";
      return d;
    }
    d.kind = AutoscaleDecision::Kind::kScaleOut;
    d.reason = kv_high ? fmt::format("kv use {:.2f} > {:.2f}", d.kv_use, options_.kv_high)
                       : fmt::format("node {} busy {:.2f} of the time > {:.2f}", busiest,
                                     d.max_utilization, options_.util_high);
    return d;
  }
  const bool low = d.kv_use < options_.kv_low && d.max_utilization < options_.util_high / 2;
  if (!low) {
    low_since_s_ = -1;
    return d;
  }
  if (low_since_s_ < 0) low_since_s_ = now_s;
  if (active <= options_.min_nodes || now_s - low_since_s_ < options_.keep_alive_s) return d;
  const WeightNode::NodeLoad* emptiest = nullptr;
  for (const WeightNode::NodeLoad& n : nodes) {
    if (emptiest == nullptr || n.live_tokens < emptiest->live_tokens) emptiest = &n;
  }
  const int64_t rest = capacity - emptiest->capacity_tokens;
  if (rest <= 0 || static_cast<double>(live) / static_cast<double>(rest) > options_.kv_high) {
    return d;
  }
  d.kind = AutoscaleDecision::Kind::kScaleIn;
  d.node = emptiest->id;
  d.reason = fmt::format("kv use {:.2f} < {:.2f} for {:.1f} s (keep-alive {:.0f} s)", d.kv_use,
                         options_.kv_low, now_s - low_since_s_, options_.keep_alive_s);
  low_since_s_ = -1;  // the next scale-in waits a full keep-alive again
  return d;
}

AutoscaleLoop::AutoscaleLoop(AttentionCluster& cluster, AutoscalerOptions options, double tick_s,
                             std::function<int64_t()> demand_tokens)
    : cluster_(cluster),
      policy_(options),
      demand_tokens_(std::move(demand_tokens)),
      tick_s_(tick_s) {
  if (tick_s_ > 0) thread_ = std::thread([this] { Run(); });
}

AutoscaleLoop::~AutoscaleLoop() { Stop(); }

void AutoscaleLoop::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

Status AutoscaleLoop::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

Status AutoscaleLoop::Tick() {
  WeightNode& wn = cluster_.weight_node();
  const AutoscaleDecision d =
      policy_.Decide(wn.Now(), wn.PoolLoad(), demand_tokens_ ? demand_tokens_() : 0);
  if (d.kind == AutoscaleDecision::Kind::kScaleOut) {
    wn.NoteDecision("scale-out", -1, d.reason);
    const double t = wn.Now();
    auto id = cluster_.AddNode();
    if (id.ok()) {
      std::lock_guard lock(mu_);
      scale_out_ms_.push_back(1e3 * (wn.Now() - t));
    }
    policy_.NoteScaledOut(wn.Now());
    ++scale_outs_;
    return id.status().WithPrefix("autoscaler: scale-out");
  }
  if (d.kind == AutoscaleDecision::Kind::kScaleIn) {
    wn.NoteDecision("scale-in", d.node, d.reason);
    ++scale_ins_;
    return wn.DrainNode(d.node, 60).WithPrefix("autoscaler: scale-in");
  }
  return Status::Ok();
}

std::vector<double> AutoscaleLoop::scale_out_ms() const {
  std::lock_guard lock(mu_);
  return scale_out_ms_;
}

void AutoscaleLoop::Run() {
  while (!stop_) {
    std::this_thread::sleep_for(std::chrono::duration<double>(tick_s_));
    if (Status st = Tick(); !st.ok()) {
      std::lock_guard lock(mu_);
      error_ = st;
      return;
    }
  }
}

}  // namespace tessera::kernelflume
