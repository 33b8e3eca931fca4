// MeasureProfile: measures this machine's prices for one SmallDit shape through the engine's
// real kernels and the ranks of `world` (what `tessera zellige profile` runs), and builds the
// profile (zellige/profile_builder.h has the arithmetic).
//
// Prices are measured with every rank busy, as in a real step: for every config of every
// degree d the planners may use at `ranks` (PlannerDegrees, zellige/planner_configs.h: the
// powers of two <= ranks, plus ranks itself and knapformer's default bags when ranks is not a
// power of two) and every bucket L >= d, one plan places, on each of the
// floor(ranks / d) aligned blocks of d ranks, n copies of an L-token sequence with that config
// (n = max(1, whole_tokens / L) for whole sequences, which coalesce; 1 otherwise). With >= 2
// ranks a calibration plan (one 8-token sequence on rank 0) and a solo plan (the whole-config
// point nearest whole_tokens / 4 on rank 0 alone) come first. All plans are measured
// interleaved (MeasurePlansInterleaved: `repeats` rounds, each running every plan for
// `warmup` steps and one timed step). Then all-to-all, all-gather and point-to-point are
// timed at 4 KiB..4 MiB per rank (median over 2 x repeats of the slowest rank) and fitted as
// alpha + beta * bytes (FitComm). Rank 0 builds the profile and every rank returns it (or the
// same error: comm::BroadcastResult).
//
// Errors: InvalidArgument naming the option (buckets, repeats, warmup, whole_tokens) before
// any step; FailedPrecondition when the executable does not count heap allocations;
// communication errors pass through. Collective over world; one thread per rank.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "comm/communicator.h"
#include "core/status.h"
#include "models/small_dit.h"
#include "workload/batch.h"
#include "zellige/plan.h"
#include "zellige/profile.h"
#include "zellige/profile_builder.h"

namespace tessera::zellige::engine {

struct ProfilerOptions {
  std::vector<int64_t> buckets;  // sequence lengths; empty = DefaultProfileBuckets()
  int64_t whole_tokens = 2048;
  int repeats = 5;
  int warmup = 1;
  uint64_t seed = 1;
  models::SmallDitConfig model;
};

// progress(done, total) on every rank after each measured plan of each round (may be empty).
using ProgressFn = std::function<void(int done, int total)>;

// 8, 11, 16, 23, ... (x sqrt 2) up to 2048.
std::vector<int64_t> DefaultProfileBuckets();

// The plans MeasureProfile measures at `ranks`: point i (config, tokens, count; no
// measurement yet) is measured by plans[i] on batches[i]. InvalidArgument when a config has
// fewer than 3 buckets of >= its degree tokens, or an option is out of range.
struct ProfilePlanSet {
  ProfileMeasurements points;  // configs and points, measurements empty
  std::vector<Plan> plans;
  std::vector<workload::Batch> batches;
};
core::StatusOr<ProfilePlanSet> MakeProfilePlans(int ranks, const ProfilerOptions& options);

// Alpha-beta fits of all-to-all, all-gather and point-to-point (bytes = per rank sent); empty
// for one rank. Every rank returns the same fits.
core::StatusOr<std::vector<CommFit>> MeasureCommFits(comm::Communicator& world, int reps);

core::StatusOr<Profile> MeasureProfile(comm::Communicator& world, const ProfilerOptions& options,
                                       const ProgressFn& progress);

}  // namespace tessera::zellige::engine
