// `tessera zellige compare`: real training steps of the SmallDit on the same batches under
// several planners' placements, side by side in one invocation.
//
//   tessera zellige compare --profile FILE [--ranks 2] [--mixes v35,v50,v60]
//       [--planners zellige,knapformer,usp,dp] [--load low] [--video-seconds 5]
//       [--token-scale 0.0104] [--repeats 5] [--json FILE]
//
// Per mix: the batch is generated for the job's ranks at --load tokens per rank (the
// paper's mixture generator, zellige/workload.h), every sequence's tokens multiplied by
// --token-scale; rank 0 plans it with each planner on the profile-priced cost model and
// broadcasts the plans (planners with time limits need not agree across processes); every
// rank then measures them interleaved (zellige::engine::MeasurePlansInterleaved: --repeats rounds of
// --warmup steps and one timed step per plan), so machine noise does not favour one planner.
// Reports per planner the measured step time (median of the slowest rank), the predicted one,
// splits, and the ratio of each planner's measured (and predicted) step time to zellige's. A
// planner that fails to plan is reported as such.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/zellige/profile_job.h"
#include "comm/broadcast_string.h"
#include "core/json_util.h"
#include "core/progress.h"
#include "core/table.h"
#include "workload/batch_source.h"
#include "zellige/evaluate.h"
#include "zellige/simulator.h"

namespace tessera::cli {

using core::Json;
using core::Status;
using core::StatusOr;

namespace {

struct CompareArgs {
  ProfileJobArgs job;
  std::vector<std::string> mixes = {"v35", "v50", "v60"};
  std::vector<std::string> planners = {"zellige", "knapformer", "usp", "dp"};
  std::string load = "low";
  double video_seconds = 5;
  double token_scale = 1.0 / 96;
  std::string json_path;
};

struct Row {
  std::string planner;
  bool planned = false;
  std::string error;
  int splits = 0;
  double predicted_s = 0;
  double measured_s = 0;
  double measured_peak_bytes = 0;
};

Status CompareOnWorld(const CompareArgs& a, comm::Communicator& world,
                      const zellige::CostModel& cost) {
  const int n = world.size(), me = world.rank();
  RETURN_IF_ERROR(workload::ValidateTokenScale(a.token_scale));
  std::vector<const zellige::PlannerEntry*> entries;
  for (const std::string& p : a.planners) {
    ASSIGN_OR_RETURN(const zellige::PlannerEntry* e, zellige::FindPlanner(p));
    entries.push_back(e);
  }
  const models::SmallDitConfig cfg = ToSmallDitConfig(a.job.model);
  const zellige::engine::MeasureOptions mo = ToMeasureOptions(a.job);
  std::unique_ptr<core::ProgressBar> bar;
  if (me == 0) {
    bar = std::make_unique<core::ProgressBar>("compare",
                                              static_cast<long>(a.mixes.size() * entries.size()));
  }
  Json out_mixes = Json::array();
  core::Table t(
      {"mix", "planner", "splits", "pred s", "meas s", "meas / zellige", "pred / zellige"});
  long done = 0;
  for (const std::string& mix : a.mixes) {
    ASSIGN_OR_RETURN(workload::Batch batch, workload::LoadBatch({mix, a.load, a.video_seconds, a.job.seed, a.token_scale}, n));
    RETURN_IF_ERROR(zellige::CheckBatchFits(batch, cost));
    std::vector<Row> rows;
    std::vector<zellige::Plan> plans;
    std::vector<int> row_of_plan;
    for (const zellige::PlannerEntry* e : entries) {
      Row row;
      row.planner = e->name;
      std::string msg;
      if (me == 0) {
        auto run = zellige::RunPlanner(*e, batch, cost, {});
        msg = run.ok() ? "P" + zellige::ToJson(run->plan, batch).dump()
                       : "E" + run.status().message();
      }
      RETURN_IF_ERROR(comm::BroadcastString(world, &msg, 0));
      if (msg.empty() || msg[0] != 'P') {
        row.error = msg.empty() ? "?" : msg.substr(1);
      } else {
        ASSIGN_OR_RETURN(Json pj, core::ParseJson(msg.substr(1), "plan"));
        ASSIGN_OR_RETURN(zellige::Plan plan, zellige::PlanFromJson(pj, "plan"));
        ASSIGN_OR_RETURN(zellige::SimResult sim, zellige::Simulate(plan, batch, cost));
        row.planned = true;
        row.splits = zellige::SplitCount(plan);
        row.predicted_s = sim.makespan_s;
        row_of_plan.push_back(static_cast<int>(rows.size()));
        plans.push_back(std::move(plan));
      }
      rows.push_back(row);
    }
    std::vector<zellige::engine::PlanCase> cases;
    for (const zellige::Plan& p : plans) cases.push_back({&p, &batch});
    const long before = done;
    ASSIGN_OR_RETURN(std::vector<zellige::engine::PlanMeasurement> ms,
                     zellige::engine::MeasurePlansInterleaved(cases, cfg, world, mo, [&](int d, int total) {
                       done = before + static_cast<long>(entries.size()) * d / total;
                       if (bar) bar->Update(done);
                     }));
    done = before + static_cast<long>(entries.size());
    for (size_t i = 0; i < ms.size(); ++i) {
      Row& row = rows[row_of_plan[i]];
      row.measured_s = ms[i].MedianMakespanS();
      row.measured_peak_bytes = static_cast<double>(ms[i].MaxPeakBytes());
    }
    const Row* z = nullptr;
    for (const Row& r : rows)
      if (r.planner == "zellige" && r.planned) z = &r;
    Json jrows = Json::array();
    for (const Row& r : rows) {
      Json jr = {{"planner", r.planner}, {"planned", r.planned}};
      if (!r.planned) {
        jr["error"] = r.error;
        t.AddRow({mix, r.planner, "-", "-", "-", "failed: " + r.error.substr(0, 40), "-"});
      } else {
        jr.update({{"splits", r.splits},
                   {"predicted_step_s", r.predicted_s},
                   {"measured_step_s", r.measured_s},
                   {"measured_peak_bytes", r.measured_peak_bytes}});
        std::string mr = "-", pr = "-";
        if (z != nullptr) {
          jr["measured_ratio_to_zellige"] = r.measured_s / z->measured_s;
          jr["predicted_ratio_to_zellige"] = r.predicted_s / z->predicted_s;
          mr = core::Fixed(r.measured_s / z->measured_s, 3);
          pr = core::Fixed(r.predicted_s / z->predicted_s, 3);
        }
        t.AddRow({mix, r.planner, std::to_string(r.splits), core::Fixed(r.predicted_s, 3),
                  core::Fixed(r.measured_s, 3), mr, pr});
      }
      jrows.push_back(jr);
    }
    out_mixes.push_back({{"mix", mix},
                         {"sequences", batch.sequences.size()},
                         {"tokens", batch.total_tokens()},
                         {"planners", jrows}});
  }
  if (bar) bar->Done();
  if (me != 0) return Status::Ok();
  std::printf("compare at %d ranks, load %s x token scale %g, %g s videos, profile %s\n", n,
              a.load.c_str(), a.token_scale, a.video_seconds, a.job.profile_path.c_str());
  std::printf("%s", t.Render().c_str());
  std::printf(
      "(measured: real SmallDit training steps on this machine, median of %d; pred: "
      "profile-priced cost model)\n",
      a.job.repeats);
  if (!a.json_path.empty()) {
    Json out = {{"label", "measured"},
                {"profile", a.job.profile_path},
                {"ranks", n},
                {"load", a.load},
                {"token_scale", a.token_scale},
                {"video_seconds", a.video_seconds},
                {"repeats", a.job.repeats},
                {"mixes", out_mixes}};
    RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, out));
  }
  std::fflush(stdout);
  return Status::Ok();
}

}  // namespace

void AddZelligeCompare(CLI::App* z, Action* action) {
  auto a = std::make_shared<CompareArgs>();
  CLI::App* c = z->add_subcommand(
      "compare",
      "Real SmallDit training steps on the same batches under several planners' placements");
  AddProfileJobOptions(c, &a->job);
  c->add_option("--mixes", a->mixes, "mixtures vNN")->delimiter(',')->capture_default_str();
  c->add_option("--planners", a->planners, "registered planners")
      ->delimiter(',')
      ->capture_default_str();
  c->add_option("--load", a->load, "tokens per rank before scaling: high, low or a number")
      ->capture_default_str();
  c->add_option("--video-seconds", a->video_seconds, "video length")->capture_default_str();
  c->add_option("--token-scale", a->token_scale, "multiply every sequence's tokens by this")
      ->capture_default_str();
  c->add_option("--json", a->json_path, "write every measurement here");
  c->callback([action, a] {
    *action = [a] {
      return RunProfileJob(a->job, [a](comm::Communicator& world, const zellige::CostModel& cost) {
        return CompareOnWorld(*a, world, cost);
      });
    };
  });
}

}  // namespace tessera::cli
