// `tessera zellige profile`: measures this machine's prices for one SmallDit shape through
// the engine's real kernels and real MPI, and writes a profile JSON (zellige/profile.h).
//
//   tessera zellige profile [--ranks 2] --out FILE [--buckets 8,16,...] [--whole-tokens 2048]
//       [--repeats 5] [--hidden 256 --heads 4 --layers 4 --ffn 1024 --channels 16]
//
// Typed at a shell it re-runs itself under mpiexec with --ranks ranks (cli/mpi_launch.h).
// What is measured and how the prices are derived: zellige::engine::MeasureProfile
// (zellige/engine/profiler.h) and zellige::BuildProfile (zellige/profile_builder.h). Rank 0
// writes the file atomically (an interrupted run leaves no file that looks complete) and
// prints the fits; a progress bar shows on a tty.
#include "zellige/profile.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/mpi_launch.h"
#include "cli/options.h"
#include "cli/zellige/profile_job.h"
#include "cli/zellige/small_dit_args.h"
#include "core/json_util.h"
#include "core/progress.h"
#include "core/table.h"
#include "core/units.h"
#include "zellige/engine/profiler.h"

namespace tessera::cli {

using core::Status;
using core::StatusOr;

namespace {

struct ProfileArgs {
  int ranks = 2;
  std::string out;
  std::vector<int64_t> buckets;
  int64_t whole_tokens = 2048;
  int repeats = 5;
  int warmup = 1;
  uint64_t seed = 1;
  SmallDitArgs model;
  double op_timeout_s = 300;
};

void PrintSummary(const zellige::Profile& p, const std::string& out) {
  std::printf(
      "profile of %s\n%d ranks, SmallDit hidden %lld heads %lld layers %lld ffn %lld, %d "
      "timed steps per point (median)\n",
      p.provenance.c_str(), p.ranks, static_cast<long long>(p.model.hidden),
      static_cast<long long>(p.model.heads), static_cast<long long>(p.model.layers),
      static_cast<long long>(p.model.ffn), p.repeats);
  std::printf("step overhead %.2f ms, base %.1f MiB per rank\n", p.step_overhead_s * 1e3,
              p.base_bytes / core::kMiB);
  std::printf("solo speed-up %.3f (a rank working alone vs every rank busy)\n", p.solo_speedup);
  core::Table t({"config", "points", "fwd+bwd @min L ms", "fwd+bwd @max L ms", "max fit err %",
                 "MiB per 1K tokens"});
  for (const zellige::ConfigPrices& c : p.configs) {
    double worst = 0;
    for (const zellige::PricePoint& pt : c.points) {
      double fit = zellige::EvalQuadratic(c.fwd_fit, pt.tokens) +
                   zellige::EvalQuadratic(c.bwd_fit, pt.tokens);
      worst = std::max(worst, std::fabs(fit / (pt.fwd_s + pt.bwd_s) - 1));
    }
    const auto& lo = c.points.front();
    const auto& hi = c.points.back();
    t.AddRow({c.config.ToString(), std::to_string(c.points.size()),
              core::Fixed((lo.fwd_s + lo.bwd_s) * 1e3, 3),
              core::Fixed((hi.fwd_s + hi.bwd_s) * 1e3, 1), core::Fixed(100 * worst, 2),
              core::Fixed(c.mem_fit[1] * 1000 / core::kMiB, 2)});
  }
  std::printf("%s", t.Render().c_str());
  core::Table ct({"primitive", "ranks", "alpha us", "GB/s"});
  for (const zellige::CommFit& f : p.comm) {
    ct.AddRow({f.primitive, std::to_string(f.ranks), core::Fixed(f.alpha_s * 1e6, 1),
               core::Fixed(f.beta_s_per_byte > 0 ? 1 / f.beta_s_per_byte / core::kGB : 0, 2)});
  }
  std::printf("%s(measured) wrote %s\n", ct.Render().c_str(), out.c_str());
}

Status ProfileOnWorld(const ProfileArgs& a, comm::Communicator& world) {
  zellige::engine::ProfilerOptions o;
  o.buckets = a.buckets;
  o.whole_tokens = a.whole_tokens;
  o.repeats = a.repeats;
  o.warmup = a.warmup;
  o.seed = a.seed;
  o.model = ToSmallDitConfig(a.model);
  RankZeroProgress progress(world, "profile");
  ASSIGN_OR_RETURN(zellige::Profile prof,
                   NameFlags(zellige::engine::MeasureProfile(world, o, std::ref(progress)),
                             {{"buckets", "--buckets"}}));
  progress.Done();
  if (world.rank() != 0) return Status::Ok();
  RETURN_IF_ERROR(core::WriteJsonFile(a.out, zellige::ToJson(prof)));
  PrintSummary(prof, a.out);
  std::fflush(stdout);
  return Status::Ok();
}

Status RunProfile(const ProfileArgs& a) {
  if (a.out.empty()) return core::InvalidArgument("--out: required (the profile JSON to write)");
  RETURN_IF_ERROR(ValidateSmallDitArgs(a.model));
  if (a.repeats < 1 || a.warmup < 0 || a.whole_tokens < 1) {
    return core::InvalidArgument("--repeats / --warmup / --whole-tokens: got " +
                                 std::to_string(a.repeats) + " / " + std::to_string(a.warmup) +
                                 " / " + std::to_string(a.whole_tokens) +
                                 ", must be >= 1 / >= 0 / >= 1");
  }
  for (int64_t b : a.buckets) {
    if (b < 1)
      return core::InvalidArgument("--buckets: got " + std::to_string(b) + ", must be >= 1");
  }
  return RunMpiJob(a.ranks, a.op_timeout_s,
                   [&](comm::Communicator& world) { return ProfileOnWorld(a, world); });
}

}  // namespace

void AddZelligeProfile(CLI::App* z, Action* action) {
  auto a = std::make_shared<ProfileArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = z->add_subcommand(
      "profile",
      "Measure this machine's per-(length bucket, config) prices, communication alpha-beta and "
      "memory constants for a SmallDit; writes a profile JSON for --profile");
  c->add_option("--ranks", a->ranks, "MPI ranks (relaunches under mpiexec when typed at a shell)")
      ->transform(Integer(1, kMaxRanks))
      ->capture_default_str();
  paths->Output(c, "--out", &a->out, "profile JSON to write")->required();
  ListOption(c, "--buckets", &a->buckets, "sequence lengths to measure (default 8..2048, x sqrt 2)",
             Integer(1, 1 << 30));
  c->add_option("--whole-tokens", a->whole_tokens,
                "whole sequences are measured as max(1, this / L) coalesced copies")
      ->transform(Integer(1, 1 << 30))
      ->capture_default_str();
  c->add_option("--repeats", a->repeats, "timed steps per point (median)")
      ->transform(Integer(1, 100000))
      ->capture_default_str();
  c->add_option("--warmup", a->warmup, "untimed steps per point")
      ->transform(Integer(0, 100000))
      ->capture_default_str();
  c->add_option("--seed", a->seed, "data seed")->transform(Seed())->capture_default_str();
  c->add_option("--op-timeout", a->op_timeout_s, "seconds before a stuck op aborts the job")
      ->check(PositiveNumber(kMaxOpTimeoutS))
      ->capture_default_str();
  AddSmallDitOptions(c, &a->model);
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunProfile(*a); }); });
}

}  // namespace tessera::cli
