#include "zellige/engine/plan_measurement.h"

#include <algorithm>
#include <span>
#include <string>

#include "core/alloc_stats.h"
#include "core/stats.h"
#include "zellige/engine/attention_engine.h"
#include "zellige/engine/dit_training.h"
#include "zellige/engine/engine_attention_backend.h"

namespace tessera::zellige::engine {

core::StatusOr<PlanMeasurement> MeasurePlan(const zellige::Plan& plan, const workload::Batch& batch,
                                            const models::SmallDitConfig& config,
                                            comm::Communicator& world,
                                            const MeasureOptions& options) {
  if (options.steps < 1 || options.warmup_steps < 0) {
    return core::InvalidArgument("MeasurePlan: steps / warmup steps: got " +
                                 std::to_string(options.steps) + " / " +
                                 std::to_string(options.warmup_steps) + ", must be >= 1 / >= 0");
  }
  const int n = world.size(), me = world.rank();
  ASSIGN_OR_RETURN(std::unique_ptr<AttentionEngine> engine,
                   AttentionEngine::Create(plan, batch, static_cast<int>(config.num_heads),
                                           static_cast<int>(config.head_dim()), &world));
  ASSIGN_OR_RETURN(models::SmallDit model, models::SmallDit::Create(config));
  ASSIGN_OR_RETURN(models::AdamW opt, models::AdamW::Create(model.NumParameters(), options.adamw));
  EngineAttentionBackend backend(engine.get(), static_cast<int>(config.num_layers));
  models::SmallDitActivations acts;
  const int64_t base = core::AllocatedBytes();
  int64_t peak = 0;
  RankMeasurement mine;
  mine.local_tokens = engine->local_tokens();
  for (int step = 0; step < options.warmup_steps + options.steps; ++step) {
    RETURN_IF_ERROR(world.Barrier());
    core::ResetPeakAllocatedBytes();
    StepPhases ph;
    ASSIGN_OR_RETURN(double loss, DistributedTrainStep(model, opt, backend, world, batch,
                                                       options.seed, step, &acts, &ph));
    (void)loss;
    if (step < options.warmup_steps) continue;
    peak = std::max(peak, core::PeakAllocatedBytes());
    mine.forward_s.push_back(ph.forward_s);
    mine.backward_s.push_back(ph.backward_s);
    mine.tail_s.push_back(ph.tail_s);
    mine.step_s.push_back(ph.forward_s + ph.backward_s + ph.tail_s);
  }
  // Exchange: one-hot sums of doubles (bytes are integers below 2^53: exact).
  const int k = options.steps;
  const int width = 4 * k + 3;
  std::vector<double> all(static_cast<size_t>(width) * n, 0.0);
  double* row = &all[static_cast<size_t>(width) * me];
  for (int s = 0; s < k; ++s) {
    row[s] = mine.forward_s[s];
    row[k + s] = mine.backward_s[s];
    row[2 * k + s] = mine.tail_s[s];
    row[3 * k + s] = mine.step_s[s];
  }
  row[4 * k] = static_cast<double>(base);
  row[4 * k + 1] = static_cast<double>(peak);
  row[4 * k + 2] = static_cast<double>(mine.local_tokens);
  RETURN_IF_ERROR(world.AllReduceSum(std::span<double>(all)));
  PlanMeasurement out;
  out.memory_measured = core::AllocStatsEnabled();
  for (int r = 0; r < n; ++r) {
    const double* x = &all[static_cast<size_t>(width) * r];
    RankMeasurement m;
    m.forward_s.assign(x, x + k);
    m.backward_s.assign(x + k, x + 2 * k);
    m.tail_s.assign(x + 2 * k, x + 3 * k);
    m.step_s.assign(x + 3 * k, x + 4 * k);
    m.base_bytes = static_cast<int64_t>(x[4 * k]);
    m.peak_bytes = static_cast<int64_t>(x[4 * k + 1]);
    m.local_tokens = static_cast<int64_t>(x[4 * k + 2]);
    out.ranks.push_back(std::move(m));
  }
  return out;
}

core::StatusOr<std::vector<PlanMeasurement>> MeasurePlansInterleaved(
    const std::vector<PlanCase>& cases, const models::SmallDitConfig& config,
    comm::Communicator& world, const MeasureOptions& options,
    const std::function<void(int done, int total)>& progress) {
  if (options.steps < 1) {
    return core::InvalidArgument("MeasurePlansInterleaved: steps: got " +
                                 std::to_string(options.steps) + ", must be >= 1");
  }
  std::vector<PlanMeasurement> out(cases.size());
  MeasureOptions one = options;
  one.steps = 1;
  const int total = options.steps * static_cast<int>(cases.size());
  int done = 0;
  for (int round = 0; round < options.steps; ++round) {
    for (size_t i = 0; i < cases.size(); ++i) {
      ASSIGN_OR_RETURN(PlanMeasurement m,
                       MeasurePlan(*cases[i].plan, *cases[i].batch, config, world, one));
      PlanMeasurement& acc = out[i];
      if (round == 0) {
        acc = std::move(m);
      } else {
        for (size_t r = 0; r < acc.ranks.size(); ++r) {
          RankMeasurement& a = acc.ranks[r];
          const RankMeasurement& b = m.ranks[r];
          a.forward_s.insert(a.forward_s.end(), b.forward_s.begin(), b.forward_s.end());
          a.backward_s.insert(a.backward_s.end(), b.backward_s.begin(), b.backward_s.end());
          a.tail_s.insert(a.tail_s.end(), b.tail_s.begin(), b.tail_s.end());
          a.step_s.insert(a.step_s.end(), b.step_s.begin(), b.step_s.end());
          a.peak_bytes = std::max(a.peak_bytes, b.peak_bytes);
        }
      }
      if (progress) progress(++done, total);
    }
  }
  return out;
}

}  // namespace tessera::zellige::engine
