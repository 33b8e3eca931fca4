#include "elaswave/recovery_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "elaswave/microbatch_counts.h"

namespace tessera::elaswave {
namespace {

double StageCost(const std::vector<SlotCost>& costs, int begin, int end) {
  double c = 0;
  for (int l = begin; l < end; ++l) c += costs[l].compute_s;
  return c;
}

// The live stages of `plan` with their cost and work (frequency 1).
std::vector<ReportStage> StagesOf(const ElasticPlan& plan, const std::vector<SlotCost>& costs) {
  std::vector<ReportStage> out;
  for (size_t p = 0; p < plan.pipelines.size(); ++p) {
    const PlanPipeline& pipe = plan.pipelines[p];
    for (size_t j = 0; j < pipe.stages.size(); ++j) {
      ReportStage s;
      s.pipeline = static_cast<int>(p);
      s.stage = static_cast<int>(j);
      s.ranks = pipe.stages[j].ranks;
      s.slot_begin = pipe.stages[j].slot_begin;
      s.slot_end = pipe.stages[j].slot_end;
      s.micro_batch_s = StageCost(costs, s.slot_begin, s.slot_end);
      // Under 1F1B the stage's part of the step is (m + S - 1) micro-batch slots, m of them busy.
      const auto m = static_cast<double>(pipe.micro_batches);
      const double slots = m + static_cast<double>(pipe.stages.size()) - 1;
      s.work_s = pipe.micro_batches > 0 ? s.micro_batch_s * slots : 0;
      s.busy_share = pipe.micro_batches > 0 ? m / slots : 0;
      out.push_back(s);
    }
  }
  return out;
}

// The DVFS inputs: the stages that compute this step (work > 0), each on tp devices.
std::vector<DvfsStage> DvfsStages(const std::vector<ReportStage>& stages, int tp) {
  std::vector<DvfsStage> out;
  for (const ReportStage& s : stages) {
    if (s.work_s > 0) {
      out.push_back({s.work_s, s.busy_share, tp,
                     fmt::format("pipeline {} stage {} (ranks {})", s.pipeline, s.stage,
                                 fmt::join(s.ranks, ","))});
    }
  }
  return out;
}

// The slowest pipeline's 1F1B step, (m_p + S_p - 1) max_j c_j / f_j, over pipelines with work.
double OneFOneBStepS(const ElasticPlan& plan, const std::vector<ReportStage>& stages) {
  std::vector<double> period(plan.pipelines.size(), 0.0);
  for (const ReportStage& s : stages) {
    period[s.pipeline] = std::max(period[s.pipeline], s.micro_batch_s / s.frequency);
  }
  double step = 0;
  for (size_t p = 0; p < plan.pipelines.size(); ++p) {
    const PlanPipeline& pipe = plan.pipelines[p];
    if (pipe.micro_batches == 0) continue;
    const PipelineTiming timing{static_cast<int>(pipe.stages.size()), period[p]};
    step = std::max(step, PipelineMakespanS(timing, pipe.micro_batches));
  }
  return step;
}

core::Status CheckDead(const JobShape& shape, const std::vector<int>& dead) {
  std::set<int> seen;
  for (int w : dead) {
    if (w < 0 || w >= shape.processes()) {
      return core::InvalidArgument(
          fmt::format("dead: rank {} is outside [0, {}) (dp {} x pp {} x tp {} processes)", w,
                      shape.processes(), shape.dp, shape.pp, shape.tp));
    }
    if (!seen.insert(w).second) {
      return core::InvalidArgument(
          fmt::format("dead: rank {} is named twice; name each dead rank once", w));
    }
  }
  return core::Status::Ok();
}

core::Json DvfsJson(const RecoveryReport& r) {
  core::Json j = {{"range", {r.range.f_min, r.range.f_max}},
                  {"idle_w_per_device", r.power.idle_w},
                  {"peak_w_per_device", r.power.peak_w},
                  {"power_cap_w", r.power_cap_w},
                  {"fault_free_period_s", r.fault_free_period_s},
                  {"fault_free_energy_per_step_j", r.fault_free_energy_j},
                  {"period_f1_s", r.period_f1_s},
                  {"power_f1_w", r.power_f1_w},
                  {"energy_per_step_f1_j", r.energy_f1_j},
                  {"feasible", r.dvfs_feasible}};
  if (r.dvfs_feasible) {
    j["period_s"] = r.dvfs.step_s;
    j["power_w"] = r.dvfs.power_w;
    j["energy_per_step_j"] = r.dvfs.energy_per_step_j;
    j["limited_by"] = r.dvfs.limited_by;
  } else {
    j["reason"] = r.dvfs_reason;
  }
  return j;
}

}  // namespace

core::Json RecoveryReport::ToJson() const {
  core::Json st = core::Json::array();
  for (const ReportStage& s : stages) {
    st.push_back({{"pipeline", s.pipeline},
                  {"replica", plan.pipelines[s.pipeline].replica},
                  {"stage", s.stage},
                  {"ranks", s.ranks},
                  {"slots", {s.slot_begin, s.slot_end}},
                  {"micro_batch_s", s.micro_batch_s},
                  {"micro_batches", plan.pipelines[s.pipeline].micro_batches},
                  {"work_s", s.work_s},
                  {"busy_share", s.busy_share},
                  {"frequency", s.frequency}});
  }
  core::Json moves = core::Json::array();
  for (const StateTransfer& t : plan.transfers) {
    moves.push_back({{"slot", t.slot},
                     {"slot_name", SlotName(t.slot, shape.num_blocks)},
                     {"tp_rank", t.tp_rank},
                     {"src", t.src},
                     {"dst", t.dst},
                     {"bytes", t.bytes}});
  }
  return {{"kind", "modeled"},
          {"shape", {{"dp", shape.dp}, {"pp", shape.pp}, {"tp", shape.tp}}},
          {"dead", dead},
          {"initial_plan", initial.ToJson()},
          {"plan", plan.ToJson()},
          {"stages", st},
          {"transfers", moves},
          {"moved_bytes", moved_bytes},
          {"step_s",
           {{"fault_free", fault_free_step_s},
            {"after", step_s},
            {"after_dvfs", step_dvfs_s >= 0 ? core::Json(step_dvfs_s) : core::Json()}}},
          {"dvfs", DvfsJson(*this)}};
}

core::StatusOr<RecoveryReport> BuildRecoveryReport(const JobShape& shape,
                                                   const std::vector<SlotCost>& costs,
                                                   const std::vector<int>& dead,
                                                   const RecoveryReportOptions& options) {
  RETURN_IF_ERROR(ValidateJobShape(shape));
  RETURN_IF_ERROR(CheckDead(shape, dead));
  RETURN_IF_ERROR(ValidateDvfsRange(options.range));
  RETURN_IF_ERROR(ValidatePowerModel(options.power));
  RecoveryReport r;
  r.shape = shape;
  r.dead = dead;
  r.range = options.range;
  r.power = options.power;
  ASSIGN_OR_RETURN(r.initial, InitialPlan(shape, costs));
  ASSIGN_OR_RETURN(r.plan,
                   Replan(shape, costs, r.initial, std::set<int>(dead.begin(), dead.end())));
  for (const StateTransfer& t : r.plan.transfers) r.moved_bytes += t.bytes;

  const std::vector<ReportStage> fault_free = StagesOf(r.initial, costs);
  r.fault_free_step_s = OneFOneBStepS(r.initial, fault_free);
  const std::vector<DvfsStage> ff_dvfs = DvfsStages(fault_free, shape.tp);
  r.power_cap_w = NominalPowerW(ff_dvfs, options.power);
  r.fault_free_period_s = LongestWorkS(ff_dvfs);
  r.fault_free_energy_j = r.power_cap_w * r.fault_free_period_s;

  r.stages = StagesOf(r.plan, costs);
  r.step_s = OneFOneBStepS(r.plan, r.stages);
  const std::vector<DvfsStage> live = DvfsStages(r.stages, shape.tp);
  r.power_f1_w = NominalPowerW(live, options.power);
  r.period_f1_s = LongestWorkS(live);
  r.energy_f1_j = r.power_f1_w * r.period_f1_s;
  DvfsOptions o;
  o.range = options.range;
  o.power = options.power;
  o.power_cap_w = r.power_cap_w;
  auto choice = ChooseFrequencies(live, o);
  if (!choice.ok()) {
    if (choice.status().code() != core::StatusCode::kInfeasible) return choice.status();
    r.dvfs_reason = choice.status().message();
    return r;
  }
  r.dvfs_feasible = true;
  r.dvfs = *choice;
  size_t k = 0;
  for (ReportStage& s : r.stages) {
    if (s.work_s > 0) s.frequency = r.dvfs.frequency[k++];
  }
  r.step_dvfs_s = OneFOneBStepS(r.plan, r.stages);
  return r;
}

}  // namespace tessera::elaswave
