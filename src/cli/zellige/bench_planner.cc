// `tessera zellige bench-planner`: per batch, the makespan and solve time of `zellige`,
// `joint` (with its proven gap) and every baseline, the excess of zellige over joint, split
// counts; a per-mixture summary; JSON per batch. Solve time is wall-clock inside this
// process, model building included. All makespans are modeled.
#include <cstdio>
#include <map>
#include <memory>

#include "cli/command.h"
#include "cli/zellige/cost_model_args.h"
#include "core/json_util.h"
#include "core/progress.h"
#include "core/table.h"
#include "hw/cluster.h"
#include "zellige/evaluate.h"

namespace tessera::cli {

using core::Json;
using core::Status;
using namespace tessera::zellige;  // NOLINT

namespace {

struct BenchArgs {
  CostModelArgs cost;  // --cluster, --model or --profile
  std::vector<std::string> mixes = {"v35", "v40", "v45", "v50", "v55", "v60"};
  std::string load = "high";
  double video_seconds = 15;
  int batches = 3;
  uint64_t seed = 1;
  double joint_time_limit_s = 60;
  bool skip_joint = false;
  std::vector<std::string> options;
  std::string json_path;
};

struct Stats {
  double sum = 0, max = -1e300;
  int n = 0;
  void Add(double v) {
    sum += v;
    max = std::max(max, v);
    ++n;
  }
  double mean() const { return n ? sum / n : 0; }
};

Status RunBenchPlanner(const BenchArgs& a) {
  ASSIGN_OR_RETURN(std::unique_ptr<CostModel> cost_model, MakeCostModel(a.cost));
  const CostModel& cost = *cost_model;
  const hw::Cluster& cluster = cost.cluster();
  const models::DitModel& model = cost.model();
  ASSIGN_OR_RETURN(int64_t load, workload::ParseLoad(a.load));
  if (a.batches < 1 || a.batches > 10000) {
    return core::InvalidArgument("--batches: got " + std::to_string(a.batches) +
                                 ", must be in [1, 10000]");
  }
  if (!(a.joint_time_limit_s > 0)) {
    return core::InvalidArgument("--joint-time-limit: got " + std::to_string(a.joint_time_limit_s) +
                                 ", must be > 0");
  }
  ASSIGN_OR_RETURN(PlannerOptions options, ParseKeyValues(a.options));
  options["joint.time_limit_s"] = std::to_string(a.joint_time_limit_s);
  std::vector<int> mixes;
  for (const auto& m : a.mixes) {
    ASSIGN_OR_RETURN(int pct, workload::ParseMixture(m));
    mixes.push_back(pct);
  }
  std::vector<const PlannerEntry*> entries;
  for (const auto& e : PlannerRegistry()) {
    if (std::string(e.name) == "joint-binary") continue;
    if (a.skip_joint && std::string(e.name) == "joint") continue;
    entries.push_back(&e);
  }
  std::printf(
      "bench-planner on %s (%d ranks, %s), %s, %g s videos, %lld tokens/GPU; "
      "joint limit %g s. All makespans modeled (%s); solve times measured on this machine.\n",
      cluster.name.c_str(), cluster.num_ranks(), cluster.provenance.c_str(), model.name.c_str(),
      a.video_seconds, static_cast<long long>(load), a.joint_time_limit_s,
      DescribeCostModel(cost).c_str());
  core::Table per_batch({"mix", "seed", "zellige s", "joint s", "joint gap %", "excess %",
                         "zellige ms", "joint ms", "splits z/j", "vs knapformer", "vs usp"});
  Json batches_json = Json::array();
  std::map<int, std::map<std::string, Stats>> summary;
  core::ProgressBar bar("bench-planner", static_cast<long>(mixes.size()) * a.batches);
  long done = 0;
  for (size_t mi = 0; mi < mixes.size(); ++mi) {
    for (int b = 0; b < a.batches; ++b) {
      const uint64_t seed = a.seed + b;
      ASSIGN_OR_RETURN(workload::Batch batch, workload::GenerateBatch({mixes[mi], load, a.video_seconds,
                                                   cluster.num_ranks(), seed}));
      RETURN_IF_ERROR(CheckBatchFits(batch, cost));
      std::map<std::string, PlannerRun> runs;
      Json planners = Json::object();
      for (const auto* e : entries) {
        auto run = RunPlanner(*e, batch, cost, options);
        if (!run.ok()) {
          planners[e->name] = {{"error", run.status().message()}, {"feasible", false}};
          continue;
        }
        planners[e->name] = {{"makespan_s", run->sim.makespan_s},
                             {"solve_ms", run->solve_ms},
                             {"feasible", run->sim.feasible},
                             {"gap", run->plan.solver_gap},
                             {"split_sequences", run->sim.split_sequences},
                             {"attn_comm_bytes", run->sim.attn_comm_bytes},
                             {"max_over_mean", run->sim.max_over_mean}};
        runs[e->name] = std::move(run).value();
      }
      Json bj = {{"mix", a.mixes[mi]}, {"seed", seed}, {"planners", planners}};
      auto& st = summary[static_cast<int>(mi)];
      auto has = [&](const char* n) { return runs.count(n) > 0; };
      double z = has("zellige") ? runs["zellige"].sim.makespan_s : 0;
      if (has("zellige")) {
        st["zellige_ms"].Add(runs["zellige"].solve_ms);
        st["zellige_splits"].Add(runs["zellige"].sim.split_sequences);
        st["zellige_max_over_mean"].Add(runs["zellige"].sim.max_over_mean);
        if (has("usp")) {
          st["vs_usp"].Add(runs["usp"].sim.makespan_s / z);
          st["comm_vs_usp"].Add(runs["zellige"].sim.attn_comm_bytes /
                                runs["usp"].sim.attn_comm_bytes);
        }
        if (has("knapformer")) st["vs_knapformer"].Add(runs["knapformer"].sim.makespan_s / z);
        // Never slower than any feasible baseline?
        double best_baseline = 1e300;
        for (const auto& [name, r] : runs) {
          if (name == "zellige" || name == "joint" || !r.sim.feasible) continue;
          best_baseline = std::min(best_baseline, r.sim.makespan_s);
        }
        st["slower_than_a_baseline"].Add(z > best_baseline * (1 + 1e-9) ? 1 : 0);
      }
      std::string excess = "-";
      if (has("zellige") && has("joint")) {
        double j = runs["joint"].sim.makespan_s;
        double ex = 100 * (z - j) / j;
        bj["zellige_excess_pct"] = ex;
        st["excess_pct"].Add(ex);
        st["joint_gap_pct"].Add(100 * runs["joint"].plan.solver_gap);
        st["joint_ms"].Add(runs["joint"].solve_ms);
        excess = core::Fixed(ex, 3);
      }
      auto cell = [&](const char* n, double v, int d) {
        return has(n) ? core::Fixed(v, d) : std::string("-");
      };
      per_batch.AddRow(
          {a.mixes[mi], std::to_string(seed), cell("zellige", z, 2),
           cell("joint", has("joint") ? runs["joint"].sim.makespan_s : 0, 2),
           cell("joint", has("joint") ? 100 * runs["joint"].plan.solver_gap : 0, 3), excess,
           cell("zellige", has("zellige") ? runs["zellige"].solve_ms : 0, 1),
           cell("joint", has("joint") ? runs["joint"].solve_ms : 0, 0),
           (has("zellige") ? std::to_string(runs["zellige"].sim.split_sequences) : "-") + "/" +
               (has("joint") ? std::to_string(runs["joint"].sim.split_sequences) : "-"),
           has("knapformer") && z > 0 ? core::Fixed(runs["knapformer"].sim.makespan_s / z, 3) +
                                            "x" + (runs["knapformer"].sim.feasible ? "" : " (OOM)")
                                      : "-",
           has("usp") && z > 0 ? core::Fixed(runs["usp"].sim.makespan_s / z, 3) + "x" : "-"});
      batches_json.push_back(bj);
      bar.Update(++done);
    }
  }
  bar.Done();
  std::printf("%s\n", per_batch.Render().c_str());
  core::Table sum({"mix", "excess % mean", "excess % max", "zellige ms mean", "zellige ms max",
                   "joint ms mean", "joint gap % max", "vs knapformer", "vs usp", "comm vs usp",
                   "max/mean", "slower than a baseline"});
  Stats all_ms, all_excess;
  for (size_t mi = 0; mi < mixes.size(); ++mi) {
    auto& st = summary[static_cast<int>(mi)];
    sum.AddRow({a.mixes[mi], st["excess_pct"].n ? core::Fixed(st["excess_pct"].mean(), 3) : "-",
                st["excess_pct"].n ? core::Fixed(st["excess_pct"].max, 3) : "-",
                core::Fixed(st["zellige_ms"].mean(), 1), core::Fixed(st["zellige_ms"].max, 1),
                st["joint_ms"].n ? core::Fixed(st["joint_ms"].mean(), 0) : "-",
                st["joint_gap_pct"].n ? core::Fixed(st["joint_gap_pct"].max, 3) : "-",
                core::Fixed(st["vs_knapformer"].mean(), 3) + "x",
                core::Fixed(st["vs_usp"].mean(), 3) + "x", core::Fixed(st["comm_vs_usp"].mean(), 3),
                core::Fixed(st["zellige_max_over_mean"].mean(), 3),
                std::to_string(static_cast<int>(st["slower_than_a_baseline"].sum)) + "/" +
                    std::to_string(st["slower_than_a_baseline"].n)});
    all_ms.sum += st["zellige_ms"].sum;
    all_ms.n += st["zellige_ms"].n;
    all_ms.max = std::max(all_ms.max, st["zellige_ms"].max);
    all_excess.sum += st["excess_pct"].sum;
    all_excess.n += st["excess_pct"].n;
    all_excess.max = std::max(all_excess.max, st["excess_pct"].max);
  }
  std::printf("%s", sum.Render().c_str());
  std::printf("overall: zellige solve ms mean %.1f max %.1f over %d batches", all_ms.mean(),
              all_ms.max, all_ms.n);
  if (all_excess.n) {
    std::printf("; excess over joint mean %.3f%% max %.3f%%", all_excess.mean(), all_excess.max);
  }
  std::printf("\n(vs X = X's makespan / zellige's, mean over batches; OOM baselines included)\n");
  if (!a.json_path.empty()) {
    RETURN_IF_ERROR(core::WriteJsonFile(
        a.json_path, Json{{"cluster", hw::ToJson(cluster)},
                          {"cost_model", cost.profile() ? "profile" : "analytic"},
                          {"batches", batches_json},
                          {"label", "makespans modeled; solve_ms measured"}}));
  }
  return Status::Ok();
}

}  // namespace

void AddZelligeBenchPlanner(CLI::App* z, Action* action) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* c = z->add_subcommand(
      "bench-planner", "Compare zellige with the joint MILP and the baselines over many batches");
  AddCostModelOptions(c, &a->cost);
  c->add_option("--mixes", a->mixes, "mixtures, comma separated")->delimiter(',');
  c->add_option("--load", a->load, "tokens per GPU: high, low or a number")->capture_default_str();
  c->add_option("--video-seconds", a->video_seconds, "video length")->capture_default_str();
  c->add_option("--batches", a->batches, "batches per mixture (seeds seed..seed+N-1)")
      ->capture_default_str();
  c->add_option("--seed", a->seed, "first seed")->capture_default_str();
  c->add_option("--joint-time-limit", a->joint_time_limit_s, "seconds per joint MILP solve")
      ->capture_default_str();
  c->add_flag("--skip-joint", a->skip_joint, "do not run the joint reference");
  c->add_option("--option", a->options, "planner option key=value");
  c->add_option("--json", a->json_path, "write per-batch JSON here");
  c->callback([action, a] { *action = [a] { return RunBenchPlanner(*a); }; });
}

}  // namespace tessera::cli
