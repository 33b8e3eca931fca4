// PlanForJob: the plan a `zellige run` job executes, made on one rank and shared with all.
// Either a plan file (validated, returned as read: it carries "tokens" per placement) or a
// planner run on a workload under a cost model: the measured profile when given, else the
// analytic model on a cluster preset/file, else ThisMachine(num_ranks) (modeled guesses).
// ShareJobPlan runs PlanForJob on rank 0 and broadcasts the result (value or Status) with
// comm::BroadcastResult, so every rank holds the same plan and batch, or the same error.
// Plain functions; ShareJobPlan is collective over `world`.
#pragma once

#include <string>

#include "comm/communicator.h"
#include "core/json_util.h"
#include "core/status.h"
#include "hw/cluster.h"
#include "models/dit_spec.h"
#include "workload/batch.h"
#include "workload/batch_source.h"
#include "zellige/plan.h"

namespace tessera::zellige::engine {

// "This machine": 1 node of `num_ranks` ranks with CPU-like numbers; provenance says the
// figures are modeled guesses, not measured. Only the planner's cost model uses it.
hw::Cluster ThisMachine(int num_ranks);

struct PlanJobRequest {
  std::string plan_path;           // non-empty: run this plan file, ignore the rest
  workload::BatchSource workload;  // otherwise: the batch to plan
  std::string planner = "zellige";
  std::string cluster;     // preset or file ("" = ThisMachine); exclusive with profile
  std::string profile;     // measured profile the planner prices with ("" = analytic)
  models::DitModel model;  // the analytic cost model's model (validated)
};

// The plan JSON (with "tokens" on every placement) for a job of `num_ranks` ranks, or an
// InvalidArgument / NotFound naming the option or file at fault.
core::StatusOr<core::Json> PlanForJob(const PlanJobRequest& request, int num_ranks);

struct JobPlan {
  core::Json json;  // as made by PlanForJob
  zellige::Plan plan;
  workload::Batch batch;  // rebuilt from the placements' "tokens"
};

// Parses PlanForJob's JSON; `source` names it in errors (the plan file or "plan").
core::StatusOr<JobPlan> ParseJobPlan(const core::Json& json, const std::string& source);

// Rank 0 plans, every rank gets the same JobPlan or the same error.
core::StatusOr<JobPlan> ShareJobPlan(comm::Communicator& world, const PlanJobRequest& request);

}  // namespace tessera::zellige::engine
