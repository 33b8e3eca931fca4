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
// times and peak bytes (engine allocator peak + SmallDit activations + backward scratch
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
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/zellige/small_dit_args.h"
#include "comm/mpi_environment.h"
#include "core/heap_tuning.h"
#include "core/json_util.h"
#include "core/table.h"
#include "core/units.h"
#include "kernels/gemm.h"
#include "zellige/engine/attention_run.h"
#include "zellige/engine/plan_for_job.h"
#include "zellige/engine/train_on_plan.h"

namespace tessera::cli {

using core::Json;
using core::Status;
using core::StatusOr;
namespace engine = zellige::engine;

namespace {

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

engine::PlanJobRequest JobRequest(const RunArgs& a) {
  engine::PlanJobRequest r;
  r.plan_path = a.plan_path;
  r.workload = {a.workload, a.load, a.video_seconds, a.seed, a.token_scale};
  r.planner = a.planner;
  r.cluster = a.cluster;
  r.profile = a.profile;
  r.model = {"attention-only", a.heads * a.head_dim, a.heads, 1, 4 * a.heads * a.head_dim, 0, 4};
  if (a.train) r.model = {"small-dit", a.hidden, a.heads, a.layers, a.ffn, 0, 4};
  return r;
}

// The --train model options in the shared form (cli/small_dit_args.h).
SmallDitArgs ModelArgs(const RunArgs& a) {
  return SmallDitArgs{a.hidden, a.heads, a.layers, a.ffn, a.channels, a.seed};
}

engine::TrainOptions ToTrainOptions(const RunArgs& a) {
  engine::TrainOptions o;
  o.model = ToSmallDitConfig(ModelArgs(a));
  o.optimizer.learning_rate = static_cast<float>(a.lr);
  o.optimizer.weight_decay = 0.01f;
  o.data_seed = a.seed;
  o.steps = a.steps;
  o.check = a.check;
  o.max_loss_ratio = a.max_loss_ratio;
  if (!a.plan_path.empty()) o.plan_source = a.plan_path;
  return o;
}

void PrintTraining(const RunArgs& a, const engine::JobPlan& job, const engine::TrainReport& r) {
  std::printf(
      "train SmallDit (hidden %d, heads %d, head dim %d, layers %d, ffn %d, channels %d, "
      "%lld params, lr %g) on plan %s: %zu sequences, %lld tokens, %d ranks, %d splits\n",
      a.hidden, a.heads, a.hidden / a.heads, a.layers, a.ffn, a.channels,
      static_cast<long long>(r.parameters), a.lr, job.plan.planner.c_str(),
      job.batch.sequences.size(), static_cast<long long>(job.batch.total_tokens()), r.num_ranks,
      zellige::SplitCount(job.plan));
  core::Table st({"step", "loss", "max step s"});
  for (size_t s = 0; s < r.loss.size(); ++s) {
    st.AddRow({std::to_string(s), core::Fixed(r.loss[s], 6), core::Fixed(r.max_step_time_s[s], 4)});
  }
  std::printf("%s", st.Render().c_str());
  core::Table rt(
      {"rank", "tokens", "mean step s", "engine peak MiB", "activations MiB", "model+adam MiB"});
  for (const engine::TrainRankReport& rr : r.ranks) {
    rt.AddRow({std::to_string(rr.rank), std::to_string(rr.local_tokens),
               core::Fixed(rr.mean_step_time_s(), 4),
               core::Fixed(rr.engine_peak_bytes / core::kMiB, 2),
               core::Fixed((rr.activation_bytes + rr.backward_scratch_bytes) / core::kMiB, 2),
               core::Fixed(rr.model_optimizer_bytes / core::kMiB, 2)});
  }
  std::printf("%s", rt.Render().c_str());
  std::printf(
      "(measured: DistributedTrainStep wall time on this machine; memory: engine "
      "tracker peak + SmallDit::ActivationBytes + backward scratch + params/grads/AdamW)\n");
  std::printf("loss %.6f -> %.6f (mean of first / last %d steps, ratio %.3f)\n", r.first_loss_mean,
              r.last_loss_mean, r.loss_window, r.loss_ratio);
  if (a.check) {
    const engine::TrainCheckErrors& w = r.worst;
    std::printf(
        "check vs single process: loss max rel %.3e, gradient max abs %.3e max rel %.3e, "
        "output max abs %.3e max rel %.3e (step 0, all ranks; tolerance %.0e rel): %s\n",
        w.loss_max_rel, w.gradient_max_abs, w.gradient_max_rel, w.output_max_abs, w.output_max_rel,
        engine::kTrainCheckTolerance, r.check_pass ? "PASS" : "FAIL");
  }
  if (a.max_loss_ratio > 0) {
    std::printf("loss ratio %.3f (limit %g): %s\n", r.loss_ratio, a.max_loss_ratio,
                r.loss_ratio_pass ? "PASS" : "FAIL");
  }
}

void PrintAttention(const RunArgs& a, const engine::JobPlan& job,
                    const engine::AttentionRunReport& r) {
  std::printf("plan %s: %zu sequences, %lld tokens, %d ranks, %d splits; H=%d D=%d\n",
              job.plan.planner.c_str(), job.batch.sequences.size(),
              static_cast<long long>(job.batch.total_tokens()), r.num_ranks,
              zellige::SplitCount(job.plan), a.heads, a.head_dim);
  core::Table t({"rank", "tokens", "mean step s", "max step s", "peak MiB"});
  for (const engine::AttentionRankReport& rr : r.ranks) {
    t.AddRow({std::to_string(rr.rank), std::to_string(rr.local_tokens),
              core::Fixed(rr.mean_step_time_s(), 4), core::Fixed(rr.max_step_time_s(), 4),
              core::Fixed(rr.peak_bytes / core::kMiB, 2)});
  }
  std::printf("%s", t.Render().c_str());
  std::printf("(measured: attention forward+backward wall time per step on this machine)\n");
  if (a.check) {
    std::printf("check vs reference: max abs err %.3e, max rel err %.3e (tolerance %.0e): %s\n",
                r.max_abs_err, r.max_rel_err, engine::kAttentionCheckTolerance,
                r.check_pass ? "PASS" : "FAIL");
  }
}

// Rank 0 renders and writes --json; every rank returns the report's first failure.
template <typename Report, typename Print>
Status Finish(const RunArgs& a, comm::Communicator& world, const engine::JobPlan& job,
              const Report& report, Print print) {
  if (world.rank() == 0) {
    print(a, job, report);
    if (!a.json_path.empty()) {
      Json out = engine::ToJson(report);
      out["plan"] = job.json;
      RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, out));
    }
    std::fflush(stdout);
  }
  if (!report.pass()) {
    return core::InvalidArgument(
        NameFlags(report.failures.front(), {{"max_loss_ratio", "--max-loss-ratio"}}));
  }
  return Status::Ok();
}

Status RunOnWorld(const RunArgs& a, comm::Communicator& world) {
  if (a.steps < 1)
    return core::InvalidArgument("--steps: got " + std::to_string(a.steps) + ", must be >= 1");
  if (a.heads < 1 || a.head_dim < 1) {
    return core::InvalidArgument("--heads / --head-dim: got " + std::to_string(a.heads) + " / " +
                                 std::to_string(a.head_dim) + ", must be >= 1");
  }
  ASSIGN_OR_RETURN(engine::JobPlan job,
                   NameFlags(engine::ShareJobPlan(world, JobRequest(a)),
                             {{"cluster", "--cluster"}, {"token_scale", "--token-scale"}}));
  if (a.train) {
    ASSIGN_OR_RETURN(engine::TrainReport report,
                     engine::TrainOnPlan(world, job.plan, job.batch, ToTrainOptions(a)));
    return Finish(a, world, job, report, PrintTraining);
  }
  engine::AttentionRunOptions o{a.heads, a.head_dim, a.seed,
                                a.steps, a.check,    a.plan_path.empty() ? "plan" : a.plan_path};
  ASSIGN_OR_RETURN(engine::AttentionRunReport report,
                   engine::RunAttentionSteps(world, job.plan, job.batch, o));
  return Finish(a, world, job, report, PrintAttention);
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
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = z->add_subcommand(
      "run",
      "Execute a plan's attention (fwd+bwd), or with --train a SmallDit training, on the MPI "
      "ranks: mpirun -np N tessera ...");
  paths->Input(c, "--plan", &a->plan_path, "plan JSON (with tokens per placement)");
  c->add_option("--workload", a->workload, "mixture vNN or batch JSON (when no --plan)")
      ->capture_default_str();
  paths->RecordInput("--workload", &a->workload);
  c->add_option("--planner", a->planner, "a registered planner")->capture_default_str();
  c->add_option("--seed", a->seed, "workload and data seed")
      ->transform(Seed())
      ->capture_default_str();
  c->add_option("--load", a->load, "tokens per rank before scaling: high, low or a number")
      ->capture_default_str();
  c->add_option("--video-seconds", a->video_seconds, "video length")
      ->check(Number(1, 600))
      ->capture_default_str();
  c->add_option("--token-scale", a->token_scale, "multiply every sequence's tokens by this")
      ->check(PositiveNumber(1000))
      ->capture_default_str();
  paths->Input(c, "--profile", &a->profile,
               "profile JSON (tessera zellige profile) the planner prices with, instead of "
               "--cluster");
  paths->Input(c, "--cluster", &a->cluster,
               "cluster preset or JSON for the planner (default: "
               "this machine, modeled)");
  c->add_option("--steps", a->steps, "steps to run")
      ->transform(Integer(1, 1000000))
      ->capture_default_str();
  c->add_flag("--check", a->check, "compare with the reference (exit 1 above 1e-5 rel)");
  paths->Output(c, "--json", &a->json_path, "write per-rank step times and peak bytes here");
  c->add_option("--heads", a->heads, "attention heads")
      ->transform(Integer(1, 4096))
      ->capture_default_str();
  c->add_option("--head-dim", a->head_dim, "head dimension")
      ->transform(Integer(1, 65536))
      ->capture_default_str();
  c->add_flag("--train", a->train,
              "train models::SmallDit (flow matching, AdamW) through the engine instead of "
              "attention only; head dim = hidden / heads");
  c->add_option("--hidden", a->hidden, "--train: model width")
      ->transform(Integer(1, 1 << 20))
      ->capture_default_str();
  c->add_option("--layers", a->layers, "--train: transformer blocks")
      ->transform(Integer(1, 4096))
      ->capture_default_str();
  c->add_option("--ffn", a->ffn, "--train: FFN hidden size")
      ->transform(Integer(1, 1 << 22))
      ->capture_default_str();
  c->add_option("--channels", a->channels, "--train: latent channels per token")
      ->transform(Integer(1, 1 << 16))
      ->capture_default_str();
  c->add_option("--lr", a->lr, "--train: AdamW learning rate")
      ->check(Number(0, 1000))
      ->capture_default_str();
  c->add_option("--max-loss-ratio", a->max_loss_ratio,
                "--train: exit 1 unless mean(last W losses) <= R * mean(first W), "
                "W = min(5, steps / 2)")
      ->check(Number(0, 1e6));
  c->add_option("--op-timeout", a->op_timeout_s, "seconds before a stuck op aborts the job")
      ->check(PositiveNumber(kMaxOpTimeoutS))
      ->capture_default_str();
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunZelligeRun(*a); }); });
}

}  // namespace tessera::cli
