// RecoveryReport: what ElasWave would do if some ranks died, without running anything -- the
// fault-free plan, the plan after the deaths (Replan), each live stage's slots and predicted
// cost per micro-batch, the micro-batches per pipeline, the state transfers, the DVFS speeds
// (dvfs.h) and the predicted step time, power and energy with and without them. Every figure is
// modeled from the slot costs (GptSlotCosts: FLOPs at a nominal rate, speed 1, no p2p cost) and
// the power model; the `elaswave plan` command renders it.
//
// Figures:
//  - a stage's cost per micro-batch c = sum of its slots' compute_s; under 1F1B its part of the
//    step is W = (m_p + S_p - 1) c at f = 1 (m_p: its pipeline's micro-batches, S_p: stages),
//    busy for the share a = m_p / (m_p + S_p - 1) of it; pipelines that got no micro-batch idle
//    and are left out of the DVFS choice and the power (like spares);
//  - the 1F1B step of pipeline p with stage speeds f: (m_p + S_p - 1) max_j c_j / f_j; the
//    predicted step is the slowest pipeline's (f = 1: the plan's makespan);
//  - DVFS: ChooseFrequencies over the live stages (work W, busy share a, devices = tp) with the
//    cap = the fault-free plan's NominalPowerW. With f_j = W_j / tau every pipeline's 1F1B step
//    is tau, so the DVFS period is the predicted step with DVFS; power x period is the energy
//    per step, before (f = 1, period max W) and after.
//  A DVFS choice that is infeasible is no error: the report keeps the reason and the f = 1
//  figures.
//
// Errors: InvalidArgument "dead: ..." for a rank named twice or outside [0, dp pp tp), and the
// range's own (f_min / f_max, dvfs.h); FailedPrecondition "unrecoverable: ..." from Replan when
// no pipeline keeps a live group or a (slot, tp rank) has no live holder; InitialPlan's errors.
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "elaswave/dvfs.h"
#include "elaswave/elastic_plan.h"
#include "elaswave/job_shape.h"
#include "elaswave/partition.h"

namespace tessera::elaswave {

struct RecoveryReportOptions {
  DvfsRange range;
  PowerModel power;
};

struct ReportStage {
  int pipeline = 0;  // index into the plan's pipelines
  int stage = 0;     // position in its pipeline
  std::vector<int> ranks;
  int slot_begin = 0, slot_end = 0;
  double micro_batch_s = 0;  // c: compute per micro-batch at f = 1
  double work_s = 0;         // W = (m_p + S_p - 1) c
  double busy_share = 0;     // m_p / (m_p + S_p - 1)
  double frequency = 1;      // the DVFS choice; 1 when DVFS is infeasible or the pipeline idles
};

struct RecoveryReport {
  JobShape shape;
  std::vector<int> dead;  // as given
  ElasticPlan initial;    // fault-free
  ElasticPlan plan;       // after the deaths
  std::vector<ReportStage> stages;
  int64_t moved_bytes = 0;  // sum of the plan's transfers
  double fault_free_step_s = 0;
  double step_s = 0;               // 1F1B after the change, f = 1
  double step_dvfs_s = -1;         // 1F1B with the DVFS speeds; -1 when DVFS is infeasible
  double power_cap_w = 0;          // the fault-free job's power at f = 1
  double fault_free_period_s = 0;  // its period at f = 1: max_s W_s (= fault_free_step_s)
  double fault_free_energy_j = 0;  // per step: power_cap_w x fault_free_period_s
  double power_f1_w = 0;           // after the change, f = 1 (NominalPowerW of the live stages)
  double period_f1_s = 0;          // after the change, f = 1: max_s W_s
  double energy_f1_j = 0;          // per step: power_f1_w x period_f1_s
  bool dvfs_feasible = false;
  std::string dvfs_reason;  // why not, when infeasible
  DvfsChoice dvfs;          // when feasible
  DvfsRange range;
  PowerModel power;

  // {"kind": "modeled", shape, dead, the plans, stages, transfers, steps, dvfs}.
  core::Json ToJson() const;
};

core::StatusOr<RecoveryReport> BuildRecoveryReport(const JobShape& shape,
                                                   const std::vector<SlotCost>& costs,
                                                   const std::vector<int>& dead,
                                                   const RecoveryReportOptions& options = {});

}  // namespace tessera::elaswave
