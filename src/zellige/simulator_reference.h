// SimulateReference: Simulate's plain oracle. Same contract and result as Simulate
// (simulator.h) and the same costing (step_ops.h), with the scheduling written out as two
// direct loops: list scheduling without contention, and processor sharing from one op
// completion to the next with contention. Simulate schedules on sim::Simulator instead;
// simulator_test.cc compares the two on seeded random plans. For tests and benchmarks.
#pragma once

#include "core/status.h"
#include "core/trace.h"
#include "workload/batch.h"
#include "zellige/cost_model.h"
#include "zellige/plan.h"
#include "zellige/simulator.h"

namespace tessera::zellige {

core::StatusOr<SimResult> SimulateReference(const Plan& plan, const workload::Batch& batch,
                                            const CostModel& cost,
                                            core::TraceWriter* trace = nullptr);

}  // namespace tessera::zellige
