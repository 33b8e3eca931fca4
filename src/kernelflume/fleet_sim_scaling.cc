// FleetSim's nodes: setup, starts, joins, releases, GPU accounting and the autoscaler's ticks.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "kernelflume/fleet_sim_state.h"

namespace tessera::kernelflume::fleet_detail {

using core::Status;

WindowAcc& FleetSim::Window(double t) {
  return WindowAt(static_cast<size_t>(std::max(0.0, t) / o_.window_s));
}

WindowAcc& FleetSim::WindowAt(size_t k) {
  if (windows_.size() <= k) windows_.resize(k + 1);
  return windows_[k];
}

// Integrates the GPU count over time into the windows, up to `now`.
void FleetSim::IntegrateGpus(double now) {
  if (now > gpus_since_) {
    // Window by window, by index: window k is [k w, (k + 1) w).
    const int64_t first = static_cast<int64_t>(gpus_since_ / o_.window_s);
    const int64_t last = static_cast<int64_t>(now / o_.window_s);
    for (int64_t k = first; k <= last; ++k) {
      const double lo = std::max(gpus_since_, static_cast<double>(k) * o_.window_s);
      const double hi = std::min(now, static_cast<double>(k + 1) * o_.window_s);
      if (hi <= lo) continue;
      WindowAcc& w = WindowAt(static_cast<size_t>(k));
      w.gpu_s += gpus_now_ * (hi - lo);
      w.gpus_max = std::max(w.gpus_max, gpus_now_);
    }
  }
  gpus_since_ = std::max(gpus_since_, now);
}

// Changes the GPU count at the current time.
void FleetSim::SetGpus(int delta) {
  const double now = q_.now_s();
  IntegrateGpus(now);
  gpus_now_ += delta;
  Window(now).gpus_max = std::max(Window(now).gpus_max, gpus_now_);
  r_.gpus_max = std::max(r_.gpus_max, gpus_now_);
}

Status FleetSim::Setup() {
  RETURN_IF_ERROR(model_.Validate());
  const int w = o_.weight_gpus;
  if (w > cluster_.ranks_per_node) {
    return core::InvalidArgument(fmt::format("weight_gpus: got {}, must be <= {} (a {} node)", w,
                                             cluster_.ranks_per_node, cluster_.name));
  }
  const double kv_per_token = static_cast<double>(model_.KvBytesPerToken(2));
  weight_bytes_ = static_cast<double>(model_.ParamCount()) * kWeightBytesPerParam;
  const double usable = cluster_.usable_memory_bytes();
  if (weight_bytes_ / w > usable) {
    return core::FailedPrecondition(fmt::format(
        "{}: {:.1f} GiB of bf16 weights per GPU over {} GPU(s), but a {} holds {:.1f} GiB usable "
        "(raise weight_gpus)",
        model_.name, weight_bytes_ / w / (1 << 30), w, cluster_.device.name, usable / (1 << 30)));
  }
  total_gpus_ = cluster_.nodes * cluster_.ranks_per_node;
  if (o_.max_gpus > 0) total_gpus_ = std::min(total_gpus_, o_.max_gpus);
  machines_ = (total_gpus_ + cluster_.ranks_per_node - 1) / cluster_.ranks_per_node;
  AutoscalerOptions ao = o_.autoscaler;
  int most = 0;
  if (kf()) {
    const hw::Device& a = AttnDevice();
    node_capacity_ = static_cast<int64_t>(a.memory_bytes * a.memory_usable_fraction / kv_per_token);
    most = std::min(64, total_gpus_ - o_.weight_nodes * w);
    if (most < 1) {
      return core::FailedPrecondition(
          fmt::format("{} weight node(s) of {} GPU(s) leave no GPU of {}'s {} for attention",
                      o_.weight_nodes, w, cluster_.name, total_gpus_));
    }
  } else {
    node_capacity_ = static_cast<int64_t>((usable * w - weight_bytes_) / kv_per_token);
    most = std::min(64, total_gpus_ / w);
    if (node_capacity_ < 1) {
      return core::FailedPrecondition(
          fmt::format("{} on {} {}(s) leaves no memory for KV (raise weight_gpus)", model_.name, w,
                      cluster_.device.name));
    }
  }
  if (ao.max_nodes == 0 || ao.max_nodes > most) ao.max_nodes = most;
  if (ao.min_nodes > ao.max_nodes) {
    return core::InvalidArgument(fmt::format("min_nodes: got {}, but {} holds at most {} {}",
                                             ao.min_nodes, cluster_.name, ao.max_nodes,
                                             kf() ? "attention nodes" : "instances"));
  }
  RETURN_IF_ERROR(ValidateAutoscalerOptions(ao));
  o_.autoscaler = ao;
  kv_policy_ = Autoscaler(ao);
  AutoscalerOptions wo = ao;
  wo.min_nodes = o_.weight_nodes;
  wo.max_nodes = std::min(64, (total_gpus_ - 1) / w);
  if (o_.max_weight_nodes > 0) wo.max_nodes = std::min(wo.max_nodes, o_.max_weight_nodes);
  if (wo.max_nodes < o_.weight_nodes) {
    return core::InvalidArgument(
        fmt::format("weight_nodes: got {}, but at most {} fit beside an attention node",
                    o_.weight_nodes, wo.max_nodes));
  }
  weight_policy_ = Autoscaler(wo);
  machine_loads_.assign(machines_, 0);
  machine_gpus_.assign(machines_, 0);
  if (kf()) {
    domains_.resize(1);
    for (int i = 0; i < o_.weight_nodes; ++i) AddNode(Tier::kWeight, 0, true);
    for (int i = 0; i < ao.min_nodes; ++i) AddNode(Tier::kAttention, 0, true);
  } else {
    for (int i = 0; i < ao.min_nodes; ++i) AddNode(Tier::kInstance, 0, true);
  }
  return Status::Ok();
}

// Requests a node at `now` (billed from now); ready at once when warm_at_zero (and its machine
// holds the model from then on).
int FleetSim::AddNode(Tier tier, double now, bool warm_at_zero) {
  const int n = static_cast<int>(nodes_.size());
  Node node;
  node.tier = tier;
  node.start_s = now;
  const bool weights = tier != Tier::kAttention;
  node.gpus = weights ? o_.weight_gpus : 1;
  node.usd_per_gpu_s = weights ? cluster_.device.price_usd_per_hour / 3600
                               : AttnDevice().price_usd_per_hour * o_.attn_price_factor / 3600;
  node.capacity = tier == Tier::kWeight ? o_.max_batch : node_capacity_;
  // The machine with room, preferring one that loaded the model (warm), then the emptiest.
  int best = 0;
  auto key = [&](int i) {
    const bool fits = cluster_.ranks_per_node - machine_gpus_[i] >= node.gpus;
    return std::tuple(fits, weights && machine_loads_[i] > 0, -machine_gpus_[i]);
  };
  for (int m = 1; m < machines_; ++m) {
    if (key(m) > key(best)) best = m;
  }
  node.machine = best;
  machine_gpus_[best] += node.gpus;
  double start_s = o_.attn_start_s + o_.route_install_s;
  if (weights) {
    const bool warm = machine_loads_[best] > 0;
    machine_loads_[best]++;
    if (!warm_at_zero) (warm ? r_.warm_starts : r_.cold_starts)++;
    start_s =
        weight_bytes_ / (warm ? o_.dram_bytes_per_s : o_.ssd_bytes_per_s) + o_.instance_init_s;
    node.group = static_cast<int>(groups_.size());
    Group g;
    g.node = n;
    if (tier == Tier::kInstance) {
      g.domain = static_cast<int>(domains_.size());
      domains_.emplace_back();
    }
    groups_.push_back(std::move(g));
  }
  nodes_.push_back(node);
  SetGpus(node.gpus);
  if (perfetto_ != nullptr) {
    const char* what = tier == Tier::kWeight      ? "weight node"
                       : tier == Tier::kAttention ? "attention node"
                                                  : "instance";
    perfetto_->NameTrack(n, fmt::format("{} {}", what, n));
  }
  if (warm_at_zero) {
    NodeReady(n);
  } else {
    nodes_[n].ready_event =
        q_.Schedule(now + start_s, kFleetNodeReady, [this, n] { NodeReady(n); });
  }
  return n;
}

void FleetSim::NodeReady(int n) {
  Node& node = nodes_[n];
  node.ready = true;
  node.ready_event = -1;
  if (perfetto_ != nullptr && q_.now_s() > node.start_s) {
    perfetto_->Span(n, "starting", "node", node.start_s, q_.now_s() - node.start_s);
  }
  if (node.tier == Tier::kAttention) {
    domains_[0].capacity += node.capacity;
  } else {
    if (node.tier == Tier::kInstance) domains_[groups_[node.group].domain].capacity = node.capacity;
    groups_[node.group].up = true;
  }
  TryAdmit();
}

void FleetSim::ReleaseNode(int n, double now) {
  Node& node = nodes_[n];
  if (node.ready_event >= 0) q_.Cancel(node.ready_event);
  if (perfetto_ != nullptr && node.ready) {
    perfetto_->Span(n, "up", "node", node.start_s, now - node.start_s);
  }
  if (node.ready && node.tier == Tier::kAttention) {
    Domain& d = domains_[0];
    d.capacity -= node.capacity;
    d.cache.Evict(d.active + d.cache.tokens() - d.capacity);
  } else if (node.tier == Tier::kInstance) {
    Domain& d = domains_[groups_[node.group].domain];
    d.capacity = 0;
    d.cache.Clear();
  }
  if (node.group >= 0) groups_[node.group].up = false;
  machine_gpus_[node.machine] -= node.gpus;
  node.ready = false;
  node.release_s = now;
  SetGpus(-node.gpus);
}

void FleetSim::ScaleTier(Tier tier, Autoscaler& policy, double now) {
  // Each node's load as a share of what it can hold, in parts per million: the autoscaler's
  // "KV use" is then the tier's mean share (see the header).
  constexpr double kParts = 1e6;
  const double tpot_target_s = o_.tpot_target_ms / 1e3;
  std::vector<WeightNode::NodeLoad> loads;
  double demand = 0;
  const Domain* pool = kf() ? &domains_[0] : nullptr;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    Node& node = nodes_[n];
    if (node.tier != tier || node.release_s >= 0) continue;
    WeightNode::NodeLoad l;
    l.id = static_cast<int32_t>(n);
    l.capacity_tokens = static_cast<int64_t>(kParts);
    double share = 0;
    if (node.ready && tier == Tier::kAttention) {
      share = pool->capacity > 0
                  ? static_cast<double>(pool->active + pool->cache.tokens()) / pool->capacity
                  : 0;
      if (tpot_target_s > 0) {
        for (const Group& g : groups_) share = std::max(share, g.slowest_step_s / tpot_target_s);
      }
    } else if (node.ready) {
      Group& g = groups_[node.group];
      const double busy = g.PrefillBusy(now);
      const double prefill_share = (busy - g.busy_at_tick_s) / o_.tick_s;
      g.busy_at_tick_s = busy;
      share = std::max(
          prefill_share,
          tier == Tier::kWeight
              ? static_cast<double>(g.load()) / static_cast<double>(o_.max_batch)
              : static_cast<double>(domains_[g.domain].active + domains_[g.domain].cache.tokens()) /
                    node.capacity);
      if (tier == Tier::kInstance && tpot_target_s > 0) {
        share = std::max(share, g.slowest_step_s / tpot_target_s);
      }
    }
    l.live_tokens = static_cast<int64_t>(share * kParts);
    demand += static_cast<double>(l.live_tokens);
    loads.push_back(l);
  }
  // The queue counts, each request as the share of a node it needs: its prompt's KV, a batch
  // slot, or its prefill (uncached tokens) over a tick.
  for (int i : queue_) {
    const Request& rq = reqs_[i];
    const double kv = static_cast<double>(rq.prompt) / static_cast<double>(node_capacity_);
    if (tier == Tier::kAttention) {
      demand += kParts * kv;
      continue;
    }
    const int64_t hit =
        kf() && rq.reuse_prefix ? pool->cache.Lookup(rq.t->hash_ids, rq.prompt).tokens : 0;
    const double prefill = Prefill(rq.prompt - hit, hit) / o_.tick_s;
    demand += kParts *
              std::max(prefill, tier == Tier::kWeight ? 1 / static_cast<double>(o_.max_batch) : kv);
  }
  const AutoscaleDecision d = policy.Decide(now, loads, static_cast<int64_t>(demand));
  if (d.kind == AutoscaleDecision::Kind::kScaleOut) {
    const int gpus = tier == Tier::kAttention ? 1 : o_.weight_gpus;
    if (gpus_now_ + gpus > total_gpus_) return;  // the cluster is full
    AddNode(tier, now, false);
    policy.NoteScaledOut(now);
    r_.scale_outs++;
  } else if (d.kind == AutoscaleDecision::Kind::kScaleIn) {
    const Node& node = nodes_[d.node];
    bool can = true;
    if (node.ready && node.tier == Tier::kAttention) {
      can = pool->active <= pool->capacity - node.capacity;
    } else if (node.ready) {
      const Group& g = groups_[node.group];
      can = g.load() == 0 && !g.busy;
    }
    if (can) {
      ReleaseNode(d.node, now);
      r_.scale_ins++;
    }
  }
}

void FleetSim::Tick() {
  if (finished_ == static_cast<int64_t>(reqs_.size())) return;
  const double now = q_.now_s();
  int64_t active = 0, capacity = 0;
  for (const Domain& d : domains_) {
    active += d.active;
    capacity += d.capacity;
  }
  for (Domain& d : domains_) d.cache.EvictInsertedBefore(now - o_.cache_ttl_s);
  WindowAcc& w = Window(now);
  w.kv_use_sum += capacity > 0 ? static_cast<double>(active) / capacity : 0;
  w.kv_use_n++;
  if (kf()) {
    ScaleTier(Tier::kAttention, kv_policy_, now);
    ScaleTier(Tier::kWeight, weight_policy_, now);
  } else {
    ScaleTier(Tier::kInstance, kv_policy_, now);
  }
  for (Group& g : groups_) g.slowest_step_s = 0;
  q_.Schedule(now + o_.tick_s, kFleetTick, [this] { Tick(); });
}

}  // namespace tessera::kernelflume::fleet_detail
