// Shared frame of the subcommands that run real steps against a profile (`tessera zellige
// validate`, `compare`): their common options (--profile, --ranks, --repeats, --warmup,
// --seed, --op-timeout, the SmallDit shape) and the profile checks every rank makes before
// any step: the file parses (zellige/profile.h), it was measured for the SmallDit asked for
// (CheckProfileModel: field and both values) and with as many ranks as the job has.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "cli/options.h"
#include "cli/rank_progress.h"
#include "cli/zellige/small_dit_args.h"
#include "comm/communicator.h"
#include "core/progress.h"
#include "core/status.h"
#include "zellige/cost_model.h"
#include "zellige/engine/plan_measurement.h"

namespace tessera::cli {

struct ProfileJobArgs {
  std::string profile_path;
  int ranks = 2;
  int repeats = 5;
  int warmup = 1;
  uint64_t seed = 1;
  double op_timeout_s = 300;
  SmallDitArgs model;
};

// Adds the options; --profile is recorded in *paths as an input.
void AddProfileJobOptions(CLI::App* app, ProfileJobArgs* a, CommandPaths* paths);

// MeasurePlan options from the arguments.
zellige::engine::MeasureOptions ToMeasureOptions(const ProfileJobArgs& a);

// Validates the arguments, runs under MPI (RunMpiJob) and calls body on every rank with the
// profile-priced cost model.
core::Status RunProfileJob(const ProfileJobArgs& a,
                           const std::function<core::Status(comm::Communicator& world,
                                                            const zellige::CostModel& cost)>& body);

// Copies the job options every measuring service shares (repeats, warmup, seed, SmallDit,
// profile path) into its options struct (engine::ValidationOptions, engine::CompareOptions).
template <class Options>
void CopyJobOptions(const ProfileJobArgs& a, Options* o) {
  o->repeats = a.repeats;
  o->warmup = a.warmup;
  o->seed = a.seed;
  o->model = ToSmallDitConfig(a.model);
  o->profile_path = a.profile_path;
}

}  // namespace tessera::cli
