#include "zellige/engine/train_on_plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <span>
#include <utility>

#include "comm/broadcast_result.h"
#include "core/stats.h"
#include "zellige/engine/attention_engine.h"
#include "zellige/engine/dit_reference_training.h"
#include "zellige/engine/dit_training.h"
#include "zellige/engine/engine_attention_backend.h"
#include "zellige/engine/run_memory.h"

namespace tessera::zellige::engine {

using core::Json;
using core::Status;
using core::StatusOr;

namespace {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// max(a, b) with NaN read as +inf.
double WorstOf(double a, double b) { return std::isnan(b) ? INFINITY : std::max(a, b); }

// Mean of the first (last) LossWindow(K) losses.
double MeanLosses(const std::vector<double>& l, bool last) {
  const size_t k = static_cast<size_t>(LossWindow(static_cast<int>(l.size())));
  double sum = 0;
  for (size_t i = 0; i < k; ++i) sum += last ? l[l.size() - 1 - i] : l[i];
  return sum / static_cast<double>(k);
}

// What one rank measured and remembered for the check.
struct LocalRun {
  std::vector<double> losses;
  std::vector<double> times;
  std::vector<float> first_grads;          // check: step 0's all-reduced gradients
  models::SmallDitActivations first_acts;  // check: step 0's forward on this rank
};

StatusOr<LocalRun> RunSteps(comm::Communicator& world, const workload::Batch& batch,
                            const TrainOptions& o, models::SmallDit& model, models::AdamW& opt,
                            AttentionEngine& engine) {
  EngineAttentionBackend backend(&engine, static_cast<int>(o.model.num_layers));
  models::SmallDitActivations acts;
  LocalRun run;
  for (int step = 0; step < o.steps; ++step) {
    RETURN_IF_ERROR(world.Barrier());
    const double t0 = NowSeconds();
    ASSIGN_OR_RETURN(double loss, DistributedTrainStep(model, opt, backend, world, batch,
                                                       o.data_seed, step, &acts));
    run.times.push_back(NowSeconds() - t0);
    run.losses.push_back(loss);
    if (o.check && step == 0) {  // outside the timed region
      run.first_grads.assign(model.Gradients().begin(), model.Gradients().end());
      run.first_acts = acts;
    }
  }
  return run;
}

// Every rank's memory and step times into report->ranks and max_step_time_s.
Status GatherRanks(comm::Communicator& world, const TrainOptions& o, const LocalRun& run,
                   const models::SmallDit& model, const models::AdamW& opt, AttentionEngine& engine,
                   TrainReport* report) {
  const int n = world.size();
  const int64_t local_tokens = engine.local_tokens();
  const int64_t segments = static_cast<int64_t>(engine.local_placements().size());
  const int64_t act_bytes =
      local_tokens > 0 ? models::SmallDit::ActivationBytes(o.model, local_tokens, segments) : 0;
  ASSIGN_OR_RETURN(auto tokens, comm::AllGatherValue<int64_t>(world, local_tokens));
  ASSIGN_OR_RETURN(auto peak, comm::AllGatherValue<int64_t>(world, engine.memory().peak_bytes()));
  ASSIGN_OR_RETURN(auto acts, comm::AllGatherValue<int64_t>(world, act_bytes));
  ASSIGN_OR_RETURN(auto scratch, comm::AllGatherValue<int64_t>(world, model.ScratchBytes()));
  ASSIGN_OR_RETURN(auto state, comm::AllGatherValue<int64_t>(
                                   world, 8 * model.NumParameters() + opt.StateBytes()));
  std::vector<double> all_times(static_cast<size_t>(o.steps) * n);
  RETURN_IF_ERROR(world.AllGather(std::span<const double>(run.times), std::span(all_times)));
  report->max_step_time_s.assign(o.steps, 0.0);
  for (int r = 0; r < n; ++r) {
    TrainRankReport rr;
    rr.rank = r;
    rr.local_tokens = tokens[r];
    rr.step_time_s.assign(all_times.begin() + r * o.steps, all_times.begin() + (r + 1) * o.steps);
    rr.engine_peak_bytes = peak[r];
    rr.activation_bytes = acts[r];
    rr.backward_scratch_bytes = scratch[r];
    rr.model_optimizer_bytes = state[r];
    for (int s = 0; s < o.steps; ++s) {
      report->max_step_time_s[s] = std::max(report->max_step_time_s[s], rr.step_time_s[s]);
    }
    report->ranks.push_back(std::move(rr));
  }
  return Status::Ok();
}

// --check: every rank runs the single-process reference (in parallel, no collective inside)
// and compares; the per-rank errors are gathered and their maxima decided on.
Status CheckAgainstReference(comm::Communicator& world, const workload::Batch& batch,
                             const TrainOptions& o, const LocalRun& run,
                             const models::SmallDit& model, const AttentionEngine& engine,
                             TrainReport* report) {
  ASSIGN_OR_RETURN(ReferenceTraining rt,
                   RunReferenceTraining(o.model, o.optimizer, batch, o.data_seed, o.steps));
  report->reference_loss = rt.losses;
  TrainCheckErrors mine;
  for (int s = 0; s < o.steps; ++s) {
    const double ref = rt.losses[s];
    mine.loss_max_rel = WorstOf(mine.loss_max_rel,
                                std::fabs(run.losses[s] - ref) / std::max(std::fabs(ref), 1e-30));
  }
  ASSIGN_OR_RETURN(FirstStepCheck fc, CompareFirstStep(rt, model.ParameterTensors(),
                                                       run.first_grads, run.first_acts, engine));
  if (world.rank() == 0) report->worst_gradient_tensor_rank0 = fc.worst_gradient_tensor;
  mine.gradient_max_abs = fc.gradient.max_abs;
  mine.gradient_max_rel = fc.gradient.max_rel;
  mine.output_max_abs = fc.output.max_abs;
  mine.output_max_rel = fc.output.max_rel;
  const double fields[] = {mine.loss_max_rel, mine.gradient_max_abs, mine.gradient_max_rel,
                           mine.output_max_abs, mine.output_max_rel};
  constexpr int kFields = 5;
  std::vector<double> all(static_cast<size_t>(kFields) * world.size());
  RETURN_IF_ERROR(world.AllGather(std::span<const double>(fields), std::span(all)));
  TrainCheckErrors& w = report->worst;
  for (int r = 0; r < world.size(); ++r) {
    const double* c = &all[static_cast<size_t>(kFields) * r];
    report->ranks[r].check = {c[0], c[1], c[2], c[3], c[4]};
    w.loss_max_rel = WorstOf(w.loss_max_rel, c[0]);
    w.gradient_max_abs = WorstOf(w.gradient_max_abs, c[1]);
    w.gradient_max_rel = WorstOf(w.gradient_max_rel, c[2]);
    w.output_max_abs = WorstOf(w.output_max_abs, c[3]);
    w.output_max_rel = WorstOf(w.output_max_rel, c[4]);
  }
  const double worst_rel = std::max({w.loss_max_rel, w.gradient_max_rel, w.output_max_rel});
  report->check_pass = worst_rel <= kTrainCheckTolerance;
  if (!report->check_pass) {
    report->failures.push_back("check failed: max rel loss diff " + std::to_string(w.loss_max_rel) +
                               ", gradient " + std::to_string(w.gradient_max_rel) + ", output " +
                               std::to_string(w.output_max_rel) + " (must all be <= 1e-5)");
  }
  return Status::Ok();
}

// Rank 0's worst gradient tensor name, in every rank's report.
Status ShareWorstTensor(comm::Communicator& world, TrainReport* report) {
  StatusOr<std::string> on_root = report->worst_gradient_tensor_rank0;
  ASSIGN_OR_RETURN(report->worst_gradient_tensor_rank0, comm::BroadcastResult(world, 0, on_root));
  return Status::Ok();
}

}  // namespace

int LossWindow(int steps) { return std::max(1, std::min(5, steps / 2)); }

double TrainRankReport::mean_step_time_s() const { return core::Mean(step_time_s); }

StatusOr<TrainReport> TrainOnPlan(comm::Communicator& world, const zellige::Plan& plan,
                                  const workload::Batch& batch, const TrainOptions& options) {
  if (options.steps < 1) {
    return core::InvalidArgument("steps: got " + std::to_string(options.steps) + ", must be >= 1");
  }
  if (options.max_loss_ratio < 0 || !std::isfinite(options.max_loss_ratio)) {
    return core::InvalidArgument("max_loss_ratio: got " + std::to_string(options.max_loss_ratio) +
                                 ", must be >= 0 (0: not checked)");
  }
  RETURN_IF_ERROR(models::ValidateSmallDitConfig(options.model));
  RETURN_IF_ERROR(
      CheckRunFitsMemory(world, TrainRunBytesPerRank(plan, batch, options.model, options.check)));
  ASSIGN_OR_RETURN(models::SmallDit model, models::SmallDit::Create(options.model));
  auto engine_or = AttentionEngine::Create(plan, batch, static_cast<int>(options.model.num_heads),
                                           static_cast<int>(options.model.head_dim()), &world);
  if (!engine_or.ok()) return engine_or.status().WithPrefix(options.plan_source);
  AttentionEngine& engine = **engine_or;
  ASSIGN_OR_RETURN(models::AdamW opt,
                   models::AdamW::Create(model.NumParameters(), options.optimizer));
  ASSIGN_OR_RETURN(LocalRun run, RunSteps(world, batch, options, model, opt, engine));

  TrainReport report;
  report.options = options;
  report.num_ranks = world.size();
  report.parameters = model.NumParameters();
  report.loss = run.losses;
  RETURN_IF_ERROR(GatherRanks(world, options, run, model, opt, engine, &report));
  if (options.check) {
    RETURN_IF_ERROR(CheckAgainstReference(world, batch, options, run, model, engine, &report));
    RETURN_IF_ERROR(ShareWorstTensor(world, &report));
  }
  report.loss_window = LossWindow(options.steps);
  report.first_loss_mean = MeanLosses(run.losses, false);
  report.last_loss_mean = MeanLosses(run.losses, true);
  report.loss_ratio = report.last_loss_mean / report.first_loss_mean;
  if (options.max_loss_ratio > 0) {
    report.loss_ratio_pass = report.loss_ratio <= options.max_loss_ratio;
    if (!report.loss_ratio_pass) {
      report.failures.push_back("max_loss_ratio: loss ratio " + std::to_string(report.loss_ratio) +
                                " > " + std::to_string(options.max_loss_ratio));
    }
  }
  return report;
}

namespace {

Json CheckJson(const TrainReport& r) {
  Json per_rank = Json::array();
  for (const TrainRankReport& rr : r.ranks) {
    const TrainCheckErrors& c = rr.check;
    per_rank.push_back({{"rank", rr.rank},
                        {"loss_max_rel", c.loss_max_rel},
                        {"gradient_max_abs", c.gradient_max_abs},
                        {"gradient_max_rel", c.gradient_max_rel},
                        {"output_max_abs", c.output_max_abs},
                        {"output_max_rel", c.output_max_rel}});
  }
  return {{"reference_loss", r.reference_loss},
          {"max_rel_loss_diff", r.worst.loss_max_rel},
          {"gradient_max_abs", r.worst.gradient_max_abs},
          {"gradient_max_rel", r.worst.gradient_max_rel},
          {"output_max_abs", r.worst.output_max_abs},
          {"output_max_rel", r.worst.output_max_rel},
          {"worst_gradient_tensor_rank0", r.worst_gradient_tensor_rank0},
          {"tolerance_rel", kTrainCheckTolerance},
          {"pass", r.check_pass},
          {"relative_error",
           "per tensor max|a-b| / max(max|ref|, 1e-30); gradient: step 0 all-reduced, per "
           "parameter tensor; output: step 0 model output and each layer's attention output "
           "on each rank's rows"},
          {"ranks", per_rank}};
}

}  // namespace

Json ToJson(const TrainReport& r) {
  const models::SmallDitConfig& m = r.options.model;
  Json ranks = Json::array();
  for (const TrainRankReport& rr : r.ranks) {
    ranks.push_back({{"rank", rr.rank},
                     {"local_tokens", rr.local_tokens},
                     {"step_time_s", rr.step_time_s},
                     {"engine_peak_bytes", rr.engine_peak_bytes},
                     {"activation_bytes", rr.activation_bytes},
                     {"backward_scratch_bytes", rr.backward_scratch_bytes},
                     {"model_optimizer_bytes", rr.model_optimizer_bytes},
                     {"peak_bytes", rr.peak_bytes()}});
  }
  Json out = {{"label", "measured"},
              {"mode", "train"},
              {"num_ranks", r.num_ranks},
              {"model",
               {{"hidden", m.hidden},
                {"heads", m.num_heads},
                {"head_dim", m.head_dim()},
                {"layers", m.num_layers},
                {"ffn", m.ffn_hidden},
                {"channels", m.in_channels},
                {"parameters", r.parameters}}},
              {"lr", r.options.optimizer.learning_rate},
              {"seed", r.options.data_seed},
              {"steps", r.options.steps},
              {"loss", r.loss},
              {"max_step_time_s", r.max_step_time_s},
              {"ranks", ranks},
              {"pass", r.pass()},
              {"failures", r.failures}};
  if (r.options.max_loss_ratio > 0) {
    out["loss_ratio"] = {{"ratio", r.loss_ratio},
                         {"limit", r.options.max_loss_ratio},
                         {"window", r.loss_window},
                         {"pass", r.loss_ratio_pass}};
  }
  if (r.options.check) out["check"] = CheckJson(r);
  return out;
}

}  // namespace tessera::zellige::engine
