// `tessera zellige bench-planner`: per batch, the makespan and solve time of `zellige`,
// `joint` (with its proven gap) and every baseline, the excess of zellige over joint, split
// counts; a per-mixture summary; JSON per batch. Solve time is wall-clock inside this
// process, model building included. All makespans are modeled.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/zellige/cost_model_args.h"
#include "cli/zellige/plan_progress.h"
#include "cli/zellige/planner_stats_text.h"
#include "core/json_util.h"
#include "core/progress.h"
#include "core/table.h"
#include "hw/cluster.h"
#include "zellige/bench_planners.h"

namespace tessera::cli {

using core::Json;
using core::Status;
using namespace tessera::zellige;  // NOLINT

namespace {

struct PlannerBenchArgs {
  CostModelArgs cost;  // --cluster, --model or --profile
  std::vector<std::string> mixes = {"v35", "v40", "v45", "v50", "v55", "v60"};
  std::string load = "high";
  double video_seconds = 15;
  int batches = 3;
  uint64_t seed = 1;
  double joint_time_limit_s = zellige::kJointTimeLimitS;
  bool skip_joint = false;
  double time_limit_s = 0;  // zellige.total_time_limit_s when > 0
  std::vector<std::string> options;
  std::string json_path;
};

// A cell of the per-batch table: the value when the planner ran, else "-".
std::string Cell(const BenchPlannerResult* r, double v, int digits) {
  return r != nullptr ? core::Fixed(v, digits) : std::string("-");
}

void AddBatchRow(const BenchBatch& b, core::Table* t) {
  const BenchPlannerResult* z = b.Find("zellige");
  const BenchPlannerResult* j = b.Find("joint");
  const BenchPlannerResult* knap = b.Find("knapformer");
  const BenchPlannerResult* usp = b.Find("usp");
  const double zm = z ? z->makespan_s : 0;
  t->AddRow({b.mix, std::to_string(b.seed), Cell(z, zm, 2), Cell(j, j ? j->makespan_s : 0, 2),
             Cell(j, j ? 100 * j->gap : 0, 3),
             b.has_excess ? core::Fixed(b.zellige_excess_pct, 3) : "-",
             Cell(z, z ? z->solve_ms : 0, 1), Cell(j, j ? j->solve_ms : 0, 0),
             (z ? std::to_string(z->split_sequences) : "-") + "/" +
                 (j ? std::to_string(j->split_sequences) : "-"),
             knap && zm > 0
                 ? core::Fixed(knap->makespan_s / zm, 3) + "x" + (knap->feasible ? "" : " (OOM)")
                 : "-",
             usp && zm > 0 ? core::Fixed(usp->makespan_s / zm, 3) + "x" : "-"});
}

void AddMixRow(const BenchMixSummary& m, core::Table* t) {
  const SampleStats ex = m.Get("excess_pct"), zms = m.Get("zellige_ms"), jms = m.Get("joint_ms"),
                    gap = m.Get("joint_gap_pct"), slower = m.Get("slower_than_a_baseline");
  t->AddRow({m.mix, ex.n ? core::Fixed(ex.mean(), 3) : "-", ex.n ? core::Fixed(ex.max, 3) : "-",
             core::Fixed(zms.mean(), 1), core::Fixed(zms.max, 1),
             jms.n ? core::Fixed(jms.mean(), 0) : "-", gap.n ? core::Fixed(gap.max, 3) : "-",
             core::Fixed(m.Get("vs_knapformer").mean(), 3) + "x",
             core::Fixed(m.Get("vs_usp").mean(), 3) + "x",
             core::Fixed(m.Get("comm_vs_usp").mean(), 3),
             core::Fixed(m.Get("zellige_max_over_mean").mean(), 3),
             std::to_string(static_cast<int>(slower.sum)) + "/" + std::to_string(slower.n)});
}

Status RunBenchPlanner(const PlannerBenchArgs& a) {
  ASSIGN_OR_RETURN(std::unique_ptr<CostModel> cost_model, MakeCostModel(a.cost));
  const CostModel& cost = *cost_model;
  const hw::Cluster& cluster = cost.cluster();
  BenchOptions o;
  ASSIGN_OR_RETURN(o.load_tokens_per_rank, workload::ParseLoad(a.load));
  o.mixes = a.mixes;
  o.video_seconds = a.video_seconds;
  o.batches = a.batches;
  o.seed = a.seed;
  o.joint_time_limit_s = a.joint_time_limit_s;
  o.skip_joint = a.skip_joint;
  ASSIGN_OR_RETURN(o.options, ParseKeyValues(a.options));
  if (a.time_limit_s > 0) {
    RETURN_IF_ERROR(
        SetOptionOnce(&o.options, "zellige.total_time_limit_s", a.time_limit_s, "--time-limit"));
  }
  RETURN_IF_ERROR(ValidatePlannerOptions(o.options));
  RETURN_IF_ERROR(NameFlags(ValidateBenchOptions(o), {{"batches", "--batches"},
                                                      {"joint_time_limit_s", "--joint-time-limit"},
                                                      {"mixes", "--mixes"},
                                                      {"workload", "--mixes"}}));
  std::printf(
      "bench-planner on %s (%d ranks, %s), %s, %g s videos, %lld tokens/GPU; "
      "joint limit %g s. All makespans modeled (%s); solve times measured on this machine.\n",
      cluster.name.c_str(), cluster.num_ranks(), cluster.provenance.c_str(),
      cost.model().name.c_str(), a.video_seconds, static_cast<long long>(o.load_tokens_per_rank),
      a.joint_time_limit_s, DescribeCostModel(cost).c_str());
  core::ProgressBar bar("bench-planner", static_cast<long>(a.mixes.size()) * a.batches);
  SlowPlanProgress plan_progress("bench-planner");
  SolverProgressLines solver_progress("--joint-time-limit");
  std::function<void(int, int)> per_plan = plan_progress.ForPlan();
  auto report = BenchPlanners(
      cost, o,
      [&](long done, long) {
        bar.Update(done);
        per_plan = plan_progress.ForPlan();
      },
      [&](int done, int total) { per_plan(done, total); }, solver_progress.Callback());
  bar.Done();
  if (!report.ok()) return report.status();
  core::Table per_batch({"mix", "seed", "zellige s", "joint s", "joint gap %", "excess %",
                         "zellige ms", "joint ms", "splits z/j", "vs knapformer", "vs usp"});
  for (const BenchBatch& b : report->batches) AddBatchRow(b, &per_batch);
  std::printf("%s\n", per_batch.Render().c_str());
  core::Table sum({"mix", "excess % mean", "excess % max", "zellige ms mean", "zellige ms max",
                   "joint ms mean", "joint gap % max", "vs knapformer", "vs usp", "comm vs usp",
                   "max/mean", "slower than a baseline"});
  for (const BenchMixSummary& m : report->mixes) AddMixRow(m, &sum);
  std::printf("%s", sum.Render().c_str());
  const SampleStats& ms = report->zellige_ms;
  const SampleStats& ex = report->excess_pct;
  std::printf("overall: zellige solve ms mean %.1f max %.1f over %d batches", ms.mean(), ms.max,
              ms.n);
  if (ex.n) std::printf("; excess over joint mean %.3f%% max %.3f%%", ex.mean(), ex.max);
  std::printf("\n(vs X = X's makespan / zellige's, mean over batches; OOM baselines included)\n");
  if (ms.n) {
    PlannerStats mean = report->zellige_stages;
    for (double* v :
         {&mean.catalog_ms, &mean.model_ms, &mean.cbc_ms, &mean.split_search_ms, &mean.stage2_ms})
      *v /= ms.n;
    std::printf("%s (mean per batch)\n", StatsLine("zellige", mean).c_str());
  }
  if (!a.json_path.empty()) {
    RETURN_IF_ERROR(core::WriteJsonFile(
        a.json_path, Json{{"cluster", hw::ToJson(cluster)},
                          {"cost_model", cost.profile() ? "profile" : "analytic"},
                          {"batches", ToJson(*report)},
                          {"label", "makespans modeled; solve_ms measured"}}));
  }
  return Status::Ok();
}

}  // namespace

void AddZelligeBenchPlanner(CLI::App* z, Action* action) {
  auto a = std::make_shared<PlannerBenchArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = z->add_subcommand(
      "bench-planner", "Compare zellige with the joint MILP and the baselines over many batches");
  AddCostModelOptions(c, &a->cost, paths.get());
  ListOption(c, "--mixes", &a->mixes, "mixtures, comma separated");
  c->add_option("--load", a->load, "tokens per GPU: high, low or a number")->capture_default_str();
  c->add_option("--video-seconds", a->video_seconds, "video length")
      ->check(Number(1, 600))
      ->capture_default_str();
  c->add_option("--batches", a->batches, "batches per mixture (seeds seed..seed+N-1)")
      ->transform(Integer(1, 100000))
      ->capture_default_str();
  c->add_option("--seed", a->seed, "first seed")->transform(Seed())->capture_default_str();
  c->add_option("--joint-time-limit", a->joint_time_limit_s,
                "seconds per joint plan, both CBC solves (joint.time_limit_s); when hit, the best "
                "plan so far and its gap")
      ->check(PositiveNumber(86400))
      ->capture_default_str();
  c->add_flag("--skip-joint", a->skip_joint, "do not run the joint reference");
  c->add_option("--option", a->options, "planner option key=value");
  c->add_option("--time-limit", a->time_limit_s,
                "seconds per zellige plan; when hit, the best plan so far and its gap "
                "(zellige.total_time_limit_s)")
      ->check(PositiveNumber(86400));
  paths->Output(c, "--json", &a->json_path, "write per-batch JSON here");
  c->callback(
      [action, a, paths] { *action = Checked(paths, [a] { return RunBenchPlanner(*a); }); });
}

}  // namespace tessera::cli
