#include "zellige/bench_planners.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "workload/batch.h"
#include "workload/batch_source.h"
#include "zellige/evaluate.h"

namespace tessera::zellige {

using core::Json;
using core::Status;
using core::StatusOr;

void SampleStats::Add(double v) {
  sum += v;
  max = std::max(max, v);
  ++n;
}

const BenchPlannerResult* BenchBatch::Find(const std::string& name) const {
  auto it = planners.find(name);
  return it != planners.end() && it->second.ok ? &it->second : nullptr;
}

SampleStats BenchMixSummary::Get(const std::string& key) const {
  auto it = stats.find(key);
  return it == stats.end() ? SampleStats{} : it->second;
}

Status ValidateBenchOptions(const BenchOptions& o) {
  if (o.batches < 1 || o.batches > 10000) {
    return core::InvalidArgument("batches: got " + std::to_string(o.batches) +
                                 ", must be in [1, 10000]");
  }
  if (!(o.joint_time_limit_s > 0)) {
    return core::InvalidArgument("joint_time_limit_s: got " + std::to_string(o.joint_time_limit_s) +
                                 ", must be > 0");
  }
  // joint_time_limit_s sets it: a planner option would be silently overridden.
  if (o.options.contains("joint.time_limit_s")) {
    return core::InvalidArgument("joint.time_limit_s: got '" + o.options.at("joint.time_limit_s") +
                                 "', must not be a planner option here; set joint_time_limit_s");
  }
  if (o.mixes.empty()) {
    return core::InvalidArgument("mixes: empty, must name at least one mixture (e.g. v50)");
  }
  for (const auto& m : o.mixes) RETURN_IF_ERROR(workload::ParseMixture(m).status());
  return ValidatePlannerOptions(o.options);
}

namespace {

// One batch's statistics into the mixture's summary (and the excess into the batch).
void Summarise(BenchBatch* b, BenchMixSummary* mix) {
  auto& st = mix->stats;
  const BenchPlannerResult* z = b->Find("zellige");
  const BenchPlannerResult* j = b->Find("joint");
  const BenchPlannerResult* usp = b->Find("usp");
  const BenchPlannerResult* knap = b->Find("knapformer");
  if (z != nullptr) {
    st["zellige_ms"].Add(z->solve_ms);
    st["zellige_splits"].Add(z->split_sequences);
    st["zellige_max_over_mean"].Add(z->max_over_mean);
    if (usp != nullptr) {
      st["vs_usp"].Add(usp->makespan_s / z->makespan_s);
      st["comm_vs_usp"].Add(z->attn_comm_bytes / usp->attn_comm_bytes);
    }
    if (knap != nullptr) st["vs_knapformer"].Add(knap->makespan_s / z->makespan_s);
    double best_baseline = 1e300;  // never slower than any feasible baseline?
    for (const auto& [name, r] : b->planners) {
      if (!r.ok || name == "zellige" || name == "joint" || !r.feasible) continue;
      best_baseline = std::min(best_baseline, r.makespan_s);
    }
    st["slower_than_a_baseline"].Add(z->makespan_s > best_baseline * (1 + 1e-9) ? 1 : 0);
  }
  if (z != nullptr && j != nullptr) {
    b->has_excess = true;
    b->zellige_excess_pct = 100 * (z->makespan_s - j->makespan_s) / j->makespan_s;
    st["excess_pct"].Add(b->zellige_excess_pct);
    st["joint_gap_pct"].Add(100 * j->gap);
    st["joint_ms"].Add(j->solve_ms);
  }
}

BenchPlannerResult ResultOf(const StatusOr<PlannerRun>& run) {
  BenchPlannerResult r;
  if (!run.ok()) {
    r.error = run.status().message();
    return r;
  }
  r.ok = true;
  r.makespan_s = run->sim.makespan_s;
  r.solve_ms = run->solve_ms;
  r.feasible = run->sim.feasible;
  r.gap = run->plan.solver_gap;
  r.split_sequences = run->sim.split_sequences;
  r.attn_comm_bytes = run->sim.attn_comm_bytes;
  r.max_over_mean = run->sim.max_over_mean;
  r.stats = run->plan.stats;
  return r;
}

void Merge(const SampleStats& s, SampleStats* into) {
  into->sum += s.sum;
  into->n += s.n;
  into->max = std::max(into->max, s.max);
}

}  // namespace

StatusOr<BenchReport> BenchPlanners(const CostModel& cost, const BenchOptions& o,
                                    const std::function<void(long, long)>& progress,
                                    const std::function<void(int, int)>& plan_progress,
                                    const SolverProgressFn& solver_progress) {
  RETURN_IF_ERROR(ValidateBenchOptions(o));
  PlannerOptions options = o.options;
  char limit[32];
  std::snprintf(limit, sizeof(limit), "%.17g", o.joint_time_limit_s);
  options["joint.time_limit_s"] = limit;
  std::vector<int> mixes;
  for (const auto& m : o.mixes) {
    ASSIGN_OR_RETURN(int pct, workload::ParseMixture(m));
    mixes.push_back(pct);
  }
  std::vector<const PlannerEntry*> entries;
  for (const auto& e : PlannerRegistry()) {
    if (std::string(e.name) == "joint-binary") continue;
    if (o.skip_joint && std::string(e.name) == "joint") continue;
    entries.push_back(&e);
  }
  BenchReport report;
  const long total = static_cast<long>(mixes.size()) * o.batches;
  long done = 0;
  for (size_t mi = 0; mi < mixes.size(); ++mi) {
    BenchMixSummary mix;
    mix.mix = o.mixes[mi];
    for (int b = 0; b < o.batches; ++b) {
      BenchBatch bb;
      bb.mix = o.mixes[mi];
      bb.seed = o.seed + b;
      ASSIGN_OR_RETURN(workload::Batch batch,
                       workload::GenerateBatch({mixes[mi], o.load_tokens_per_rank, o.video_seconds,
                                                cost.cluster().num_ranks(), bb.seed}));
      RETURN_IF_ERROR(CheckBatchFits(batch, cost));
      for (const PlannerEntry* e : entries) {
        bb.planners[e->name] =
            ResultOf(RunPlanner(*e, batch, cost, options, plan_progress, solver_progress));
      }
      Summarise(&bb, &mix);
      if (const BenchPlannerResult* z = bb.Find("zellige"))
        report.zellige_stages.AddStages(z->stats);
      report.batches.push_back(std::move(bb));
      if (progress) progress(++done, total);
    }
    Merge(mix.Get("zellige_ms"), &report.zellige_ms);
    Merge(mix.Get("excess_pct"), &report.excess_pct);
    report.mixes.push_back(std::move(mix));
  }
  return report;
}

Json ToJson(const BenchReport& report) {
  Json batches = Json::array();
  for (const BenchBatch& b : report.batches) {
    Json planners = Json::object();
    for (const auto& [name, r] : b.planners) {
      if (!r.ok) {
        planners[name] = {{"error", r.error}, {"feasible", false}};
        continue;
      }
      planners[name] = {{"makespan_s", r.makespan_s},
                        {"solve_ms", r.solve_ms},
                        {"feasible", r.feasible},
                        {"gap", r.gap},
                        {"split_sequences", r.split_sequences},
                        {"attn_comm_bytes", r.attn_comm_bytes},
                        {"max_over_mean", r.max_over_mean}};
      if (name == "zellige") {
        planners[name]["stages_ms"] = {{"catalog", r.stats.catalog_ms},
                                       {"model", r.stats.model_ms},
                                       {"cbc", r.stats.cbc_ms},
                                       {"split_search", r.stats.split_search_ms},
                                       {"stage2", r.stats.stage2_ms}};
        planners[name]["lower_bound_s"] = r.stats.lower_bound_s;
        planners[name]["max_rank_load_s"] = r.stats.max_rank_load_s;
      }
    }
    Json bj = {{"mix", b.mix}, {"seed", b.seed}, {"planners", planners}};
    if (b.has_excess) bj["zellige_excess_pct"] = b.zellige_excess_pct;
    batches.push_back(bj);
  }
  return batches;
}

}  // namespace tessera::zellige
