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
// rank then measures them interleaved (zellige::engine::MeasurePlansInterleaved: --repeats rounds
// of
// --warmup steps and one timed step per plan), so machine noise does not favour one planner.
// Reports per planner the measured step time (median of the slowest rank), the predicted one,
// splits, and the ratio of each planner's measured (and predicted) step time to zellige's. A
// planner that fails to plan is reported as such.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/zellige/profile_job.h"
#include "core/json_util.h"
#include "core/progress.h"
#include "core/table.h"
#include "zellige/engine/comparison.h"

namespace tessera::cli {

using core::Status;

namespace {

struct CompareArgs {
  ProfileJobArgs job;
  zellige::engine::CompareOptions options;  // mixes, planners, load, video_seconds, token_scale
  std::string json_path;
};

void PrintReport(const zellige::engine::CompareReport& r) {
  core::Table t(
      {"mix", "planner", "splits", "pred s", "meas s", "meas / zellige", "pred / zellige"});
  for (const zellige::engine::CompareMix& m : r.mixes) {
    for (const zellige::engine::CompareRow& row : m.rows) {
      if (!row.planned) {
        t.AddRow({m.mix, row.planner, "-", "-", "-", "failed: " + row.error.substr(0, 40), "-"});
        continue;
      }
      const std::string mr = row.has_ratios ? core::Fixed(row.measured_ratio_to_zellige, 3) : "-";
      const std::string pr = row.has_ratios ? core::Fixed(row.predicted_ratio_to_zellige, 3) : "-";
      t.AddRow({m.mix, row.planner, std::to_string(row.splits), core::Fixed(row.predicted_s, 3),
                core::Fixed(row.measured_s, 3), mr, pr});
    }
  }
  std::printf("compare at %d ranks, load %s x token scale %g, %g s videos, profile %s\n", r.ranks,
              r.load.c_str(), r.token_scale, r.video_seconds, r.profile_path.c_str());
  std::printf("%s", t.Render().c_str());
  std::printf(
      "(measured: real SmallDit training steps on this machine, median of %d; pred: "
      "profile-priced cost model)\n",
      r.repeats);
}

Status CompareOnWorld(const CompareArgs& a, comm::Communicator& world,
                      const zellige::CostModel& cost) {
  zellige::engine::CompareOptions o = a.options;
  CopyJobOptions(a.job, &o);
  RankZeroProgress progress(world, "compare");
  ASSIGN_OR_RETURN(zellige::engine::CompareReport report,
                   NameFlags(zellige::engine::RunComparison(world, o, cost, std::ref(progress)),
                             {{"token_scale", "--token-scale"}}));
  progress.Done();
  if (world.rank() != 0) return Status::Ok();
  PrintReport(report);
  if (!a.json_path.empty()) RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, ToJson(report)));
  std::fflush(stdout);
  return Status::Ok();
}

}  // namespace

void AddZelligeCompare(CLI::App* z, Action* action) {
  auto a = std::make_shared<CompareArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = z->add_subcommand(
      "compare",
      "Real SmallDit training steps on the same batches under several planners' placements");
  AddProfileJobOptions(c, &a->job, paths.get());
  ListOption(c, "--mixes", &a->options.mixes, "mixtures vNN");
  ListOption(c, "--planners", &a->options.planners, "registered planners");
  c->add_option("--load", a->options.load, "tokens per rank before scaling: high, low or a number")
      ->capture_default_str();
  c->add_option("--video-seconds", a->options.video_seconds, "video length")
      ->check(Number(1, 600))
      ->capture_default_str();
  c->add_option("--token-scale", a->options.token_scale, "multiply every sequence's tokens by this")
      ->check(PositiveNumber(1000))
      ->capture_default_str();
  paths->Output(c, "--json", &a->json_path, "write every measurement here");
  c->callback([action, a, paths] {
    *action = Checked(paths, [a] {
      return RunProfileJob(a->job, [a](comm::Communicator& world, const zellige::CostModel& cost) {
        return CompareOnWorld(*a, world, cost);
      });
    });
  });
}

}  // namespace tessera::cli
