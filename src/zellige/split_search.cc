#include "zellige/split_search.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/infinity.h"

namespace tessera::zellige {
namespace {

using core::kInf;
constexpr double kEps = 1e-12;

// Per-rank loads and memory of a (partial) placement, with the number of ranks over a limit
// and the fluid room sum_r max(0, min(limit - load_r, (cap - mem_r) / rho)), all kept
// incrementally so that a candidate move is checked in O(block size).
class LoadState {
 public:
  LoadState(const SplitSearchSpace& s, double limit_s)
      : s_(s), limit_(limit_s), load_(s.num_ranks, 0.0), mem_(s.num_ranks, 0.0) {
    for (int r = 0; r < s.num_ranks; ++r) room_ += Room(0.0, 0.0);
    // Per-rank terms of the sums, cached so that a removal need not recompute them (the same
    // function of the same loads: the sums are bit for bit those of recomputing).
    room_r_.assign(s.num_ranks, Room(0.0, 0.0));
    over_r_.assign(s.num_ranks, Over(0.0, 0.0));
    violated_r_.assign(s.num_ranks, Violated(0.0, 0.0));
  }

  const GroupOption& Option(const AnchorPick& p) const { return s_.options[p.group][p.option]; }

  // Adds (sign 1) or removes (sign -1) a placement.
  void Apply(const AnchorPick& p, double sign) {
    const GroupOption& o = Option(p);
    const RankBlock& b = s_.blocks[p.block];
    for (int r : b.RankRange()) {
      room_ -= room_r_[r];
      violations_ -= violated_r_[r];
      over_ -= over_r_[r];
      load_[r] += sign * o.time_s;
      mem_[r] += sign * o.mem_bytes;
      room_r_[r] = Room(load_[r], mem_[r]);
      violated_r_[r] = Violated(load_[r], mem_[r]);
      over_r_[r] = Over(load_[r], mem_[r]);
      room_ += room_r_[r];
      violations_ += violated_r_[r];
      over_ += over_r_[r];
    }
  }

  bool Feasible() const { return violations_ == 0 && room_ >= Need(); }

  // Whether adding `p` would give a feasible state; `room` gets the fluid room after it.
  bool FeasibleWith(const AnchorPick& p, double* room) const {
    const GroupOption& o = Option(p);
    const RankBlock& b = s_.blocks[p.block];
    int violations = violations_;
    double r_sum = room_;
    for (int r : b.RankRange()) {
      const double l = load_[r] + o.time_s, m = mem_[r] + o.mem_bytes;
      if (Violated(l, m)) return false;
      violations -= violated_r_[r];
      r_sum += Room(l, m) - room_r_[r];
    }
    *room = r_sum;
    return violations == 0 && r_sum >= Need();
  }

  int violations() const { return violations_; }
  double room() const { return room_; }

  // How far from feasible, in seconds: load over the limit, memory over the capacity (as
  // seconds of fluid it displaces) and fluid that finds no room.
  double Excess() const { return std::max(0.0, over_) + std::max(0.0, Need() - room_); }
  double ExcessWith(const AnchorPick& p) const {
    const GroupOption& o = Option(p);
    const RankBlock& b = s_.blocks[p.block];
    double over = over_, room = room_;
    for (int r : b.RankRange()) {
      const double l = load_[r] + o.time_s, m = mem_[r] + o.mem_bytes;
      over += Over(l, m) - over_r_[r];
      room += Room(l, m) - room_r_[r];
    }
    return std::max(0.0, over) + std::max(0.0, Need() - room);
  }

 private:
  double Room(double load, double mem) const {
    double r = limit_ - load;
    if (s_.fluid_mem_per_s > 0) r = std::min(r, (s_.mem_cap_bytes - mem) / s_.fluid_mem_per_s);
    return std::max(0.0, r);
  }
  double Over(double load, double mem) const {
    const double per_s = s_.fluid_mem_per_s > 0 ? s_.fluid_mem_per_s : s_.mem_cap_bytes / limit_;
    return std::max(0.0, load - limit_) + std::max(0.0, mem - s_.mem_cap_bytes) / per_s;
  }
  int Violated(double load, double mem) const {
    return load > limit_ || mem > s_.mem_cap_bytes ? 1 : 0;
  }
  // WaterFill in ecf_solver.cc needs the memory caps to exceed the fluid by a 1e-9 margin.
  double Need() const { return s_.fluid_time_s * (1 + 1e-8); }

  const SplitSearchSpace& s_;
  double limit_;
  std::vector<double> load_, mem_;
  std::vector<double> room_r_, over_r_;  // Room and Over of each rank's load and memory
  std::vector<int> violated_r_;          // Violated of each rank's load and memory
  double room_ = 0;
  double over_ = 0;
  int violations_ = 0;
};

}  // namespace

double BytesScale(const std::vector<std::vector<GroupOption>>& options,
                  const std::vector<int>& group_sizes) {
  double scale = 0;
  for (size_t g = 0; g < options.size(); ++g) {
    double mx = 0;
    for (const auto& o : options[g]) mx = std::max(mx, o.comm_bytes * o.degree);
    scale += mx * group_sizes[g];
  }
  return scale;
}

double SplitCost(const GroupOption& o, double bytes_scale, double bytes_weight) {
  if (o.degree == 1) return 0.0;
  return 1.0 + (bytes_scale > 0 ? bytes_weight * o.comm_bytes * o.degree / bytes_scale : 0.0);
}

double TotalSplitCost(const SplitSearchSpace& space, const std::vector<AnchorPick>& picks) {
  double c = 0;
  for (const auto& p : picks)
    c += SplitCost(space.options[p.group][p.option], space.bytes_scale, space.bytes_weight);
  return c;
}

bool FitsLimit(const SplitSearchSpace& space, const std::vector<AnchorPick>& picks,
               double limit_s) {
  LoadState st(space, limit_s);
  for (const auto& p : picks) st.Apply(p, 1.0);
  return st.Feasible();
}

namespace {

// LowSplitGreedy after `prefix` (the first sequences' picks, in greedy order); the sequence
// right after the prefix takes option `forced` (when >= 0).
std::vector<AnchorPick> GreedyFrom(const SplitSearchSpace& space, double target_s,
                                   double reserve_bytes, const std::vector<AnchorPick>& prefix,
                                   int forced) {
  const int n = space.num_ranks;
  const double cap = space.mem_cap_bytes;
  std::vector<double> load(n, 0.0), mem(n, 0.0);
  std::vector<AnchorPick> picks;
  for (const AnchorPick& p : prefix) {
    picks.push_back(p);
    const GroupOption& o = space.options[p.group][p.option];
    const RankBlock& blk = space.blocks[p.block];
    AddToBlock(blk, o.time_s, &load);
    AddToBlock(blk, o.mem_bytes, &mem);
  }
  size_t index = 0;
  for (size_t g = 0; g < space.options.size(); ++g) {
    for (int copy = 0; copy < space.group_sizes[g]; ++copy, ++index) {
      if (index < prefix.size()) continue;
      const bool restricted = index == prefix.size() && forced >= 0;
      // Best within the target: least cost, then the fullest block. Fallback: least load
      // after it, then least cost.
      AnchorPick fit{-1, -1, -1}, fallback{-1, -1, -1};
      double fit_cost = kInf, fit_full = -kInf, fb_after = kInf, fb_cost = kInf;
      for (size_t j = 0; j < space.options[g].size(); ++j) {
        if (restricted && static_cast<int>(j) != forced) continue;
        const GroupOption& o = space.options[g][j];
        const double cost = SplitCost(o, space.bytes_scale, space.bytes_weight);
        for (size_t b = 0; b < space.blocks.size(); ++b) {
          const RankBlock& blk = space.blocks[b];
          if (blk.size != o.degree) continue;
          const double mx = MaxOverBlock(load, blk);
          const double mem_mx = MaxOverBlock(mem, blk);
          if (mem_mx + o.mem_bytes > cap) continue;
          const AnchorPick p{static_cast<int>(g), static_cast<int>(j), static_cast<int>(b)};
          const double after = mx + o.time_s;
          if (after <= target_s && mem_mx + o.mem_bytes + reserve_bytes <= cap) {
            if (cost < fit_cost - kEps || (cost <= fit_cost + kEps && mx > fit_full)) {
              fit = p;
              fit_cost = cost;
              fit_full = mx;
            }
          }
          if (after < fb_after * (1 - kEps) ||
              (after <= fb_after * (1 + kEps) && cost < fb_cost - kEps)) {
            fallback = p;
            fb_after = after;
            fb_cost = cost;
          }
        }
      }
      const AnchorPick pick = fit.group >= 0 ? fit : fallback;
      if (pick.group < 0) return {};
      picks.push_back(pick);
      const GroupOption& o = space.options[g][pick.option];
      const RankBlock& blk = space.blocks[pick.block];
      AddToBlock(blk, o.time_s, &load);
      AddToBlock(blk, o.mem_bytes, &mem);
    }
  }
  return picks;
}

}  // namespace

std::vector<AnchorPick> LowSplitGreedy(const SplitSearchSpace& space, double target_s,
                                       double reserve_bytes) {
  return GreedyFrom(space, target_s, reserve_bytes, {}, -1);
}

std::vector<AnchorPick> PilotSplitGreedy(const SplitSearchSpace& space, double limit_s,
                                         double target_s, double reserve_bytes) {
  const double per_excess_s = 1.0 / (1e-3 * std::max(limit_s, 1e-30));
  auto score = [&](const std::vector<AnchorPick>& picks) {
    LoadState st(space, limit_s);
    for (const auto& p : picks) st.Apply(p, 1.0);
    return TotalSplitCost(space, picks) + per_excess_s * st.Excess();
  };
  std::vector<AnchorPick> prefix, best_full;
  double best_score = kInf;
  int total = 0;
  for (int c : space.group_sizes) total += c;
  for (int i = 0; i < total; ++i) {
    int g = 0;
    for (int seen = space.group_sizes[0]; seen <= i; seen += space.group_sizes[++g]) {
    }
    std::vector<AnchorPick> step_best;
    double step_score = kInf;
    for (size_t j = 0; j < space.options[g].size(); ++j) {
      std::vector<AnchorPick> full =
          GreedyFrom(space, target_s, reserve_bytes, prefix, static_cast<int>(j));
      if (full.empty()) continue;
      const double sc = score(full);
      if (sc < step_score - kEps) {
        step_score = sc;
        step_best = std::move(full);
      }
    }
    if (step_best.empty()) return best_full;
    if (step_score < best_score - kEps) {
      best_score = step_score;
      best_full = step_best;
    }
    prefix.push_back(step_best[i]);
  }
  return best_full;
}

bool RepairLimit(const SplitSearchSpace& space, double limit_s, std::vector<AnchorPick>* picks,
                 int max_moves) {
  LoadState st(space, limit_s);
  for (const auto& p : *picks) st.Apply(p, 1.0);
  auto cost = [&](const AnchorPick& p) {
    return SplitCost(space.options[p.group][p.option], space.bytes_scale, space.bytes_weight);
  };
  for (int move = 0; move < max_moves && !st.Feasible(); ++move) {
    const double excess = st.Excess();
    // Best move: no cost increase and the largest excess reduction; else the least cost
    // increase per second of excess removed.
    size_t best_i = picks->size();
    AnchorPick best{};
    double best_up = kInf, best_gain = 0;
    for (size_t i = 0; i < picks->size(); ++i) {
      AnchorPick& p = (*picks)[i];
      const double cur = cost(p);
      st.Apply(p, -1.0);
      for (size_t j = 0; j < space.options[p.group].size(); ++j) {
        const GroupOption& o = space.options[p.group][j];
        const double up = std::max(0.0, SplitCost(o, space.bytes_scale, space.bytes_weight) - cur);
        for (size_t b = 0; b < space.blocks.size(); ++b) {
          if (space.blocks[b].size != o.degree) continue;
          const AnchorPick a{p.group, static_cast<int>(j), static_cast<int>(b)};
          const double gain = excess - st.ExcessWith(a);
          if (gain <= 1e-9 * std::max(1.0, limit_s)) continue;
          // Compare up / gain (cost per second removed); free moves by gain.
          const bool better =
              best_i == picks->size() ||
              (up == 0 && best_up == 0 ? gain > best_gain : up * best_gain < best_up * gain);
          if (better) {
            best_i = i;
            best = a;
            best_up = up;
            best_gain = gain;
          }
        }
      }
      st.Apply(p, 1.0);
    }
    if (best_i == picks->size()) return false;
    st.Apply((*picks)[best_i], -1.0);
    (*picks)[best_i] = best;
    st.Apply(best, 1.0);
  }
  return st.Feasible();
}

int ImproveSplits(const SplitSearchSpace& space, double limit_s, std::vector<AnchorPick>* picks,
                  long max_evaluations) {
  LoadState st(space, limit_s);
  for (const auto& p : *picks) st.Apply(p, 1.0);
  if (!st.Feasible()) return 0;
  auto cost = [&](const AnchorPick& p) {
    return SplitCost(space.options[p.group][p.option], space.bytes_scale, space.bytes_weight);
  };
  // Alternatives of a group: (option, block) pairs, cheapest first.
  std::vector<std::vector<AnchorPick>> alts(space.options.size());
  for (size_t g = 0; g < space.options.size(); ++g) {
    for (size_t j = 0; j < space.options[g].size(); ++j)
      for (size_t b = 0; b < space.blocks.size(); ++b)
        if (space.blocks[b].size == space.options[g][j].degree)
          alts[g].push_back({static_cast<int>(g), static_cast<int>(j), static_cast<int>(b)});
    std::stable_sort(alts[g].begin(), alts[g].end(),
                     [&](const AnchorPick& a, const AnchorPick& b) { return cost(a) < cost(b); });
  }
  long evaluations = 0;
  int moves = 0;
  const size_t m = picks->size();
  for (int pass = 0; pass < 20 && evaluations < max_evaluations; ++pass) {
    bool improved = false;
    // Single moves: each sequence to its cheapest feasible alternative (ties: most room).
    for (size_t i = 0; i < m; ++i) {
      AnchorPick& p = (*picks)[i];
      const double cur = cost(p);
      if (cur == 0) continue;
      st.Apply(p, -1.0);
      AnchorPick best = p;
      double best_cost = cur, best_room = -kInf, room = 0;
      for (const AnchorPick& a : alts[p.group]) {
        const double c = cost(a);
        if (c >= cur - kEps || c > best_cost + kEps) break;
        ++evaluations;
        if (!st.FeasibleWith(a, &room)) continue;
        if (c < best_cost - kEps || room > best_room) {
          best = a;
          best_cost = c;
          best_room = room;
        }
      }
      if (best_cost < cur - kEps) {
        p = best;
        improved = true;
        ++moves;
      }
      st.Apply(p, 1.0);
    }
    if (improved) continue;
    // Pair moves: sequence i to a cheaper alternative that does not fit alone, and another
    // sequence k elsewhere to make room, when the two together cost less.
    for (size_t i = 0; i < m && evaluations < max_evaluations; ++i) {
      AnchorPick& p = (*picks)[i];
      const double cur_i = cost(p);
      if (cur_i == 0) continue;
      st.Apply(p, -1.0);
      AnchorPick best_i = p, best_k{-1, -1, -1};
      size_t best_k_index = m;
      double best_gain = 1e-9, best_room = -kInf, room = 0;
      for (const AnchorPick& a : alts[p.group]) {
        const double ca = cost(a);
        if (ca >= cur_i - kEps) break;
        st.Apply(a, 1.0);
        // Adding `a` to a feasible state can only break ranks of a's block: while it does,
        // only a sequence on a block meeting it (aligned blocks meet iff one holds the
        // other) can clear them. Skipping the others changes nothing but the time.
        const RankBlock& block_a = space.blocks[a.block];
        const bool a_violates = st.violations() > 0;
        for (size_t k = 0; k < m && evaluations < max_evaluations; ++k) {
          if (k == i) continue;
          const AnchorPick q = (*picks)[k];
          if (a_violates) {
            const RankBlock& block_q = space.blocks[q.block];
            if (block_q.first >= block_a.first + block_a.size ||
                block_a.first >= block_q.first + block_q.size)
              continue;
          }
          st.Apply(q, -1.0);
          // Removing q must clear every per-rank violation (adding only adds load).
          if (st.violations() == 0) {
            const double budget = cur_i + cost(q) - ca;  // alternative of q must cost less
            for (const AnchorPick& b : alts[q.group]) {
              const double cb = cost(b);
              if (budget - cb <= best_gain - kEps) break;
              ++evaluations;
              if (!st.FeasibleWith(b, &room)) continue;
              const double gain = budget - cb;
              if (gain > best_gain + kEps || (gain >= best_gain - kEps && room > best_room)) {
                best_i = a;
                best_k = b;
                best_k_index = k;
                best_gain = gain;
                best_room = room;
              }
            }
          }
          st.Apply(q, 1.0);
        }
        st.Apply(a, -1.0);
      }
      if (best_k_index < m) {
        st.Apply((*picks)[best_k_index], -1.0);
        (*picks)[best_k_index] = best_k;
        st.Apply(best_k, 1.0);
        p = best_i;
        improved = true;
        ++moves;
      }
      st.Apply(p, 1.0);
    }
    if (!improved) break;
  }
  return moves;
}

}  // namespace tessera::zellige
