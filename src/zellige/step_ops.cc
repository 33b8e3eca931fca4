#include "zellige/step_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <utility>

namespace tessera::zellige::internal {}  // namespace tessera::zellige::internal

namespace tessera::zellige {

core::Status CheckSimulatorLimit(const workload::Batch& batch, int layers) {
  const int64_t sequences = static_cast<int64_t>(batch.sequences.size());
  const int64_t per_sequence = 2 * int64_t{std::max(layers, 1)};
  if (sequences * per_sequence <= internal::kMaxStepOps) return core::Status::Ok();
  return core::InvalidArgument(
      "batch: " + std::to_string(sequences) + " sequences x 2 x " + std::to_string(layers) +
      " layers = " + std::to_string(sequences * per_sequence) +
      " simulated ops per step, above the simulator's limit of " +
      std::to_string(internal::kMaxStepOps) + " (2^24); at most " +
      std::to_string(internal::kMaxStepOps / per_sequence) + " sequences with a " +
      std::to_string(layers) + "-layer model: use a smaller batch (a lower load or fewer ranks)");
}

}  // namespace tessera::zellige

namespace tessera::zellige::internal {

core::StatusOr<StepOps> PrepareStep(const Plan& plan, const workload::Batch& batch,
                                    const CostModel& cost, SimResult* r) {
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
  // 2 x layers x placements ops, each with a duration, a start and an end: bounded so that a
  // huge plan is an error, not an allocation failure (int64: layers and placements are ints).
  const int64_t op_count = 2 * int64_t{cost.model().layers} * static_cast<int64_t>(np);
  if (op_count > kMaxStepOps) {
    return core::InvalidArgument("plan: 2 x " + std::to_string(cost.model().layers) + " layers x " +
                                 std::to_string(np) + " placements = " + std::to_string(op_count) +
                                 " ops, must be <= " + std::to_string(kMaxStepOps) +
                                 " (the simulator's limit; fewer sequences or layers)");
  }
  std::vector<SeqCost> costs(np);
  for (size_t p = 0; p < np; ++p) {
    const Placement& pl = plan.placements[p];
    const int64_t tokens = batch.sequences[pl.seq].tokens;
    costs[p] = cost.Cost(tokens, pl.config, pl.ranks);
    const SeqCost& c = costs[p];
    // A time or size the cost model cannot give (inputs at the edge of their ranges) makes the
    // whole step meaningless: an error, never a "feasible" makespan of inf or NaN.
    if (!std::isfinite(c.fwd_s) || !std::isfinite(c.bwd_s) || !std::isfinite(c.mem_bytes) ||
        !std::isfinite(c.comm_bytes) || c.fwd_s < 0 || c.bwd_s < 0) {
      char buf[256];
      std::snprintf(buf, sizeof(buf),
                    "placements[%zu]: the cost model prices sequence %d (%lld tokens, config %s) "
                    "at fwd %g s, bwd %g s, %g bytes; must be finite and >= 0 (check the "
                    "cluster's, model's or profile's numbers)",
                    p, pl.seq, static_cast<long long>(tokens), pl.config.ToString().c_str(),
                    c.fwd_s, c.bwd_s, c.mem_bytes);
      return core::InvalidArgument(buf);
    }
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

  r->busy_s.assign(n, 0);
  r->finish_s.assign(n, 0);
  r->mem_bytes.assign(n, cost.BaseMemoryBytes());
  for (size_t p = 0; p < np; ++p) {
    for (int rank : plan.placements[p].ranks) r->mem_bytes[rank] += costs[p].mem_bytes;
    r->attn_comm_bytes += costs[p].comm_bytes * plan.placements[p].ranks.size();
  }
  r->split_sequences = SplitCount(plan);

  StepOps ops;
  ops.order = IssueOrder(plan);
  ops.layers = cost.model().layers;
  ops.per_phase = static_cast<int>(ops.order.size());
  ops.num_ops = static_cast<int>(op_count);
  ops.dur_s.resize(ops.num_ops);
  std::vector<double> time_factor(np), comm_share(np);
  for (size_t p = 0; p < np; ++p) {
    time_factor[p] = cost.RankTimeFactor(plan.placements[p].ranks);
    // The exposed-communication share of the placement's time (before segment sharing).
    const double whole = costs[p].compute_s + costs[p].comm_s;
    comm_share[p] = whole > 0 ? std::clamp(costs[p].comm_s / whole, 0.0, 1.0) : 0.0;
  }
  r->comm_s.assign(n, 0);
  for (int g = 0; g < ops.num_ops; ++g) {
    const int p = ops.order[g % ops.per_phase];
    const bool fwd = g / ops.per_phase < ops.layers;
    ops.dur_s[g] = (fwd ? costs[p].fwd_s : costs[p].bwd_s) / ops.layers * time_factor[p];
    for (int rank : plan.placements[p].ranks) {
      r->busy_s[rank] += ops.dur_s[g];
      r->comm_s[rank] += ops.dur_s[g] * comm_share[p];
    }
  }
  return ops;
}

namespace {

// One track per rank; split ops one span per rank, whole sequences of a rank in one layer
// merged into one span (the engine runs them as one call).
void WriteTrace(const Plan& plan, const workload::Batch& batch, const StepOps& ops,
                const std::vector<double>& start, const std::vector<double>& end,
                core::TraceWriter* trace) {
  const int n = plan.num_ranks, layers = ops.layers, per_phase = ops.per_phase;
  for (int i = 0; i < n; ++i) trace->NameTrack(i, "rank " + std::to_string(i));
  std::vector<double> whole_start(n), whole_dur(n);
  std::vector<int> whole_count(n);
  for (int phase = 0; phase < 2 * layers; ++phase) {
    const bool fwd = phase < layers;
    const int layer = fwd ? phase : 2 * layers - 1 - phase;
    std::fill(whole_count.begin(), whole_count.end(), 0);
    std::fill(whole_dur.begin(), whole_dur.end(), 0.0);
    for (int g = phase * per_phase; g < (phase + 1) * per_phase; ++g) {
      const Placement& pl = ops.place(plan, g);
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
                  std::to_string(whole_count[rank]) + " whole seqs" + (fwd ? " fwd L" : " bwd L") +
                      std::to_string(layer),
                  "whole", whole_start[rank], whole_dur[rank], {{"count", whole_count[rank]}});
    }
  }
}

}  // namespace

void FinishStep(const Plan& plan, const workload::Batch& batch, const CostModel& cost,
                const StepOps& ops, const std::vector<double>& start_s,
                const std::vector<double>& end_s, core::TraceWriter* trace, SimResult* r) {
  if (trace) WriteTrace(plan, batch, ops, start_s, end_s, trace);
  const int n = plan.num_ranks;
  double sum = 0, mx = 0;
  for (int i = 0; i < n; ++i) {
    r->makespan_s = std::max(r->makespan_s, r->finish_s[i]);
    sum += r->busy_s[i];
    mx = std::max(mx, r->busy_s[i]);
  }
  r->makespan_s += cost.StepOverheadS();
  r->max_over_mean = sum > 0 ? mx / (sum / n) : 1.0;
  const double usable = cost.cluster().usable_memory_bytes();
  int worst = 0;
  for (int i = 0; i < n; ++i) {
    if (r->mem_bytes[i] > r->mem_bytes[worst]) worst = i;
  }
  r->peak_mem_bytes = r->mem_bytes[worst];
  if (!cost.options().ideal && r->peak_mem_bytes > usable) {
    constexpr double kGiB = 1024.0 * 1024 * 1024;
    char buf[160];
    std::snprintf(buf, sizeof(buf),
                  "OOM on rank %d: needs %.1f GiB, %.1f GiB over its usable %.1f GiB", worst,
                  r->peak_mem_bytes / kGiB, (r->peak_mem_bytes - usable) / kGiB, usable / kGiB);
    r->feasible = false;
    r->infeasible_reason = buf;
  }
}

core::Status CheckFinite(const SimResult& r) {
  auto bad = [](const std::string& what, double v) {
    return core::InvalidArgument(what + ": got " + std::to_string(v) +
                                 ", must be finite (check the cluster's, model's or profile's "
                                 "numbers)");
  };
  if (!std::isfinite(r.makespan_s)) return bad("makespan_s", r.makespan_s);
  if (!std::isfinite(r.peak_mem_bytes)) return bad("peak_mem_bytes", r.peak_mem_bytes);
  for (size_t i = 0; i < r.finish_s.size(); ++i) {
    if (!std::isfinite(r.finish_s[i]))
      return bad("rank " + std::to_string(i) + " finish_s", r.finish_s[i]);
    if (!std::isfinite(r.busy_s[i]))
      return bad("rank " + std::to_string(i) + " busy_s", r.busy_s[i]);
  }
  return core::Status::Ok();
}

}  // namespace tessera::zellige::internal
