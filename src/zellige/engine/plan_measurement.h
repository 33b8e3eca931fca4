// MeasurePlan: runs real SmallDit training steps of one plan on the ranks of `world` and
// measures, per rank, the phase times of every step and the peak allocated heap bytes: the
// ground truth the profiler fits and `tessera zellige validate` compares predictions with.
//
// Procedure (collective over world; every rank passes the same plan, batch and options):
//  1. Create the AttentionEngine, SmallDit (config) and AdamW; base_bytes = AllocatedBytes()
//     afterwards (parameters, gradients, AdamW state, engine bookkeeping).
//  2. warmup_steps untimed steps, then `steps` timed steps; each step starts after a Barrier,
//     resets the heap peak, runs DistributedTrainStep with StepPhases, and records the
//     rank's step wall time (forward + backward + tail). peak_bytes is the largest
//     PeakAllocatedBytes() over the timed steps (absolute, includes base_bytes).
//  3. Every rank's numbers are exchanged, so every rank returns the whole measurement.
// Heap bytes come from core/alloc_stats.h and are 0 when the executable lacks the hooks
// (memory_measured == false). Errors: the engine's and model's validation (InvalidArgument)
// and communication errors pass through. One thread per rank.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "comm/communicator.h"
#include "core/status.h"
#include "models/adamw.h"
#include "models/small_dit.h"
#include "workload/batch.h"
#include "zellige/plan.h"
#include "zellige/step_measurement.h"

namespace tessera::zellige::engine {

struct MeasureOptions {
  int warmup_steps = 1;
  int steps = 5;
  uint64_t seed = 1;  // data seed (flow-matching noise and timesteps)
  models::AdamWOptions adamw;
};

// The measurement types live in the zellige layer (zellige/step_measurement.h).
using zellige::PlanMeasurement;
using zellige::RankMeasurement;

// Measures several plans interleaved: `options.steps` rounds, each running every case once
// (MeasurePlan with options.warmup_steps warm-up steps and one timed step), so a burst of
// interference on a shared machine hits single steps of many plans rather than every step of
// one plan. Result i merges case i's rounds (step vectors concatenated, peak = max, base =
// first round's). `progress(done, total)` is called after each case of each round (may be
// empty). Collective over world like MeasurePlan.
struct PlanCase {
  const zellige::Plan* plan = nullptr;
  const workload::Batch* batch = nullptr;
};
core::StatusOr<std::vector<PlanMeasurement>> MeasurePlansInterleaved(
    const std::vector<PlanCase>& cases, const models::SmallDitConfig& config,
    comm::Communicator& world, const MeasureOptions& options,
    const std::function<void(int done, int total)>& progress);

core::StatusOr<PlanMeasurement> MeasurePlan(const zellige::Plan& plan, const workload::Batch& batch,
                                            const models::SmallDitConfig& config,
                                            comm::Communicator& world,
                                            const MeasureOptions& options);

}  // namespace tessera::zellige::engine
