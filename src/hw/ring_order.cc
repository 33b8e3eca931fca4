#include "hw/ring_order.h"

#include <algorithm>
#include <limits>
#include <string>

#include "core/infinity.h"
#include "sim/flow_sim.h"

namespace tessera::hw {

namespace {

using core::kInf;

void CheckDevice(const Topology& t, int d) {
  CHECK(d >= 0 && d < t.num_devices()) << "device " << d << " of " << t.num_devices();
}

// Scores rings with a reusable per-resource counter (BestRing evaluates up to 9! orders).
class RingEvaluator {
 public:
  explicit RingEvaluator(const Topology& t) : t_(t), count_(t.resources().size(), 0) {}

  struct Score {
    double bw = 0;         // single-ring bottleneck or double-ring bandwidth
    double latency_s = 0;  // the step latency of that ring
  };

  RingAnalysis Analyze(std::span<const int> order) {
    RingAnalysis a;
    a.order.assign(order.begin(), order.end());
    if (order.size() < 2) return a;
    const Score single = Evaluate(order, RingKind::kSingle);
    const Score twice = Evaluate(order, RingKind::kDouble);
    a.bottleneck_bytes_per_s = single.bw;
    a.step_latency_s = single.latency_s;
    a.double_ring_bytes_per_s = twice.bw;
    a.double_ring_step_latency_s = twice.latency_s;
    return a;
  }

  Score Evaluate(std::span<const int> order, RingKind kind) {
    const size_t n = order.size();
    double latency = 0;
    for (size_t p = 0; p < n; ++p) {
      latency = std::max(latency, Add(order[p], order[(p + 1) % n]));
      if (kind == RingKind::kDouble)
        latency = std::max(latency, Add(order[p], order[(p + n - 1) % n]));
    }
    double share = kInf;
    for (int r : touched_) {
      share = std::min(share, t_.resources()[r].bw_bytes_per_s / count_[r]);
      count_[r] = 0;
    }
    touched_.clear();
    return {kind == RingKind::kDouble ? 2 * share : share, latency};
  }

 private:
  // Counts the route's resources; returns its latency.
  double Add(int a, int b) {
    const Route& r = t_.route(a, b);
    for (int x : r.resources) {
      if (count_[x]++ == 0) touched_.push_back(x);
    }
    return r.latency_s;
  }

  const Topology& t_;
  std::vector<int> count_;
  std::vector<int> touched_;
};

// Whether (a, order_a) beats (b, order_b): larger bandwidth, lower latency, smaller order.
bool Better(const RingEvaluator::Score& a, const std::vector<int>& order_a,
            const RingEvaluator::Score& b, const std::vector<int>& order_b) {
  if (a.bw != b.bw) return a.bw > b.bw;
  if (a.latency_s != b.latency_s) return a.latency_s < b.latency_s;
  return order_a < order_b;
}

std::vector<int> Exhaustive(RingEvaluator* ev, std::vector<int> sorted, RingKind kind) {
  std::vector<int> best = sorted;
  RingEvaluator::Score best_score = ev->Evaluate(best, kind);
  // Orders starting with the smallest device, in lexicographic order: the first best wins ties.
  while (std::next_permutation(sorted.begin() + 1, sorted.end())) {
    const RingEvaluator::Score s = ev->Evaluate(sorted, kind);
    if (s.bw > best_score.bw || (s.bw == best_score.bw && s.latency_s < best_score.latency_s)) {
      best = sorted;
      best_score = s;
    }
  }
  return best;
}

std::vector<int> GreedyTwoOpt(const Topology& t, RingEvaluator* ev, const std::vector<int>& sorted,
                              RingKind kind) {
  const size_t n = sorted.size();
  std::vector<int> order = {sorted[0]};
  std::vector<char> used(n, 0);
  used[0] = 1;
  for (size_t k = 1; k < n; ++k) {
    size_t pick = n;
    for (size_t i = 0; i < n; ++i) {
      if (used[i]) continue;
      if (pick == n) {
        pick = i;
        continue;
      }
      const Route& a = t.route(order.back(), sorted[i]);
      const Route& b = t.route(order.back(), sorted[pick]);
      if (a.bw_bytes_per_s > b.bw_bytes_per_s ||
          (a.bw_bytes_per_s == b.bw_bytes_per_s && a.latency_s < b.latency_s)) {
        pick = i;
      }
    }
    used[pick] = 1;
    order.push_back(sorted[pick]);
  }
  RingEvaluator::Score score = ev->Evaluate(order, kind);
  // 2-opt: reverse order[i..j] (order[0] stays first) while some reversal improves the ring.
  constexpr int kMaxPasses = 100;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    bool improved = false;
    for (size_t i = 1; i + 1 < n; ++i) {
      for (size_t j = i + 1; j < n; ++j) {
        std::vector<int> cand = order;
        std::reverse(cand.begin() + i, cand.begin() + j + 1);
        const RingEvaluator::Score s = ev->Evaluate(cand, kind);
        if (Better(s, cand, score, order)) {
          order = std::move(cand);
          score = s;
          improved = true;
        }
      }
    }
    if (!improved) break;
  }
  return order;
}

}  // namespace

std::vector<double> ConcurrentFlowTimesS(const Topology& t, std::span<const Flow> flows) {
  // The flow-level simulation with every flow released at 0 and no dependencies.
  std::vector<double> bw;
  for (const Resource& r : t.resources()) bw.push_back(r.bw_bytes_per_s);
  std::vector<sim::FlowSpec> specs;
  std::vector<size_t> of_spec;  // the flow each spec models
  for (size_t i = 0; i < flows.size(); ++i) {
    const Flow& f = flows[i];
    CheckDevice(t, f.src_device);
    CheckDevice(t, f.dst_device);
    CHECK(f.bytes >= 0) << "flow " << i << " has " << f.bytes << " bytes";
    if (f.src_device == f.dst_device || f.bytes == 0) continue;  // local: done at 0
    const Route& route = t.route(f.src_device, f.dst_device);
    sim::FlowSpec spec;
    spec.resources = route.resources;
    spec.bytes = f.bytes;
    spec.latency_s = route.latency_s;
    specs.push_back(std::move(spec));
    of_spec.push_back(i);
  }
  std::vector<double> done(flows.size(), 0);
  auto times = sim::SimulateFlows(bw, specs);
  CHECK(times.ok()) << times.status().ToString();
  for (size_t k = 0; k < specs.size(); ++k) done[of_spec[k]] = times->arrival_s[k];
  return done;
}

RingAnalysis AnalyzeRing(const Topology& t, std::span<const int> order) {
  std::vector<int> sorted(order.begin(), order.end());
  for (int d : sorted) CheckDevice(t, d);
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end())
      << "a ring visits a device twice";
  RingEvaluator ev(t);
  return ev.Analyze(order);
}

core::StatusOr<RingAnalysis> BestRing(const Topology& t, std::span<const int> devices,
                                      RingKind kind) {
  if (devices.empty()) {
    return core::InvalidArgument("devices: empty list, a ring needs at least 1 device");
  }
  if (devices.size() > static_cast<size_t>(t.num_devices())) {
    return core::InvalidArgument("devices: got " + std::to_string(devices.size()) + " devices, " +
                                 t.name() + " has " + std::to_string(t.num_devices()));
  }
  std::vector<int> seen(t.num_devices(), -1);
  for (size_t i = 0; i < devices.size(); ++i) {
    const int d = devices[i];
    const std::string path = "devices[" + std::to_string(i) + "]";
    if (d < 0 || d >= t.num_devices()) {
      return core::InvalidArgument(path + ": got " + std::to_string(d) + ", not a device of " +
                                   t.name() + " (devices 0.." +
                                   std::to_string(t.num_devices() - 1) + ")");
    }
    if (seen[d] >= 0) {
      return core::InvalidArgument(path + ": got " + std::to_string(d) + ", already devices[" +
                                   std::to_string(seen[d]) + "] (a ring visits a device once)");
    }
    seen[d] = static_cast<int>(i);
  }
  std::vector<int> sorted(devices.begin(), devices.end());
  std::sort(sorted.begin(), sorted.end());
  RingEvaluator ev(t);
  if (sorted.size() < 3) return ev.Analyze(sorted);  // one ring only
  const std::vector<int> order = sorted.size() <= static_cast<size_t>(kExhaustiveRingMax)
                                     ? Exhaustive(&ev, sorted, kind)
                                     : GreedyTwoOpt(t, &ev, sorted, kind);
  return ev.Analyze(order);
}

}  // namespace tessera::hw
