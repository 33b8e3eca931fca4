#include "elaswave/partition.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace tessera::elaswave {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kTieSlack = 1e-9;

core::Status CheckInputs(const std::vector<SlotCost>& slots,
                         const std::vector<StageResources>& stages) {
  if (slots.empty()) return core::InvalidArgument("partition: no layer slots");
  if (stages.empty()) return core::InvalidArgument("partition: no stages");
  if (stages.size() > slots.size()) {
    return core::InvalidArgument(
        fmt::format("partition: {} stages for {} layer slots; every stage needs at least one slot",
                    stages.size(), slots.size()));
  }
  for (size_t l = 0; l < slots.size(); ++l) {
    const SlotCost& c = slots[l];
    if (!std::isfinite(c.compute_s) || c.compute_s < 0 || c.state_bytes < 0 || c.act_bytes < 0) {
      return core::InvalidArgument(fmt::format(
          "partition: slot {}: compute {} s, state {} B, activations {} B; all must be finite "
          "and >= 0",
          l, c.compute_s, c.state_bytes, c.act_bytes));
    }
  }
  for (size_t j = 0; j < stages.size(); ++j) {
    const StageResources& s = stages[j];
    if (!std::isfinite(s.speed) || s.speed <= 0) {
      return core::InvalidArgument(
          fmt::format("partition: stage {}: speed {}, must be finite and > 0", j, s.speed));
    }
    if (!std::isfinite(s.p2p_s) || s.p2p_s < 0) {
      return core::InvalidArgument(
          fmt::format("partition: stage {}: p2p {} s, must be finite and >= 0", j, s.p2p_s));
    }
    if (std::isnan(s.mem_cap_bytes) || s.mem_cap_bytes < 0) {
      return core::InvalidArgument(
          fmt::format("partition: stage {}: memory cap {} B, must be >= 0", j, s.mem_cap_bytes));
    }
  }
  return core::Status::Ok();
}

// Prefix sums so that a range's cost, memory and moved bytes are O(1).
struct Prefix {
  std::vector<double> compute;
  std::vector<double> state, act;
  explicit Prefix(const std::vector<SlotCost>& slots) {
    compute.assign(slots.size() + 1, 0.0);
    state.assign(slots.size() + 1, 0.0);
    act.assign(slots.size() + 1, 0.0);
    for (size_t l = 0; l < slots.size(); ++l) {
      compute[l + 1] = compute[l] + slots[l].compute_s;
      state[l + 1] = state[l] + static_cast<double>(slots[l].state_bytes);
      act[l + 1] = act[l] + static_cast<double>(slots[l].act_bytes);
    }
  }
};

struct RangeModel {
  const std::vector<SlotCost>& slots;
  const std::vector<StageResources>& stages;
  Prefix prefix;
  int S() const { return static_cast<int>(stages.size()); }
  double Cost(int j, int k, int i) const {
    return (prefix.compute[i] - prefix.compute[k]) / stages[j].speed + stages[j].p2p_s;
  }
  bool Fits(int j, int k, int i) const {
    const double mem = (prefix.state[i] - prefix.state[k]) +
                       static_cast<double>(S() - j) * (prefix.act[i] - prefix.act[k]);
    return mem <= stages[j].mem_cap_bytes;
  }
  int64_t Moved(int j, int k, int i) const {
    int64_t moved = 0;
    for (int l = k; l < i; ++l) {
      if (!stages[j].held.count(l)) moved += slots[l].state_bytes;
    }
    return moved;
  }
};

core::Status NoFit(const RangeModel& m) {
  return core::Infeasible(
      fmt::format("no partition of {} layer slots over {} stages fits the stages' memory caps",
                  m.slots.size(), m.stages.size()));
}

}  // namespace

int Partition::StageOfSlot(int slot) const {
  for (int j = 0; j < num_stages(); ++j) {
    if (slot >= begin[j] && slot < begin[j + 1]) return j;
  }
  return -1;
}

core::StatusOr<Partition> MinimaxPartition(const std::vector<SlotCost>& slots,
                                           const std::vector<StageResources>& stages) {
  RETURN_IF_ERROR(CheckInputs(slots, stages));
  const RangeModel m{slots, stages, Prefix(slots)};
  const int S = m.S();
  const int L = static_cast<int>(slots.size());
  // Pass 1: the minimax period.
  std::vector<std::vector<double>> f(S + 1, std::vector<double>(L + 1, kInf));
  f[0][0] = 0;
  for (int j = 1; j <= S; ++j) {
    for (int i = j; i <= L; ++i) {
      for (int k = j - 1; k < i; ++k) {
        if (f[j - 1][k] == kInf || !m.Fits(j - 1, k, i)) continue;
        f[j][i] = std::min(f[j][i], std::max(f[j - 1][k], m.Cost(j - 1, k, i)));
      }
    }
  }
  if (f[S][L] == kInf) return NoFit(m);
  const double bound = f[S][L] * (1 + kTieSlack);
  // Pass 2: fewest moved bytes among ranges within the bound.
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  std::vector<std::vector<int64_t>> g(S + 1, std::vector<int64_t>(L + 1, kNone));
  std::vector<std::vector<int>> from(S + 1, std::vector<int>(L + 1, -1));
  g[0][0] = 0;
  for (int j = 1; j <= S; ++j) {
    for (int i = j; i <= L; ++i) {
      for (int k = j - 1; k < i; ++k) {
        if (g[j - 1][k] == kNone || !m.Fits(j - 1, k, i) || m.Cost(j - 1, k, i) > bound) {
          continue;
        }
        const int64_t moved = g[j - 1][k] + m.Moved(j - 1, k, i);
        if (moved < g[j][i]) {
          g[j][i] = moved;
          from[j][i] = k;
        }
      }
    }
  }
  Partition p;
  p.begin.assign(S + 1, 0);
  p.begin[S] = L;
  for (int j = S, i = L; j > 0; --j) {
    i = from[j][i];
    p.begin[j - 1] = i;
  }
  p.moved_bytes = g[S][L];
  p.tau_s = 0;
  for (int j = 0; j < S; ++j) p.tau_s = std::max(p.tau_s, m.Cost(j, p.begin[j], p.begin[j + 1]));
  return p;
}

core::StatusOr<Partition> BruteForcePartition(const std::vector<SlotCost>& slots,
                                              const std::vector<StageResources>& stages) {
  RETURN_IF_ERROR(CheckInputs(slots, stages));
  const RangeModel m{slots, stages, Prefix(slots)};
  const int S = m.S();
  const int L = static_cast<int>(slots.size());
  if (L > 16) return core::InvalidArgument("BruteForcePartition: at most 16 slots");
  std::vector<Partition> all;
  std::vector<int> begin(S + 1, 0);
  begin[S] = L;
  // Enumerate the S - 1 inner cuts as increasing positions in [1, L - 1].
  const auto recurse = [&](auto&& self, int j, int lo) -> void {
    if (j == S) {
      Partition p;
      p.begin = begin;
      for (int s = 0; s < S; ++s) {
        if (!m.Fits(s, begin[s], begin[s + 1])) return;
        p.tau_s = std::max(p.tau_s, m.Cost(s, begin[s], begin[s + 1]));
        p.moved_bytes += m.Moved(s, begin[s], begin[s + 1]);
      }
      all.push_back(p);
      return;
    }
    for (int cut = lo; cut <= L - (S - j); ++cut) {
      begin[j] = cut;
      self(self, j + 1, cut + 1);
    }
  };
  recurse(recurse, 1, 1);
  if (all.empty()) return NoFit(m);
  double tau = kInf;
  for (const Partition& p : all) tau = std::min(tau, p.tau_s);
  const Partition* best = nullptr;
  for (const Partition& p : all) {
    if (p.tau_s <= tau * (1 + kTieSlack) && (!best || p.moved_bytes < best->moved_bytes)) best = &p;
  }
  return *best;
}

}  // namespace tessera::elaswave
