// `tessera zellige ...`: token calculus, modeled placement comparison, plan simulation.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/plot.h"
#include "cli/zellige/cost_model_args.h"
#include "cli/zellige/plan_progress.h"
#include "cli/zellige/planner_stats_text.h"
#include "core/json_util.h"
#include "core/parse_number.h"
#include "core/table.h"
#include "core/trace.h"
#include "core/units.h"
#include "hw/cluster.h"
#include "models/token_calculus.h"
#include "workload/batch_source.h"
#include "zellige/compare_planners.h"
#include "zellige/evaluate.h"
#include "zellige/zellige_planner.h"

namespace tessera::cli {

using core::Json;
using core::Status;
using core::StatusOr;
using namespace tessera::zellige;  // NOLINT

namespace {

struct TokensArgs {
  std::string kind = "video";
  std::string res = "1080p";
  double seconds = 15;
  int fps = 16;
};

Status RunTokens(const TokensArgs& a) {
  if (a.kind != "image" && a.kind != "video") {
    return core::InvalidArgument("--kind: got '" + a.kind + "', must be image or video");
  }
  // "res: got ..." as the Python binding says it (tessera.zellige.tokens raises the same text).
  ASSIGN_OR_RETURN(models::Resolution r, models::ParseResolution(a.res));
  models::MediaKind kind =
      a.kind == "video" ? models::MediaKind::kVideo : models::MediaKind::kImage;
  ASSIGN_OR_RETURN(int64_t tokens, models::CountTokens(kind, r, a.seconds, a.fps));
  std::printf("%lld\n", static_cast<long long>(tokens));
  return Status::Ok();
}

struct PlanArgs {
  CostModelArgs cost;  // --cluster, --model or --profile
  std::string workload = "v50";
  std::string load = "high";
  double video_seconds = 15;
  uint64_t seed = 1;
  std::string planner = "all";
  std::vector<std::string> options;  // key=value
  double time_limit_s = 0;           // zellige.total_time_limit_s when > 0
  double joint_time_limit_s = 0;     // joint.time_limit_s when > 0
  std::string json_path, trace_path, save_plan, batch_out, plot_path;
};

Status RunPlan(const PlanArgs& a) {
  ASSIGN_OR_RETURN(std::unique_ptr<CostModel> cost_model, MakeCostModel(a.cost));
  const CostModel& cost = *cost_model;
  const hw::Cluster& cluster = cost.cluster();
  const models::DitModel& model = cost.model();
  ASSIGN_OR_RETURN(
      workload::Batch batch,
      workload::LoadBatch({a.workload, a.load, a.video_seconds, a.seed, 1}, cluster.num_ranks()));
  ASSIGN_OR_RETURN(PlannerOptions options, ParseKeyValues(a.options));
  if (a.time_limit_s > 0) {
    RETURN_IF_ERROR(
        SetOptionOnce(&options, "zellige.total_time_limit_s", a.time_limit_s, "--time-limit"));
  }
  if (a.joint_time_limit_s > 0) {
    RETURN_IF_ERROR(
        SetOptionOnce(&options, "joint.time_limit_s", a.joint_time_limit_s, "--joint-time-limit"));
  }
  RETURN_IF_ERROR(ValidatePlannerOptions(options));
  ASSIGN_OR_RETURN(std::vector<const PlannerEntry*> entries, SelectPlanners(a.planner));
  if (!a.save_plan.empty() && entries.size() != 1) {
    return core::InvalidArgument("--save-plan: needs a single --planner, got '" + a.planner + "'");
  }
  if (!a.trace_path.empty() && entries.size() != 1) {
    return core::InvalidArgument("--trace: needs a single --planner, got '" + a.planner + "'");
  }
  SlowPlanProgress progress("plan");
  SolverProgressLines solver_progress("--joint-time-limit");
  ASSIGN_OR_RETURN(PlannerComparison cmp,
                   ComparePlanners(batch, cost, entries, options, progress.ForPlan(),
                                   solver_progress.Callback()));
  const std::vector<PlannerRun>& runs = cmp.runs;
  std::printf(
      "cluster %s (%d ranks, %s), model %s, batch %s: %zu sequences, %.2fM tokens, "
      "video share %.1f%%\n",
      cluster.name.c_str(), cluster.num_ranks(), cluster.provenance.c_str(), model.name.c_str(),
      batch.name.c_str(), batch.sequences.size(), batch.total_tokens() / 1e6,
      100 * batch.video_token_share());
  core::Table t({"planner", "makespan s", "vs usp", "max/mean", "attn comm GB", "peak mem GiB",
                 "splits", "feasible", "solve ms"});
  for (const PlannerComparisonRow& r : cmp.rows) {
    t.AddRow({r.planner, core::Fixed(r.makespan_s, 2),
              r.vs_usp > 0 ? core::Fixed(r.vs_usp, 2) + "x" : "-", core::Fixed(r.max_over_mean, 3),
              core::Fixed(r.attn_comm_bytes / core::kGB, 1),
              core::Fixed(r.peak_mem_bytes / core::kGiB, 1), std::to_string(r.split_sequences),
              r.feasible ? "yes" : "OOM", core::Fixed(r.solve_ms, 2)});
  }
  std::printf("%s", t.Render().c_str());
  std::printf("(modeled: %s; one training step)\n", DescribeCostModel(cost).c_str());
  for (const PlannerComparisonRow& r : cmp.rows) {
    if (r.planner == "zellige")
      std::printf("%s\n", StatsLine(r.planner, r.stats, "--time-limit").c_str());
    if (r.planner == "joint" || r.planner == "joint-binary") {
      std::printf("%s\n", StatsLine(r.planner, r.stats, "--joint-time-limit").c_str());
    }
  }
  for (const PlannerComparisonRow& r : cmp.rows)
    if (!r.feasible) std::printf("%s: %s\n", r.planner.c_str(), r.infeasible_reason.c_str());
  for (const auto& f : cmp.failures) std::printf("failed: %s\n", f.c_str());
  if (!a.json_path.empty()) {
    Json out = {{"results", ToJson(cmp)},
                {"cluster", hw::ToJson(cluster)},
                {"model", ToJson(model)},
                {"batch", ToJson(batch)},
                {"cost_model", cost.profile() ? "profile" : "analytic"},
                {"label", "modeled"}};
    RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, out));
  }
  if (!a.save_plan.empty() && !runs.empty()) {
    RETURN_IF_ERROR(core::WriteJsonFile(a.save_plan, ToJson(runs[0].plan, batch)));
  }
  if (!a.batch_out.empty()) RETURN_IF_ERROR(core::WriteJsonFile(a.batch_out, ToJson(batch)));
  if (!a.plot_path.empty()) {
    const std::string title = cluster.name + ", " + model.name + ", " + batch.name;
    RETURN_IF_ERROR(
        RenderPlot("plot_zellige_plan.py", RankTimeBreakdownJson(cmp, title), a.plot_path));
    std::printf("wrote %s\n", a.plot_path.c_str());
  }
  if (!a.trace_path.empty() && !runs.empty()) {
    core::TraceWriter trace;
    ASSIGN_OR_RETURN(SimResult sim, Simulate(runs[0].plan, batch, cost, &trace));
    (void)sim;
    RETURN_IF_ERROR(trace.Write(a.trace_path));
  }
  return Status::Ok();
}

struct SimulateArgs {
  CostModelArgs cost;  // --cluster, --model or --profile
  std::string batch_path, plan_path, json_path, trace_path;
};

Status RunSimulate(const SimulateArgs& a) {
  ASSIGN_OR_RETURN(std::unique_ptr<CostModel> cost_model, MakeCostModel(a.cost));
  const CostModel& cost = *cost_model;
  const hw::Cluster& cluster = cost.cluster();
  ASSIGN_OR_RETURN(Json bj, core::ReadJsonFile(a.batch_path));
  ASSIGN_OR_RETURN(workload::Batch batch, workload::BatchFromJson(bj, a.batch_path));
  ASSIGN_OR_RETURN(Json pj, core::ReadJsonFile(a.plan_path));
  ASSIGN_OR_RETURN(Plan plan, PlanFromJson(pj, a.plan_path));
  core::TraceWriter trace;
  auto sim = Simulate(plan, batch, cost, a.trace_path.empty() ? nullptr : &trace);
  if (!sim.ok()) return sim.status().WithPrefix(a.plan_path);
  const SimResult& r = *sim;
  core::Table t({"rank", "busy s", "finish s", "mem GiB"});
  for (int i = 0; i < cluster.num_ranks(); ++i) {
    t.AddRow({std::to_string(i), core::Fixed(r.busy_s[i], 3), core::Fixed(r.finish_s[i], 3),
              core::Fixed(r.mem_bytes[i] / core::kGiB, 2)});
  }
  std::printf("%s", t.Render().c_str());
  std::printf(
      "makespan %.3f s, max/mean %.3f, attn comm %.2f GB, peak mem %.2f GiB, %s (modeled: %s)\n",
      r.makespan_s, r.max_over_mean, r.attn_comm_bytes / core::kGB, r.peak_mem_bytes / core::kGiB,
      r.feasible ? "feasible" : r.infeasible_reason.c_str(), DescribeCostModel(cost).c_str());
  if (cost.StepOverheadS() > 0) {
    std::printf("(makespan includes the profile's per-step overhead of %.3f s)\n",
                cost.StepOverheadS());
  }
  if (!a.trace_path.empty()) RETURN_IF_ERROR(trace.Write(a.trace_path));
  if (!a.json_path.empty()) {
    RETURN_IF_ERROR(core::WriteJsonFile(
        a.json_path, Json{{"makespan_s", r.makespan_s},
                          {"feasible", r.feasible},
                          {"busy_s", r.busy_s},
                          {"finish_s", r.finish_s},
                          {"mem_bytes", r.mem_bytes},
                          {"max_over_mean", r.max_over_mean},
                          {"attn_comm_bytes", r.attn_comm_bytes},
                          {"step_overhead_s", cost.StepOverheadS()},
                          {"cost_model", cost.profile() ? "profile" : "analytic"},
                          {"label", "modeled"}}));
  }
  return Status::Ok();
}

}  // namespace

core::StatusOr<std::map<std::string, std::string>> ParseKeyValues(
    const std::vector<std::string>& kvs) {
  std::map<std::string, std::string> o;
  for (const auto& kv : kvs) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return core::InvalidArgument("--option: got '" + kv + "', must be key=value");
    }
    o[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return o;
}

void AddZelligeCommands(CLI::App& root, Action* action) {
  CLI::App* z = root.add_subcommand(
      "zellige", "Zellige: moldable sequence placement for mixed image/video DiT training");
  z->require_subcommand(1);

  auto tok = std::make_shared<TokensArgs>();
  CLI::App* t = z->add_subcommand("tokens", "Count the DiT tokens of an image or a video");
  t->add_option("--kind", tok->kind, "image or video")->capture_default_str();
  t->add_option("--res", tok->res, "resolution: 1080p, 720p, ... or WIDTHxHEIGHT")
      ->capture_default_str();
  t->add_option("--seconds", tok->seconds, "video length in seconds")
      ->check(PositiveNumber(3600))
      ->capture_default_str();
  t->add_option("--fps", tok->fps, "frames per second")
      ->transform(Integer(1, 1000))
      ->capture_default_str();
  t->callback([action, tok] { *action = [tok] { return RunTokens(*tok); }; });

  auto pa = std::make_shared<PlanArgs>();
  auto pp = std::make_shared<CommandPaths>();
  CLI::App* p = z->add_subcommand(
      "plan", "Plan one global batch with each planner and compare the modeled step");
  AddCostModelOptions(p, &pa->cost, pp.get());
  p->add_option("--workload", pa->workload, "mixture v35..v60 (video token share) or batch JSON")
      ->capture_default_str();
  pp->RecordInput("--workload", &pa->workload);
  p->add_option("--load", pa->load,
                "tokens per GPU: high (350K), low (125K) or a number (small with --profile)")
      ->capture_default_str();
  p->add_option("--video-seconds", pa->video_seconds, "video length: 5, 10 or 15")
      ->check(Number(1, 600))
      ->capture_default_str();
  p->add_option("--seed", pa->seed, "workload seed")->transform(Seed())->capture_default_str();
  p->add_option("--planner", pa->planner, "a registered planner or all")->capture_default_str();
  p->add_option("--option", pa->options, "planner option key=value, e.g. knapformer.bags=g8n2");
  p->add_option("--time-limit", pa->time_limit_s,
                "seconds for the whole zellige planner (default none); when hit, the best plan "
                "so far and its gap over the bound (zellige.total_time_limit_s)")
      ->check(PositiveNumber(86400));
  p->add_option("--joint-time-limit", pa->joint_time_limit_s,
                "seconds for a whole joint or joint-binary plan (default " +
                    core::ShowNumber(kJointTimeLimitS) +
                    "); its progress (incumbent, bound, gap) goes to stderr; when hit, the best "
                    "plan so far and its gap over the bound (joint.time_limit_s)")
      ->check(PositiveNumber(86400));
  pp->Output(p, "--json", &pa->json_path, "write results JSON here");
  pp->Output(p, "--trace", &pa->trace_path,
             "write a Chrome/Perfetto trace of the step (one planner)");
  pp->Output(p, "--save-plan", &pa->save_plan, "write the plan JSON (one planner)");
  pp->Output(p, "--save-batch", &pa->batch_out, "write the batch JSON");
  pp->Output(p, "--plot", &pa->plot_path,
             "draw each planner's per-rank compute, exposed communication and idle time (PNG; "
             "needs python3-matplotlib)");
  p->callback([action, pa, pp] { *action = Checked(pp, [pa] { return RunPlan(*pa); }); });

  auto sa = std::make_shared<SimulateArgs>();
  auto sp = std::make_shared<CommandPaths>();
  CLI::App* s = z->add_subcommand("simulate", "Simulate a plan file on a batch file");
  AddCostModelOptions(s, &sa->cost, sp.get());
  sp->Input(s, "--batch", &sa->batch_path, "batch JSON")->required();
  sp->Input(s, "--plan", &sa->plan_path, "plan JSON")->required();
  sp->Output(s, "--json", &sa->json_path, "write results JSON here");
  sp->Output(s, "--trace", &sa->trace_path, "write a Chrome/Perfetto trace");
  s->callback([action, sa, sp] { *action = Checked(sp, [sa] { return RunSimulate(*sa); }); });

  AddZelligeBenchPlanner(z, action);
#ifdef TESSERA_HAVE_RUNTIME
  AddZelligeRun(z, action);
  AddZelligeProfile(z, action);
  AddZelligeValidate(z, action);
  AddZelligeCompare(z, action);
#endif
}

}  // namespace tessera::cli
