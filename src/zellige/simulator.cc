#include "zellige/simulator.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tessera::zellige {

core::StatusOr<SimResult> Simulate(const Plan& plan, const Batch& batch, const CostModel& cost,
                                   core::TraceWriter* trace) {
  const int n = cost.cluster().num_ranks();
  if (plan.num_ranks != n) {
    return core::InvalidArgument("plan.num_ranks: got " + std::to_string(plan.num_ranks) +
                                 ", must equal the cluster's " + std::to_string(n) + " ranks");
  }
  RETURN_IF_ERROR(ValidatePlan(plan, batch, cost.model().heads));
  for (size_t p = 0; p < plan.placements.size(); ++p) {
    core::Status st = cost.Supports(plan.placements[p].config);
    if (!st.ok()) return st.WithPrefix("placements[" + std::to_string(p) + "]");
  }

  const size_t np = plan.placements.size();
  std::vector<SeqCost> costs(np);
  for (size_t p = 0; p < np; ++p) {
    const Placement& pl = plan.placements[p];
    costs[p] = cost.Cost(batch.sequences[pl.seq].tokens, pl.config, pl.ranks);
  }
  // Split sequences with the same config and rank set share one engine segment: its
  // once-per-segment cost is charged to the first of them only (cost_model.h).
  std::map<std::pair<std::string, std::vector<int>>, int> segment_first;
  for (size_t p = 0; p < np; ++p) {
    const Placement& pl = plan.placements[p];
    if (pl.config.whole()) continue;
    auto key = std::make_pair(pl.config.ToString(), pl.ranks);
    if (segment_first.emplace(key, static_cast<int>(p)).second) continue;
    const auto [shared_fwd, shared_bwd] = cost.SegmentSharedS(pl.config);
    costs[p].fwd_s = std::max(0.0, costs[p].fwd_s - shared_fwd);
    costs[p].bwd_s = std::max(0.0, costs[p].bwd_s - shared_bwd);
  }

  SimResult r;
  r.busy_s.assign(n, 0);
  r.finish_s.assign(n, 0);
  r.mem_bytes.assign(n, cost.BaseMemoryBytes());
  for (size_t p = 0; p < np; ++p) {
    for (int rank : plan.placements[p].ranks) r.mem_bytes[rank] += costs[p].mem_bytes;
    r.attn_comm_bytes += costs[p].comm_bytes * plan.placements[p].ranks.size();
  }
  r.split_sequences = SplitCount(plan);

  // Op instances g = phase * |order| + i: placement order[i] in phase (forward layers, then
  // backward layers in reverse); each rank runs its ops in increasing g.
  const std::vector<int> order = IssueOrder(plan);
  const int layers = cost.model().layers;
  const int per_phase = static_cast<int>(order.size());
  const int num_ops = 2 * layers * per_phase;
  auto place_of = [&](int g) -> const Placement& { return plan.placements[order[g % per_phase]]; };
  auto fwd_of = [&](int g) { return g / per_phase < layers; };
  std::vector<double> dur(num_ops), start(num_ops, 0.0), end(num_ops, 0.0);
  std::vector<double> time_factor(np);
  for (size_t p = 0; p < np; ++p) time_factor[p] = cost.RankTimeFactor(plan.placements[p].ranks);
  for (int g = 0; g < num_ops; ++g) {
    const SeqCost& c = costs[order[g % per_phase]];
    dur[g] = (fwd_of(g) ? c.fwd_s : c.bwd_s) / layers * time_factor[order[g % per_phase]];
    for (int rank : place_of(g).ranks) r.busy_s[rank] += dur[g];
  }
  std::vector<double>& t = r.finish_s;
  if (!cost.HasContention()) {
    // Every op runs at its price: list scheduling, a split op starts when its last rank is free.
    for (int g = 0; g < num_ops; ++g) {
      double st = 0;
      for (int rank : place_of(g).ranks) st = std::max(st, t[rank]);
      start[g] = st;
      end[g] = st + dur[g];
      for (int rank : place_of(g).ranks) t[rank] = end[g];
    }
  } else {
    // Shared machine: every running op progresses at ContentionSpeed(ranks working now);
    // advance from one op completion to the next.
    std::vector<std::vector<int>> ops_of(n);
    for (int g = 0; g < num_ops; ++g)
      for (int rank : place_of(g).ranks) ops_of[rank].push_back(g);
    std::vector<size_t> pos(n, 0);
    std::vector<int> arrived(num_ops, 0);
    std::vector<double> remaining(num_ops, 0.0);
    std::vector<int> running, done;
    double now = 0;
    auto arrive = [&](int rank) {  // `rank` reaches its next op; it starts once all have
      if (pos[rank] == ops_of[rank].size()) return;
      const int g = ops_of[rank][pos[rank]];
      if (++arrived[g] < static_cast<int>(place_of(g).ranks.size())) return;
      start[g] = now;
      remaining[g] = dur[g];
      running.push_back(g);
    };
    for (int rank = 0; rank < n; ++rank) arrive(rank);
    while (!running.empty()) {
      int busy = 0;
      double step = remaining[running.front()];
      for (int g : running) {
        busy += static_cast<int>(place_of(g).ranks.size());
        step = std::min(step, remaining[g]);
      }
      now += step / cost.ContentionSpeed(busy);
      std::vector<int> still;
      done.clear();
      for (int g : running) {
        remaining[g] -= step;
        (remaining[g] <= 1e-12 * dur[g] ? done : still).push_back(g);
      }
      running = std::move(still);
      for (int g : done) {
        end[g] = now;
        for (int rank : place_of(g).ranks) {
          t[rank] = now;
          ++pos[rank];
          arrive(rank);
        }
      }
    }
    for (int rank = 0; rank < n; ++rank) {
      if (pos[rank] != ops_of[rank].size()) {
        return core::Internal("Simulate: rank " + std::to_string(rank) +
                              " stopped before its last op (collective order broken)");
      }
    }
  }

  if (trace) {
    for (int i = 0; i < n; ++i) trace->NameTrack(i, "rank " + std::to_string(i));
    std::vector<double> whole_start(n), whole_dur(n);
    std::vector<int> whole_count(n);
    for (int phase = 0; phase < 2 * layers; ++phase) {
      const bool fwd = phase < layers;
      const int layer = fwd ? phase : 2 * layers - 1 - phase;
      std::fill(whole_count.begin(), whole_count.end(), 0);
      std::fill(whole_dur.begin(), whole_dur.end(), 0.0);
      for (int g = phase * per_phase; g < (phase + 1) * per_phase; ++g) {
        const Placement& pl = place_of(g);
        if (pl.config.whole()) {
          const int rank = pl.ranks[0];
          if (whole_count[rank]++ == 0) whole_start[rank] = start[g];
          whole_dur[rank] += end[g] - start[g];
          continue;
        }
        const std::string name = "seq " + std::to_string(pl.seq) + " " + pl.config.ToString() +
                                 (fwd ? " fwd L" : " bwd L") + std::to_string(layer);
        for (int rank : pl.ranks) {
          trace->Span(rank, name, "split", start[g], end[g] - start[g],
                      {{"tokens", batch.sequences[pl.seq].tokens}, {"degree", pl.config.degree()}});
        }
      }
      for (int rank = 0; rank < n; ++rank) {
        if (whole_count[rank] == 0) continue;
        trace->Span(rank,
                    std::to_string(whole_count[rank]) + " whole seqs" +
                        (fwd ? " fwd L" : " bwd L") + std::to_string(layer),
                    "whole", whole_start[rank], whole_dur[rank], {{"count", whole_count[rank]}});
      }
    }
  }
  double sum = 0, mx = 0;
  for (int i = 0; i < n; ++i) {
    r.makespan_s = std::max(r.makespan_s, r.finish_s[i]);
    sum += r.busy_s[i];
    mx = std::max(mx, r.busy_s[i]);
  }
  r.makespan_s += cost.StepOverheadS();
  r.max_over_mean = sum > 0 ? mx / (sum / n) : 1.0;
  const double usable = cost.cluster().usable_memory_bytes();
  int worst = 0;
  for (int i = 0; i < n; ++i) {
    if (r.mem_bytes[i] > r.mem_bytes[worst]) worst = i;
  }
  r.peak_mem_bytes = r.mem_bytes[worst];
  if (!cost.options().ideal && r.peak_mem_bytes > usable) {
    constexpr double kGiB = 1024.0 * 1024 * 1024;
    char buf[160];
    std::snprintf(buf, sizeof(buf),
                  "OOM on rank %d: needs %.1f GiB, %.1f GiB over its usable %.1f GiB", worst,
                  r.peak_mem_bytes / kGiB, (r.peak_mem_bytes - usable) / kGiB, usable / kGiB);
    r.feasible = false;
    r.infeasible_reason = buf;
  }
  return r;
}

}  // namespace tessera::zellige
