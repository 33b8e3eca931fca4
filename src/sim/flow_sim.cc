#include "sim/flow_sim.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <string>

#include "core/infinity.h"

namespace tessera::sim {

namespace {

using core::kInf;

// Max-min fair rates of the transmitting flows (progressive filling).
void FairRates(std::span<const double> bw, std::span<const FlowSpec> flows,
               const std::vector<int>& active, std::vector<double>* rate) {
  std::vector<double> cap(bw.begin(), bw.end());
  std::vector<char> frozen(active.size(), 0);
  for (int f : active) (*rate)[f] = 0;
  size_t left = active.size();
  // Flows without resources are not limited.
  for (size_t i = 0; i < active.size(); ++i) {
    if (flows[active[i]].resources.empty()) {
      (*rate)[active[i]] = kInf;
      frozen[i] = 1;
      --left;
    }
  }
  std::vector<int> users(bw.size());
  while (left > 0) {
    std::fill(users.begin(), users.end(), 0);
    for (size_t i = 0; i < active.size(); ++i) {
      if (!frozen[i]) {
        for (int r : flows[active[i]].resources) ++users[r];
      }
    }
    double inc = kInf;
    for (size_t r = 0; r < bw.size(); ++r) {
      if (users[r] > 0) inc = std::min(inc, cap[r] / users[r]);
    }
    for (size_t i = 0; i < active.size(); ++i) {
      if (!frozen[i]) (*rate)[active[i]] += inc;
    }
    for (size_t r = 0; r < bw.size(); ++r) {
      if (users[r] > 0) cap[r] -= inc * users[r];
    }
    for (size_t i = 0; i < active.size(); ++i) {
      if (frozen[i]) continue;
      for (int r : flows[active[i]].resources) {
        if (cap[r] <= 1e-12 * bw[r]) {
          frozen[i] = 1;
          --left;
          break;
        }
      }
    }
  }
}

}  // namespace

core::StatusOr<FlowTimes> SimulateFlows(std::span<const double> bw,
                                        std::span<const FlowSpec> flows) {
  const int n = static_cast<int>(flows.size());
  for (size_t r = 0; r < bw.size(); ++r) {
    if (!(bw[r] > 0) || !std::isfinite(bw[r])) {
      return core::InvalidArgument("flow sim: resource " + std::to_string(r) + " bandwidth " +
                                   std::to_string(bw[r]) + ", must be finite and > 0");
    }
  }
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<int>> dependents(n), tx_dependents(n);
  for (int f = 0; f < n; ++f) {
    const FlowSpec& s = flows[f];
    if (!(s.bytes >= 0) || !(s.latency_s >= 0) || !(s.release_s >= 0) ||
        !std::isfinite(s.bytes + s.latency_s + s.release_s)) {
      return core::InvalidArgument("flow sim: flow " + std::to_string(f) +
                                   " has a negative or non-finite bytes, latency or release");
    }
    for (int r : s.resources) {
      if (r < 0 || r >= static_cast<int>(bw.size())) {
        return core::InvalidArgument("flow sim: flow " + std::to_string(f) + " names resource " +
                                     std::to_string(r));
      }
    }
    for (int d : s.deps) {
      if (d < 0 || d >= n || d == f) {
        return core::InvalidArgument("flow sim: flow " + std::to_string(f) + " depends on " +
                                     std::to_string(d));
      }
      ++waiting[f];
      dependents[d].push_back(f);
    }
    for (int d : s.tx_after) {
      if (d < 0 || d >= n || d == f) {
        return core::InvalidArgument("flow sim: flow " + std::to_string(f) + " transmits after " +
                                     std::to_string(d));
      }
      ++waiting[f];
      tx_dependents[d].push_back(f);
    }
  }
  auto release = [&](const std::vector<int>& which, double now, auto& starts,
                     std::vector<int>& waits, std::vector<double>& ready) {
    for (int g : which) {
      ready[g] = std::max(ready[g], now);
      if (--waits[g] == 0) starts.push({ready[g], g});
    }
  };
  FlowTimes out;
  out.start_s.assign(n, kInf);
  out.arrival_s.assign(n, kInf);
  std::vector<double> ready_at(n, 0), remaining(n), rate(n, 0);
  for (int f = 0; f < n; ++f) {
    ready_at[f] = flows[f].release_s;
    remaining[f] = flows[f].bytes;
  }
  using Event = std::pair<double, int>;  // (time, flow)
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> starts, arrivals;
  for (int f = 0; f < n; ++f) {
    if (waiting[f] == 0) starts.push({ready_at[f], f});
  }
  std::vector<int> active;
  double now = 0;
  int arrived = 0;
  while (arrived < n) {
    // The next event: a start, an arrival, or the first transmission to finish.
    double t_tx = kInf;
    int f_tx = -1;
    for (int f : active) {
      const double t = rate[f] == kInf ? now : now + remaining[f] / rate[f];
      if (t < t_tx) t_tx = t, f_tx = f;
    }
    const double t_start = starts.empty() ? kInf : starts.top().first;
    const double t_arr = arrivals.empty() ? kInf : arrivals.top().first;
    const double t = std::min({t_tx, t_start, t_arr});
    if (t == kInf) {
      return core::InvalidArgument("flow sim: the dependencies form a cycle (" +
                                   std::to_string(n - arrived) + " flows never start)");
    }
    for (int f : active) {
      if (rate[f] != kInf) remaining[f] = std::max(0.0, remaining[f] - rate[f] * (t - now));
    }
    now = t;
    bool changed = false;
    if (t == t_arr) {
      const int f = arrivals.top().second;
      arrivals.pop();
      ++arrived;
      release(dependents[f], now, starts, waiting, ready_at);
    } else if (t == t_start) {
      const int f = starts.top().second;
      starts.pop();
      out.start_s[f] = now;
      if (flows[f].bytes == 0) {
        out.arrival_s[f] = now + flows[f].latency_s;
        arrivals.push({out.arrival_s[f], f});
        release(tx_dependents[f], now, starts, waiting, ready_at);
      } else {
        active.push_back(f);
        changed = true;
      }
    } else {
      active.erase(std::find(active.begin(), active.end(), f_tx));
      out.arrival_s[f_tx] = now + flows[f_tx].latency_s;
      arrivals.push({out.arrival_s[f_tx], f_tx});
      release(tx_dependents[f_tx], now, starts, waiting, ready_at);
      changed = true;
    }
    if (changed) FairRates(bw, flows, active, &rate);
  }
  return out;
}

}  // namespace tessera::sim
