// `tessera zellige run`: executes a zellige plan's attention (forward + backward) for real
// on the ranks MPI started, optionally checking every rank's slices against the reference.
//
//   mpirun -np N tessera zellige run [--plan FILE | --workload v50|FILE --planner NAME
//       [--seed S] [--load low] [--token-scale F]] [--steps K] [--check] [--json FILE]
//       [--heads 4] [--head-dim 64] [--cluster PRESET|FILE | --profile FILE]
//       [--train [--hidden 256] [--layers 4] [--ffn 1024] [--channels 16] [--lr 1e-3]
//        [--max-loss-ratio R]]
//
// Default mode: attention forward + backward only (random q, k, v), --check compares every
// rank's slices with the single-process attention.
// --train: flow-matching training of models::SmallDit (hidden, heads = --heads, head dim =
// hidden / heads, layers, ffn, channels) with AdamW (--lr, weight decay 0.01 on weights) on
// seeded synthetic latents (data seed = --seed), DistributedTrainStep per step (sequence
// parallelism through the AttentionEngine, data parallelism over the plan's placements).
// Rank 0 prints every step's loss and step time (max over ranks); --json adds per-rank step
// times and peak bytes (engine MemoryTracker peak + SmallDit activations + backward scratch
// + parameters, gradients and AdamW state). --check: every rank also runs the single-process
// reference training (whole batch, LocalAttentionBackend, same seeds; runtime/
// dit_reference_training.h) and compares (a) the loss curve, per step |loss - ref| / |ref|,
// (b) step 0's all-reduced gradient vector before the update, per parameter tensor, and (c)
// step 0's model output and every layer's attention output on the rank's own token rows
// against the matching reference rows; (b) and (c) are norm-wise per tensor, max |a - b| /
// max(max |ref|, 1e-30). Every maximum over ranks and tensors must be <= 1e-5 (exit 1
// otherwise); rank 0 prints them and --json holds them per rank. --max-loss-ratio R:
// exit 1 unless mean(last W losses) <= R * mean(first W losses), W = min(5, K / 2) (>= 1).
//
// Cluster: without --cluster it is "this machine": 1 node of N ranks with CPU-like numbers
// (modeled guesses, not measured), used only by the planner's cost model. The planner's
// model is attention-sized: hidden = heads * head_dim, one layer, fp32.
// Workload: a named mixture is generated for N ranks at --load tokens per rank, then every
// sequence's token count is multiplied by --token-scale (at least 1 token). The default
// 1/64 at load "low" (125K tokens/rank) keeps a step (attention fwd+bwd, 4 heads, D=64)
// around a second on the 2-core development VM (measured there: ~0.8 s at 4 ranks, v50).
// Rank 0 loads / plans and broadcasts the plan (with token counts) so every rank runs the
// identical plan; errors are therefore reported alike by every rank (one line, exit 1).
// MPI is initialised only inside this subcommand.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/zellige/cost_model_args.h"
#include "cli/zellige/small_dit_args.h"
#include "comm/broadcast_string.h"
#include "comm/mpi_environment.h"
#include "core/heap_tuning.h"
#include "core/json_util.h"
#include "core/table.h"
#include "hw/cluster.h"
#include "kernels/gemm.h"
#include "workload/batch_source.h"
#include "zellige/engine/attention_engine.h"
#include "zellige/engine/dit_reference_training.h"
#include "zellige/engine/dit_training.h"
#include "zellige/engine/engine_check.h"
#include "zellige/evaluate.h"

namespace tessera::cli {

using core::Json;
using core::Status;
using core::StatusOr;

namespace {

constexpr double kCheckTolerance = 1e-5;

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct RunArgs {
  std::string plan_path;
  std::string workload = "v50";
  std::string planner = "zellige";
  std::string load = "low";
  std::string cluster;
  std::string profile;  // --profile: the planner prices with a measured profile
  uint64_t seed = 1;
  double video_seconds = 5;
  double token_scale = 1.0 / 64;
  int steps = 3;
  bool check = false;
  std::string json_path;
  int heads = 4;
  int head_dim = 64;
  double op_timeout_s = 120;
  // --train
  bool train = false;
  int hidden = 256;
  int layers = 4;
  int ffn = 1024;
  int channels = 16;
  double lr = 1e-3;
  double max_loss_ratio = 0;  // 0: not checked
};

hw::Cluster ThisMachine(int n) {
  hw::Cluster c;
  c.name = "this-machine";
  c.provenance = "modeled (CPU-like guesses for the local ranks, not measured)";
  c.device = hw::Device{"cpu-rank", {.bf16 = 50e9}, 10e9, 8.0 * (1ull << 30), 0.9, 0.5};
  c.nodes = 1;
  c.ranks_per_node = n;
  c.intra = hw::Link{"shared-memory", 4e9, 5e-6};
  c.inter = c.intra;
  return c;
}

// Rank 0's part: the plan JSON (with "tokens" on every placement) or an error.
StatusOr<Json> Prepare(const RunArgs& a, int n) {
  if (!a.plan_path.empty()) {
    ASSIGN_OR_RETURN(Json j, core::ReadJsonFile(a.plan_path));
    ASSIGN_OR_RETURN(zellige::Plan plan, zellige::PlanFromJson(j, a.plan_path));
    (void)plan;
    return j;
  }
  RETURN_IF_ERROR(workload::ValidateTokenScale(a.token_scale));
  hw::Cluster cluster = ThisMachine(n);
  if (!a.cluster.empty()) {
    ASSIGN_OR_RETURN(cluster, hw::LoadCluster(a.cluster));
    if (cluster.num_ranks() != n) {
      return core::InvalidArgument("--cluster: " + a.cluster + " has " +
                                   std::to_string(cluster.num_ranks()) + " ranks but the job has " +
                                   std::to_string(n));
    }
  }
  ASSIGN_OR_RETURN(workload::Batch batch,
                   workload::LoadBatch({a.workload, a.load, a.video_seconds, a.seed, a.token_scale},
                                       n));
  models::DitModel model{
      "attention-only", a.heads * a.head_dim, a.heads, 1, 4 * a.heads * a.head_dim, 0, 4};
  if (a.train) model = {"small-dit", a.hidden, a.heads, a.layers, a.ffn, 0, 4};
  RETURN_IF_ERROR(models::Validate(model));
  std::unique_ptr<zellige::CostModel> owned;
  if (!a.profile.empty()) {  // the planner prices with the measured profile
    if (!a.cluster.empty()) {
      return core::InvalidArgument("--cluster: got '" + a.cluster +
                                   "', cannot be combined with --profile");
    }
    ASSIGN_OR_RETURN(owned, MakeCostModel("", "", a.profile));
    if (owned->cluster().num_ranks() != n) {
      return core::InvalidArgument(a.profile + ": ranks: measured with " +
                                   std::to_string(owned->cluster().num_ranks()) + ", the job has " +
                                   std::to_string(n));
    }
  } else {
    owned = zellige::MakeAnalyticCostModel(cluster, model);
  }
  const zellige::CostModel& cost = *owned;
  ASSIGN_OR_RETURN(const zellige::PlannerEntry* entry, zellige::FindPlanner(a.planner));
  RETURN_IF_ERROR(zellige::CheckBatchFits(batch, cost));
  ASSIGN_OR_RETURN(zellige::PlannerRun run, zellige::RunPlanner(*entry, batch, cost, {}));
  return zellige::ToJson(run.plan, batch);
}

// Rebuilds the batch from the "tokens" of the plan JSON's placements.
StatusOr<workload::Batch> BatchFromPlanJson(const Json& j, const zellige::Plan& plan) {
  std::vector<int64_t> tokens;
  const Json& pls = j["placements"];
  for (size_t i = 0; i < plan.placements.size(); ++i) {
    const std::string path = "placements[" + std::to_string(i) + "]";
    ASSIGN_OR_RETURN(int64_t t, core::GetPositiveInt(pls[i], path, "tokens"));
    const int seq = plan.placements[i].seq;
    if (seq >= static_cast<int>(tokens.size())) tokens.resize(seq + 1, 0);
    tokens[seq] = t;
  }
  return zellige::engine::MakeBatch(tokens);
}

// The --train model options in the shared form (cli/small_dit_args.h).
SmallDitArgs ModelArgs(const RunArgs& a) {
  return SmallDitArgs{a.hidden, a.heads, a.layers, a.ffn, a.channels, a.seed};
}

models::SmallDitConfig TrainConfig(const RunArgs& a) { return ToSmallDitConfig(ModelArgs(a)); }

models::AdamWOptions TrainOptions(const RunArgs& a) {
  models::AdamWOptions o;
  o.learning_rate = static_cast<float>(a.lr);
  o.weight_decay = 0.01f;
  return o;
}

// Number of steps averaged at each end of the loss curve: min(5, K / 2), at least 1, so the
// first and last windows do not overlap when K >= 2.
int LossWindow(int steps) { return std::max(1, std::min(5, steps / 2)); }

// Mean of the first (last) LossWindow(K) losses.
double MeanLosses(const std::vector<double>& l, bool last) {
  const size_t k = static_cast<size_t>(LossWindow(static_cast<int>(l.size())));
  double sum = 0;
  for (size_t i = 0; i < k; ++i) sum += last ? l[l.size() - 1 - i] : l[i];
  return sum / static_cast<double>(k);
}

// --train: SmallDit training through the engine (collective over world).
Status RunTraining(const RunArgs& a, comm::Communicator& world, const Json& j,
                   const zellige::Plan& plan, const workload::Batch& batch,
                   zellige::engine::AttentionEngine& engine) {
  const int n = world.size(), me = world.rank();
  const models::SmallDitConfig cfg = TrainConfig(a);
  ASSIGN_OR_RETURN(models::SmallDit model, models::SmallDit::Create(cfg));
  ASSIGN_OR_RETURN(models::AdamW opt,
                   models::AdamW::Create(model.NumParameters(), TrainOptions(a)));
  zellige::engine::EngineAttentionBackend backend(&engine, a.layers);
  models::SmallDitActivations acts;
  std::vector<double> losses;
  std::vector<float> times;                // per step, this rank
  std::vector<float> first_grads;          // --check: step 0's all-reduced gradients
  models::SmallDitActivations first_acts;  // --check: step 0's forward on this rank
  for (int step = 0; step < a.steps; ++step) {
    RETURN_IF_ERROR(world.Barrier());
    const double t0 = NowSeconds();
    ASSIGN_OR_RETURN(double loss, zellige::engine::DistributedTrainStep(model, opt, backend, world, batch,
                                                                a.seed, step, &acts));
    times.push_back(static_cast<float>(NowSeconds() - t0));
    losses.push_back(loss);
    if (a.check && step == 0) {  // outside the timed region
      first_grads.assign(model.Gradients().begin(), model.Gradients().end());
      first_acts = acts;
    }
  }
  // Memory of this rank: engine peak, activations, backward scratch, params + grads + AdamW.
  const int64_t local_tokens = engine.local_tokens();
  const int64_t local_segments = static_cast<int64_t>(engine.local_placements().size());
  const int64_t act_bytes =
      local_tokens > 0 ? models::SmallDit::ActivationBytes(cfg, local_tokens, local_segments) : 0;
  const int64_t state_bytes = 8 * model.NumParameters() + opt.StateBytes();
  constexpr int kMem = 5;  // engine peak, activations, scratch, model state, local tokens
  std::vector<double> mem(kMem * n, 0.0);  // one-hot sums: exact below 2^53
  mem[kMem * me + 0] = static_cast<double>(engine.memory().peak_bytes());
  mem[kMem * me + 1] = static_cast<double>(act_bytes);
  mem[kMem * me + 2] = static_cast<double>(model.ScratchBytes());
  mem[kMem * me + 3] = static_cast<double>(state_bytes);
  mem[kMem * me + 4] = static_cast<double>(local_tokens);
  RETURN_IF_ERROR(world.AllReduceSum(std::span<double>(mem)));
  std::vector<float> all_times(static_cast<size_t>(a.steps) * n);
  RETURN_IF_ERROR(world.AllGather(times, all_times));

  // --check: per rank {loss rel, gradient abs, gradient rel, output abs, output rel}.
  constexpr int kChk = 5;
  std::vector<double> chk(kChk * n, 0.0);  // one-hot sums
  std::vector<double> worst(kChk, 0.0);    // max over ranks (NaN -> inf)
  std::vector<double> ref;
  std::string worst_tensor;
  if (a.check) {  // every rank (they run in parallel; no rank waits on a collective)
    ASSIGN_OR_RETURN(zellige::engine::ReferenceTraining rt,
                     zellige::engine::RunReferenceTraining(cfg, TrainOptions(a), batch, a.seed, a.steps));
    ref = rt.losses;
    double loss_rel = 0;
    for (int s = 0; s < a.steps; ++s) {
      const double rel = std::fabs(losses[s] - ref[s]) / std::max(std::fabs(ref[s]), 1e-30);
      loss_rel = std::isnan(rel) ? INFINITY : std::max(loss_rel, rel);
    }
    ASSIGN_OR_RETURN(
        zellige::engine::FirstStepCheck fc,
        zellige::engine::CompareFirstStep(rt, model.ParameterTensors(), first_grads, first_acts, engine));
    worst_tensor = fc.worst_gradient_tensor;
    const double mine[kChk] = {loss_rel, fc.gradient.max_abs, fc.gradient.max_rel,
                               fc.output.max_abs, fc.output.max_rel};
    for (int i = 0; i < kChk; ++i) chk[kChk * me + i] = mine[i];
    RETURN_IF_ERROR(world.AllReduceSum(std::span<double>(chk)));
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < kChk; ++i) {
        const double x = chk[kChk * r + i];
        worst[i] = std::isnan(x) ? INFINITY : std::max(worst[i], x);
      }
  }
  const double worst_rel = std::max({worst[0], worst[2], worst[4]});
  const double first = MeanLosses(losses, false), last = MeanLosses(losses, true);
  const double ratio = last / first;
  if (me == 0) {
    std::printf(
        "train SmallDit (hidden %d, heads %d, head dim %d, layers %d, ffn %d, channels %d, "
        "%lld params, lr %g) on plan %s: %zu sequences, %lld tokens, %d ranks, %d splits\n",
        a.hidden, a.heads, a.hidden / a.heads, a.layers, a.ffn, a.channels,
        static_cast<long long>(model.NumParameters()), a.lr, plan.planner.c_str(),
        batch.sequences.size(), static_cast<long long>(batch.total_tokens()), n,
        zellige::SplitCount(plan));
    core::Table st({"step", "loss", "max step s"});
    std::vector<double> max_times;
    for (int s = 0; s < a.steps; ++s) {
      double mx = 0;
      for (int r = 0; r < n; ++r) mx = std::max<double>(mx, all_times[r * a.steps + s]);
      max_times.push_back(mx);
      st.AddRow({std::to_string(s), core::Fixed(losses[s], 6), core::Fixed(mx, 4)});
    }
    std::printf("%s", st.Render().c_str());
    core::Table rt(
        {"rank", "tokens", "mean step s", "engine peak MiB", "activations MiB", "model+adam MiB"});
    Json ranks = Json::array();
    constexpr double kMiB = 1024.0 * 1024.0;
    for (int r = 0; r < n; ++r) {
      const double* m = &mem[kMem * r];
      std::vector<double> tr(all_times.begin() + r * a.steps,
                             all_times.begin() + (r + 1) * a.steps);
      double sum = 0;
      for (double x : tr) sum += x;
      rt.AddRow({std::to_string(r), std::to_string(static_cast<int64_t>(m[4])),
                 core::Fixed(sum / a.steps, 4), core::Fixed(m[0] / kMiB, 2),
                 core::Fixed((m[1] + m[2]) / kMiB, 2), core::Fixed(m[3] / kMiB, 2)});
      ranks.push_back({{"rank", r},
                       {"local_tokens", static_cast<int64_t>(m[4])},
                       {"step_time_s", tr},
                       {"engine_peak_bytes", static_cast<int64_t>(m[0])},
                       {"activation_bytes", static_cast<int64_t>(m[1])},
                       {"backward_scratch_bytes", static_cast<int64_t>(m[2])},
                       {"model_optimizer_bytes", static_cast<int64_t>(m[3])},
                       {"peak_bytes", static_cast<int64_t>(m[0] + m[1] + m[2] + m[3])}});
    }
    std::printf("%s", rt.Render().c_str());
    std::printf(
        "(measured: DistributedTrainStep wall time on this machine; memory: engine "
        "tracker peak + SmallDit::ActivationBytes + backward scratch + params/grads/AdamW)\n");
    std::printf("loss %.6f -> %.6f (mean of first / last %d steps, ratio %.3f)\n", first, last,
                LossWindow(a.steps), ratio);
    if (a.check) {
      std::printf(
          "check vs single process: loss max rel %.3e, gradient max abs %.3e max rel %.3e, "
          "output max abs %.3e max rel %.3e (step 0, all ranks; tolerance %.0e rel): %s\n",
          worst[0], worst[1], worst[2], worst[3], worst[4], kCheckTolerance,
          worst_rel <= kCheckTolerance ? "PASS" : "FAIL");
    }
    if (a.max_loss_ratio > 0) {
      std::printf("loss ratio %.3f (limit %g): %s\n", ratio, a.max_loss_ratio,
                  ratio <= a.max_loss_ratio ? "PASS" : "FAIL");
    }
    if (!a.json_path.empty()) {
      Json out = {{"label", "measured"},
                  {"mode", "train"},
                  {"num_ranks", n},
                  {"model",
                   {{"hidden", a.hidden},
                    {"heads", a.heads},
                    {"head_dim", a.hidden / a.heads},
                    {"layers", a.layers},
                    {"ffn", a.ffn},
                    {"channels", a.channels},
                    {"parameters", model.NumParameters()}}},
                  {"lr", a.lr},
                  {"seed", a.seed},
                  {"steps", a.steps},
                  {"loss", losses},
                  {"max_step_time_s", max_times},
                  {"plan", j},
                  {"ranks", ranks}};
      if (a.check) {
        Json per_rank = Json::array();
        for (int r = 0; r < n; ++r) {
          const double* c = &chk[kChk * r];
          per_rank.push_back({{"rank", r},
                              {"loss_max_rel", c[0]},
                              {"gradient_max_abs", c[1]},
                              {"gradient_max_rel", c[2]},
                              {"output_max_abs", c[3]},
                              {"output_max_rel", c[4]}});
        }
        out["check"] = {
            {"reference_loss", ref},
            {"max_rel_loss_diff", worst[0]},
            {"gradient_max_abs", worst[1]},
            {"gradient_max_rel", worst[2]},
            {"output_max_abs", worst[3]},
            {"output_max_rel", worst[4]},
            {"worst_gradient_tensor_rank0", worst_tensor},
            {"tolerance_rel", kCheckTolerance},
            {"relative_error",
             "per tensor max|a-b| / max(max|ref|, 1e-30); gradient: step 0 all-reduced, per "
             "parameter tensor; output: step 0 model output and each layer's attention output "
             "on each rank's rows"},
            {"ranks", per_rank}};
      }
      RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, out));
    }
    std::fflush(stdout);
  }
  if (a.check && !(worst_rel <= kCheckTolerance)) {
    return core::InvalidArgument("check failed: max rel loss diff " + std::to_string(worst[0]) +
                                 ", gradient " + std::to_string(worst[2]) + ", output " +
                                 std::to_string(worst[4]) + " (must all be <= 1e-5)");
  }
  if (a.max_loss_ratio > 0 && !(ratio <= a.max_loss_ratio)) {
    return core::InvalidArgument("--max-loss-ratio: loss ratio " + std::to_string(ratio) + " > " +
                                 std::to_string(a.max_loss_ratio));
  }
  return Status::Ok();
}

Status RunOnWorld(const RunArgs& a, comm::Communicator& world) {
  const int n = world.size(), me = world.rank();
  if (a.steps < 1)
    return core::InvalidArgument("--steps: got " + std::to_string(a.steps) + ", must be >= 1");
  if (a.heads < 1 || a.head_dim < 1) {
    return core::InvalidArgument("--heads / --head-dim: got " + std::to_string(a.heads) + " / " +
                                 std::to_string(a.head_dim) + ", must be >= 1");
  }
  std::string msg;
  if (me == 0) {
    auto prepared = Prepare(a, n);
    msg = prepared.ok() ? "P" + prepared->dump() : "E" + prepared.status().message();
  }
  RETURN_IF_ERROR(comm::BroadcastString(world, &msg, 0));
  if (msg.empty() || msg[0] != 'P') return core::InvalidArgument(msg.empty() ? "?" : msg.substr(1));
  Json j = Json::parse(msg.substr(1), nullptr, false);
  const std::string source = a.plan_path.empty() ? "plan" : a.plan_path;
  ASSIGN_OR_RETURN(zellige::Plan plan, zellige::PlanFromJson(j, source));
  ASSIGN_OR_RETURN(workload::Batch batch, BatchFromPlanJson(j, plan));
  auto engine_or = zellige::engine::AttentionEngine::Create(plan, batch, a.heads, a.head_dim, &world);
  if (!engine_or.ok()) return engine_or.status().WithPrefix(source);
  zellige::engine::AttentionEngine& engine = **engine_or;
  if (a.train) return RunTraining(a, world, j, plan, batch, engine);

  zellige::engine::LocalData d = zellige::engine::MakeLocalData(engine, a.seed);
  const size_t elems = d.q.size();
  std::vector<float> o(elems), dq(elems), dk(elems), dv(elems);
  std::vector<float> times;  // per step, this rank
  for (int step = 0; step < a.steps; ++step) {
    RETURN_IF_ERROR(world.Barrier());
    const double t0 = NowSeconds();
    zellige::engine::ForwardState state;
    RETURN_IF_ERROR(engine.Forward(d.q, d.k, d.v, o, &state));
    RETURN_IF_ERROR(engine.Backward(state, d.q, d.k, d.v, o, d.d_o, dq, dk, dv));
    times.push_back(static_cast<float>(NowSeconds() - t0));
  }
  // Per rank: step times, peak bytes (MiB), local tokens, check abs, check rel.
  std::vector<float> mine = times;
  mine.push_back(static_cast<float>(engine.memory().peak_bytes() / (1024.0 * 1024.0)));
  mine.push_back(static_cast<float>(engine.local_tokens()));
  double abs_err = 0, rel_err = 0;
  if (a.check) {
    ASSIGN_OR_RETURN(zellige::engine::ErrorStats st,
                     zellige::engine::CompareWithReference(engine, batch, a.seed, o, dq, dk, dv));
    abs_err = st.max_abs;
    rel_err = st.max_rel;
  }
  mine.push_back(static_cast<float>(abs_err));
  mine.push_back(static_cast<float>(rel_err));
  const size_t w = mine.size();
  std::vector<float> all(w * n);
  RETURN_IF_ERROR(world.AllGather(mine, all));
  // Exact peak bytes per rank (a sum of one-hot doubles; integers below 2^53 are exact).
  std::vector<double> peak_bytes(n, 0.0);
  peak_bytes[me] = static_cast<double>(engine.memory().peak_bytes());
  RETURN_IF_ERROR(world.AllReduceSum(std::span<double>(peak_bytes)));
  double worst_abs = 0, worst_rel = 0;
  for (int r = 0; r < n; ++r) {
    worst_abs = std::max<double>(worst_abs, all[r * w + w - 2]);
    worst_rel = std::max<double>(worst_rel, all[r * w + w - 1]);
    if (std::isnan(all[r * w + w - 1])) worst_rel = INFINITY;
  }
  if (me == 0) {
    std::printf("plan %s: %zu sequences, %lld tokens, %d ranks, %d splits; H=%d D=%d\n",
                plan.planner.c_str(), batch.sequences.size(),
                static_cast<long long>(batch.total_tokens()), n, zellige::SplitCount(plan), a.heads,
                a.head_dim);
    core::Table t({"rank", "tokens", "mean step s", "max step s", "peak MiB"});
    Json ranks = Json::array();
    for (int r = 0; r < n; ++r) {
      const float* row = &all[r * w];
      double sum = 0, mx = 0;
      std::vector<double> st;
      for (int s = 0; s < a.steps; ++s) {
        sum += row[s];
        mx = std::max<double>(mx, row[s]);
        st.push_back(row[s]);
      }
      t.AddRow({std::to_string(r), std::to_string(static_cast<int64_t>(row[a.steps + 1])),
                core::Fixed(sum / a.steps, 4), core::Fixed(mx, 4), core::Fixed(row[a.steps], 2)});
      ranks.push_back({{"rank", r},
                       {"local_tokens", static_cast<int64_t>(row[a.steps + 1])},
                       {"step_time_s", st},
                       {"peak_bytes", static_cast<int64_t>(peak_bytes[r])}});
    }
    std::printf("%s", t.Render().c_str());
    std::printf("(measured: attention forward+backward wall time per step on this machine)\n");
    if (a.check) {
      std::printf("check vs reference: max abs err %.3e, max rel err %.3e (tolerance %.0e): %s\n",
                  worst_abs, worst_rel, kCheckTolerance,
                  worst_rel <= kCheckTolerance ? "PASS" : "FAIL");
    }
    if (!a.json_path.empty()) {
      Json out = {{"label", "measured"},    {"num_ranks", n},   {"heads", a.heads},
                  {"head_dim", a.head_dim}, {"steps", a.steps}, {"plan", j},
                  {"ranks", ranks}};
      if (a.check) out["check"] = {{"max_abs_err", worst_abs}, {"max_rel_err", worst_rel}};
      RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, out));
    }
    std::fflush(stdout);
  }
  if (a.check && !(worst_rel <= kCheckTolerance)) {
    return core::InvalidArgument("check failed: max rel err " + std::to_string(worst_rel) +
                                 " > 1e-5");
  }
  return Status::Ok();
}

Status RunZelligeRun(const RunArgs& args) {
  RunArgs a = args;
  if (a.train) {
    RETURN_IF_ERROR(ValidateSmallDitArgs(ModelArgs(a)));
    if (!(a.lr >= 0) || !std::isfinite(a.lr)) {
      return core::InvalidArgument("--lr: got " + std::to_string(a.lr) + ", must be >= 0");
    }
    a.head_dim = a.hidden / a.heads;
  }
  ASSIGN_OR_RETURN(auto env, comm::MpiEnvironment::Create(nullptr, nullptr));
  comm::Communicator& world = env->world();
  world.set_op_timeout_s(a.op_timeout_s);
  RETURN_IF_ERROR(kernels::SetBlasNumThreads(1));
  core::UseSteadyHeap();  // steady step times from the second step on
  Status st = RunOnWorld(a, world);
  const auto code = st.code();
  if (code == core::StatusCode::kDeadlineExceeded || code == core::StatusCode::kUnavailable ||
      code == core::StatusCode::kFailedPrecondition) {
    world.Abort(st);  // the communicator is broken; end the whole job
  }
  return st;
}

}  // namespace

void AddZelligeRun(CLI::App* z, Action* action) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* c = z->add_subcommand(
      "run",
      "Execute a plan's attention (fwd+bwd), or with --train a SmallDit training, on the MPI "
      "ranks: mpirun -np N tessera ...");
  c->add_option("--plan", a->plan_path, "plan JSON (with tokens per placement)");
  c->add_option("--workload", a->workload, "mixture vNN or batch JSON (when no --plan)")
      ->capture_default_str();
  c->add_option("--planner", a->planner, "a registered planner")->capture_default_str();
  c->add_option("--seed", a->seed, "workload and data seed")->capture_default_str();
  c->add_option("--load", a->load, "tokens per rank before scaling: high, low or a number")
      ->capture_default_str();
  c->add_option("--video-seconds", a->video_seconds, "video length")->capture_default_str();
  c->add_option("--token-scale", a->token_scale, "multiply every sequence's tokens by this")
      ->capture_default_str();
  c->add_option("--profile", a->profile,
                "profile JSON (tessera zellige profile) the planner prices with, instead of "
                "--cluster");
  c->add_option("--cluster", a->cluster,
                "cluster preset or JSON for the planner (default: "
                "this machine, modeled)");
  c->add_option("--steps", a->steps, "steps to run")->capture_default_str();
  c->add_flag("--check", a->check, "compare with the reference (exit 1 above 1e-5 rel)");
  c->add_option("--json", a->json_path, "write per-rank step times and peak bytes here");
  c->add_option("--heads", a->heads, "attention heads")->capture_default_str();
  c->add_option("--head-dim", a->head_dim, "head dimension")->capture_default_str();
  c->add_flag("--train", a->train,
              "train models::SmallDit (flow matching, AdamW) through the engine instead of "
              "attention only; head dim = hidden / heads");
  c->add_option("--hidden", a->hidden, "--train: model width")->capture_default_str();
  c->add_option("--layers", a->layers, "--train: transformer blocks")->capture_default_str();
  c->add_option("--ffn", a->ffn, "--train: FFN hidden size")->capture_default_str();
  c->add_option("--channels", a->channels, "--train: latent channels per token")
      ->capture_default_str();
  c->add_option("--lr", a->lr, "--train: AdamW learning rate")->capture_default_str();
  c->add_option("--max-loss-ratio", a->max_loss_ratio,
                "--train: exit 1 unless mean(last W losses) <= R * mean(first W), "
                "W = min(5, steps / 2)");
  c->add_option("--op-timeout", a->op_timeout_s, "seconds before a stuck op aborts the job")
      ->capture_default_str();
  c->callback([action, a] { *action = [a] { return RunZelligeRun(*a); }; });
}

}  // namespace tessera::cli
