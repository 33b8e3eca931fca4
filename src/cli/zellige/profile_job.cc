#include "cli/zellige/profile_job.h"

#include "cli/mpi_launch.h"
#include "zellige/profile.h"

namespace tessera::cli {

void AddProfileJobOptions(CLI::App* app, ProfileJobArgs* a, CommandPaths* paths) {
  paths->Input(app, "--profile", &a->profile_path, "profile JSON from `tessera zellige profile`")
      ->required();
  app->add_option("--ranks", a->ranks, "MPI ranks (relaunches under mpiexec from a shell)")
      ->transform(Integer(1, kMaxRanks))
      ->capture_default_str();
  app->add_option("--repeats", a->repeats, "timed steps per plan (median)")
      ->transform(Integer(1, 100000))
      ->capture_default_str();
  app->add_option("--warmup", a->warmup, "untimed steps per plan")
      ->transform(Integer(0, 100000))
      ->capture_default_str();
  app->add_option("--seed", a->seed, "batch and data seed")
      ->transform(Seed())
      ->capture_default_str();
  app->add_option("--op-timeout", a->op_timeout_s, "seconds before a stuck op aborts the job")
      ->check(PositiveNumber(kMaxOpTimeoutS))
      ->capture_default_str();
  AddSmallDitOptions(app, &a->model);
}

zellige::engine::MeasureOptions ToMeasureOptions(const ProfileJobArgs& a) {
  zellige::engine::MeasureOptions o;
  o.warmup_steps = a.warmup;
  o.steps = a.repeats;
  o.seed = a.seed;
  return o;
}

core::Status RunProfileJob(
    const ProfileJobArgs& a,
    const std::function<core::Status(comm::Communicator& world, const zellige::CostModel& cost)>&
        body) {
  RETURN_IF_ERROR(ValidateSmallDitArgs(a.model));
  if (a.repeats < 1 || a.warmup < 0) {
    return core::InvalidArgument("--repeats / --warmup: got " + std::to_string(a.repeats) + " / " +
                                 std::to_string(a.warmup) + ", must be >= 1 / >= 0");
  }
  // Checked before launching MPI so a bad file gives one line, not one per rank.
  ASSIGN_OR_RETURN(zellige::Profile prof, zellige::LoadProfile(a.profile_path));
  RETURN_IF_ERROR(zellige::CheckProfileModel(prof, ToProfileModel(a.model), a.profile_path));
  if (prof.ranks != a.ranks) {
    return core::InvalidArgument(
        a.profile_path + ": ranks: measured with " + std::to_string(prof.ranks) + ", asked for " +
        std::to_string(a.ranks) + " (run `tessera zellige profile --ranks " +
        std::to_string(a.ranks) + "`)");
  }
  const std::unique_ptr<zellige::CostModel> cost =
      zellige::MakeProfileCostModel(std::make_shared<const zellige::Profile>(std::move(prof)));
  return RunMpiJob(a.ranks, a.op_timeout_s,
                   [&](comm::Communicator& world) { return body(world, *cost); });
}

}  // namespace tessera::cli
