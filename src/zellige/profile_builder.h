// BuildProfile: turns the raw measurements of `tessera zellige profile` (real training steps
// of calibration, solo and per-(config, bucket) plans, and timed collectives) into a Profile
// (zellige/profile.h). Pure arithmetic; the measuring loop is zellige::engine::MeasureProfile.
//
// Points: a calibration point (one tiny sequence on rank 0, the others idle), a solo point (a
// whole-config load on rank 0 alone) and, per config c and bucket L, a point whose plan
// places `count` copies of an L-token sequence with c on each of the ranks / degree(c)
// aligned blocks. Prices:
//   fixed_fwd_s = median forward time of the calibration's idle ranks; fixed_bwd_s likewise;
//                 fixed_bytes = their median peak above base;
//   fwd_s(L)    = max(1e-9, (median over steps of the mean over blocks of the block's slowest
//                 member's forward - fixed_fwd_s) / count); bwd_s(L) likewise;
//   mem_bytes(L) = max(0, (largest participant peak - base - fixed_bytes) / count);
//   step_overhead_s = median over all steps of every point of the fastest rank's tail +
//                 fixed_fwd_s + fixed_bwd_s; base_bytes = median base + fixed_bytes;
//   solo_speedup = median over steps of the ranks' mean forward + backward on the
//                 whole-config point of the solo point's tokens / the same on rank 0 alone,
//                 clamped to [kMinSpeedFactor, kMaxSpeedFactor] (1 without a solo point);
//   usable_bytes_per_rank = usable_memory_fraction * machine memory (8 GiB when unknown) / ranks.
// Per config the prices are fitted (FitQuadraticRelative, FitLine). Errors: InvalidArgument
// naming the field (a config with fewer than 3 points, a point with the wrong number of
// ranks or steps). Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "hw/machine.h"
#include "models/small_dit.h"
#include "zellige/parallel_config.h"
#include "zellige/profile.h"
#include "zellige/step_measurement.h"

namespace tessera::zellige {

// Point kinds besides a config index.
inline constexpr int kCalibrationPoint = -1;  // one tiny sequence on rank 0, the others idle
inline constexpr int kSoloPoint = -2;         // the reference whole load on rank 0 alone

struct MeasuredPoint {
  int config = kCalibrationPoint;  // index into ProfileMeasurements::configs, or a kind above
  int64_t tokens = 0;              // sequence length L
  int64_t count = 1;               // copies per block
  PlanMeasurement m;               // one RankMeasurement per rank
};

struct ProfileMeasurements {
  int ranks = 0;
  std::vector<ParallelConfig> configs;
  std::vector<MeasuredPoint> points;
  std::vector<CommFit> comm;  // copied into the profile
};

struct ProfileBuildOptions {
  int repeats = 0;  // timed steps per point (recorded)
  ProfileModel model;
  hw::Machine machine;  // provenance, date and memory
  double usable_memory_fraction = 0.9;
};

core::StatusOr<Profile> BuildProfile(const ProfileMeasurements& measured,
                                     const ProfileBuildOptions& options);

// The ProfileModel of a SmallDit configuration (sizes only).
ProfileModel ProfileModelOf(const models::SmallDitConfig& config);

// "measured on <Summary(machine)>, <date>".
std::string ProfileProvenance(const hw::Machine& machine);

}  // namespace tessera::zellige
