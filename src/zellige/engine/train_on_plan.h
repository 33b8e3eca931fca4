// TrainOnPlan: `zellige run --train` as a library service. Flow-matching training of
// models::SmallDit with AdamW on seeded synthetic latents, DistributedTrainStep per step
// (sequence parallelism through an AttentionEngine built from the plan, data parallelism
// over its placements), on every rank of `world`. The report holds what every rank needs:
// the loss curve, per-rank step times (s, measured wall time) and peak bytes (engine tracker
// peak + SmallDit activations + backward scratch + parameters, gradients and AdamW state),
// the optional check against the single-process reference (loss curve, step 0's all-reduced
// gradients, step 0's outputs on each rank's rows; norm-wise, tolerance kTrainCheckTolerance)
// and the optional loss-ratio decision: mean(last W losses) <= R * mean(first W losses),
// W = LossWindow(steps). Failed checks are not errors: the report says pass = false with the
// reasons; the Status carries only errors (bad config, engine or communicator failures).
// Collective over `world`; every rank returns the same report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/json_util.h"
#include "core/status.h"
#include "models/adamw.h"
#include "models/small_dit.h"
#include "workload/batch.h"
#include "zellige/plan.h"

namespace tessera::zellige::engine {

// Relative tolerance of every --check comparison (loss, gradients, outputs).
inline constexpr double kTrainCheckTolerance = 1e-5;

struct TrainOptions {
  models::SmallDitConfig model;  // heads = model.num_heads, head dim = hidden / heads
  models::AdamWOptions optimizer;
  uint64_t data_seed = 1;            // synthetic latents and noise
  int steps = 3;                     // >= 1
  bool check = false;                // compare with the single-process reference
  double max_loss_ratio = 0;         // > 0: decide on the loss ratio; 0: not checked
  std::string plan_source = "plan";  // prefix of the engine's plan errors
};

// Errors of one rank against the reference (norm-wise; NaN reads as +inf in maxima).
struct TrainCheckErrors {
  double loss_max_rel = 0;
  double gradient_max_abs = 0;
  double gradient_max_rel = 0;
  double output_max_abs = 0;
  double output_max_rel = 0;
};

struct TrainRankReport {
  int rank = 0;
  int64_t local_tokens = 0;
  std::vector<double> step_time_s;  // per step, measured
  int64_t engine_peak_bytes = 0;
  int64_t activation_bytes = 0;
  int64_t backward_scratch_bytes = 0;
  int64_t model_optimizer_bytes = 0;
  TrainCheckErrors check;  // zero unless options.check

  int64_t peak_bytes() const {
    return engine_peak_bytes + activation_bytes + backward_scratch_bytes + model_optimizer_bytes;
  }
  double mean_step_time_s() const;
};

struct TrainReport {
  TrainOptions options;
  int num_ranks = 0;
  int64_t parameters = 0;
  std::vector<double> loss;             // per step (identical on every rank)
  std::vector<double> max_step_time_s;  // per step, max over ranks
  std::vector<TrainRankReport> ranks;
  // Loss curve: means of the first / last `loss_window` losses and their ratio.
  int loss_window = 1;
  double first_loss_mean = 0, last_loss_mean = 0, loss_ratio = 0;
  bool loss_ratio_pass = true;  // true when not checked
  // --check (when options.check): the reference curve and the maxima over ranks.
  std::vector<double> reference_loss;
  TrainCheckErrors worst;
  std::string worst_gradient_tensor_rank0;
  bool check_pass = true;             // true when not checked
  std::vector<std::string> failures;  // one line per failed decision

  bool pass() const { return failures.empty(); }
};

// Steps averaged at each end of the loss curve: min(5, steps / 2), at least 1.
int LossWindow(int steps);

core::StatusOr<TrainReport> TrainOnPlan(comm::Communicator& world, const zellige::Plan& plan,
                                        const workload::Batch& batch, const TrainOptions& options);

// Today's `run --train --json` fields except "plan" (the caller adds the plan it ran).
core::Json ToJson(const TrainReport& report);

}  // namespace tessera::zellige::engine
