#include "zellige/engine/comparison.h"

#include <utility>

#include "comm/broadcast_result.h"
#include "workload/batch_source.h"
#include "zellige/engine/plan_measurement.h"
#include "zellige/evaluate.h"
#include "zellige/simulator.h"

namespace tessera::zellige::engine {

using core::Json;
using core::Status;
using core::StatusOr;

namespace {

// Rank 0 plans; every rank gets the plan (as JSON) or the planner's error.
StatusOr<Plan> PlanOnRoot(comm::Communicator& world, const PlannerEntry& entry,
                          const workload::Batch& batch, const CostModel& cost) {
  StatusOr<Json> on_root = comm::NotOnRoot();
  if (world.rank() == 0) {
    StatusOr<PlannerRun> run = RunPlanner(entry, batch, cost, {});
    on_root = run.ok() ? StatusOr<Json>(ToJson(run->plan, batch)) : StatusOr<Json>(run.status());
  }
  ASSIGN_OR_RETURN(Json j, comm::BroadcastResult(world, 0, on_root));
  return PlanFromJson(j, "plan");
}

// One mix: plan with every planner, measure the plans interleaved.
StatusOr<CompareMix> CompareOneMix(comm::Communicator& world, const CompareOptions& o,
                                   const std::vector<const PlannerEntry*>& entries,
                                   const std::string& mix, const CostModel& cost,
                                   const std::function<void(int, int)>& progress) {
  ASSIGN_OR_RETURN(
      workload::Batch batch,
      workload::LoadBatch({mix, o.load, o.video_seconds, o.seed, o.token_scale}, world.size()));
  RETURN_IF_ERROR(CheckBatchFits(batch, cost));
  CompareMix out;
  out.mix = mix;
  out.sequences = static_cast<int64_t>(batch.sequences.size());
  out.tokens = batch.total_tokens();
  std::vector<Plan> plans;
  std::vector<int> row_of_plan;
  for (const PlannerEntry* e : entries) {
    CompareRow row;
    row.planner = e->name;
    StatusOr<Plan> plan = PlanOnRoot(world, *e, batch, cost);
    if (!plan.ok()) {
      row.error = plan.status().message();
    } else {
      ASSIGN_OR_RETURN(SimResult sim, Simulate(*plan, batch, cost));
      row.planned = true;
      row.splits = SplitCount(*plan);
      row.predicted_s = sim.makespan_s;
      row_of_plan.push_back(static_cast<int>(out.rows.size()));
      plans.push_back(std::move(*plan));
    }
    out.rows.push_back(std::move(row));
  }
  std::vector<PlanCase> cases;
  for (const Plan& p : plans) cases.push_back({&p, &batch});
  MeasureOptions mo;
  mo.warmup_steps = o.warmup;
  mo.steps = o.repeats;
  mo.seed = o.seed;
  ASSIGN_OR_RETURN(std::vector<PlanMeasurement> ms,
                   MeasurePlansInterleaved(cases, o.model, world, mo, progress));
  for (size_t i = 0; i < ms.size(); ++i) {
    CompareRow& row = out.rows[row_of_plan[i]];
    row.measured_s = ms[i].MedianMakespanS();
    row.measured_peak_bytes = static_cast<double>(ms[i].MaxPeakBytes());
  }
  FillRatiosToZellige(&out.rows);
  return out;
}

}  // namespace

void FillRatiosToZellige(std::vector<CompareRow>* rows) {
  const CompareRow* z = nullptr;
  for (const CompareRow& r : *rows) {
    if (r.planner == "zellige" && r.planned) z = &r;
  }
  for (CompareRow& r : *rows) {
    r.has_ratios = z != nullptr && r.planned;
    if (!r.has_ratios) continue;
    r.measured_ratio_to_zellige = r.measured_s / z->measured_s;
    r.predicted_ratio_to_zellige = r.predicted_s / z->predicted_s;
  }
}

StatusOr<CompareReport> RunComparison(comm::Communicator& world, const CompareOptions& options,
                                      const CostModel& cost, const ProgressFn& progress) {
  RETURN_IF_ERROR(workload::ValidateTokenScale(options.token_scale));
  std::vector<const PlannerEntry*> entries;
  for (const std::string& p : options.planners) {
    ASSIGN_OR_RETURN(const PlannerEntry* e, FindPlanner(p));
    entries.push_back(e);
  }
  CompareReport report;
  report.profile_path = options.profile_path;
  report.ranks = world.size();
  report.load = options.load;
  report.token_scale = options.token_scale;
  report.video_seconds = options.video_seconds;
  report.repeats = options.repeats;
  const int total = static_cast<int>(options.mixes.size() * entries.size());
  for (size_t m = 0; m < options.mixes.size(); ++m) {
    const int before = static_cast<int>(m * entries.size());
    auto mix_progress = [&](int d, int t) {
      if (progress) progress(before + static_cast<int>(entries.size()) * d / t, total);
    };
    ASSIGN_OR_RETURN(CompareMix mix,
                     CompareOneMix(world, options, entries, options.mixes[m], cost, mix_progress));
    report.mixes.push_back(std::move(mix));
  }
  return report;
}

Json ToJson(const CompareReport& r) {
  Json mixes = Json::array();
  for (const CompareMix& m : r.mixes) {
    Json rows = Json::array();
    for (const CompareRow& row : m.rows) {
      Json jr = {{"planner", row.planner}, {"planned", row.planned}};
      if (!row.planned) {
        jr["error"] = row.error;
      } else {
        jr.update({{"splits", row.splits},
                   {"predicted_step_s", row.predicted_s},
                   {"measured_step_s", row.measured_s},
                   {"measured_peak_bytes", row.measured_peak_bytes}});
        if (row.has_ratios) {
          jr["measured_ratio_to_zellige"] = row.measured_ratio_to_zellige;
          jr["predicted_ratio_to_zellige"] = row.predicted_ratio_to_zellige;
        }
      }
      rows.push_back(jr);
    }
    mixes.push_back(
        {{"mix", m.mix}, {"sequences", m.sequences}, {"tokens", m.tokens}, {"planners", rows}});
  }
  return {{"label", "measured"},
          {"profile", r.profile_path},
          {"ranks", r.ranks},
          {"load", r.load},
          {"token_scale", r.token_scale},
          {"video_seconds", r.video_seconds},
          {"repeats", r.repeats},
          {"mixes", mixes}};
}

}  // namespace tessera::zellige::engine
