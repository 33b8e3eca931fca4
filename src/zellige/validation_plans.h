// The 21-plan validation protocol (zellige.md, "Hardware profiler"), scaled to a machine of N
// ranks: plans whose step time and peak memory the profiler's predictions are checked on.
//
// Three base batches (seeds seed, seed+1, seed+2), each 3 videos (480p/720p/1080p, 3-5 s at
// 16 fps) and 50 images (256p..1080p), token counts from the token calculus multiplied by
// token_scale (rounded, at least num_ranks tokens for a video and 1 for an image).
// Options for a video: whole on any rank, or any config of every power-of-two degree
// 2..N (h dividing heads) on any aligned block of that size.
//  - 18 rotated mixed plans: plan i uses batch b = i % 3 and rotation r = i / 3; video j
//    takes option (r (b + 1) + j (b + 2) + b) mod |options|; images: the first share(r, b) of them
//    (20%, 50% or 80%) go whole to rank r mod N, the rest whole round-robin over all ranks.
//  - 3 all-whole corner plans: "corner-balanced" (batch 0; longest first onto the rank with
//    the fewest tokens), "corner-videos-apart" (batch 1; videos whole on rank 0, images
//    round-robin over ranks 1..N-1, or rank 0 when N = 1), "corner-one-rank" (batch 2;
//    everything on rank 0).
// Drift probe: the profile's own whole-sequence points nearest 256, 512 and 1,024 tokens
// (each once), all in one plan: on every rank, for each point, its `count` copies of L tokens
// (whole sequences compose additively), to be measured in the same run as the cases. Its
// reference is what the profiler itself measured on those points, profiled_compute_s = sum
// of count x (fwd_s + bwd_s) and profiled_makespan_s = that + step_overhead_s (raw points,
// not the fit, so the fit's error does not pass for drift; three points so one point's
// measurement noise weighs less): measured / profiled is how much faster or slower the
// machine runs now than when it was profiled (a shared VM drifts between runs minutes
// apart). Per rank the same holds for the work alone: rank r's forward + backward now over
// profiled_compute_s (the profiler's prices are the ranks' mean) is rank r's time factor
// now; DriftScaledProfile turns these into the profile of the machine as it runs now, and
// validate reports its predictions as well.
// Solo probe (N >= 2): rank 0's share of the drift probe on rank 0 alone, the other ranks
// idle. Rank 0's forward + backward on the drift probe (every rank busy) over the same on the
// solo probe is the machine's solo speed-up now (Profile::solo_speedup: how much faster a
// rank runs while the others idle). Background load changes it: a process beside the job
// takes an idle core first, so it slows a step with every rank busy more than one with idle
// ranks, and one factor per rank cannot say so.
// Deterministic in its inputs; every plan passes ValidatePlan. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "workload/batch.h"
#include "zellige/plan.h"
#include "zellige/profile.h"

namespace tessera::zellige {

struct ValidationSpec {
  int num_ranks = 2;
  int heads = 4;
  double token_scale = 1.0 / 96;
  uint64_t seed = 1;
};

struct ValidationCase {
  std::string name;  // e.g. "mixed-07 (batch 1, rotation 2)" or "corner-one-rank"
  workload::Batch batch;
  Plan plan;
};

struct DriftProbe {
  ValidationCase probe;
  double profiled_makespan_s = 0;  // the profiler's own measurement of this plan
  double profiled_compute_s = 0;   // its forward + backward part per rank (ranks' mean)
};

// The 21 cases (18 mixed, then 3 corners). InvalidArgument for num_ranks < 1, heads < 1 or
// token_scale outside (0, 1].
core::StatusOr<std::vector<ValidationCase>> MakeValidationCases(const ValidationSpec& spec);

// The drift probe of `profile` (name "drift-probe (C1 x L1 + C2 x L2 + ... tokens per rank)").
// InvalidArgument if the profile has no whole-sequence points.
core::StatusOr<DriftProbe> MakeDriftProbe(const Profile& profile);

// The solo probe of `probe` (name "drift-probe-solo (...)"): the drift probe's placements of
// rank 0 only. InvalidArgument for a probe of fewer than 2 ranks.
core::StatusOr<ValidationCase> MakeSoloProbe(const DriftProbe& probe);

// `profile` as the machine runs now, given each rank's forward + backward time on the probe
// now (rank_compute_s, e.g. the median over steps): rank_time_factors[r] = rank_compute_s[r]
// / probe.profiled_compute_s, step_overhead_s times their mean; prices unchanged; and, when
// solo_speedup_now > 0 (measured with the solo probe), solo_speedup = solo_speedup_now.
// InvalidArgument when rank_compute_s does not have one value per profile rank or a factor
// (or solo_speedup_now > 0) falls outside [0.25, 8] (then the machine changed too much for a
// profile to describe it).
core::StatusOr<Profile> DriftScaledProfile(const Profile& profile, const DriftProbe& probe,
                                           const std::vector<double>& rank_compute_s,
                                           double solo_speedup_now = 0);

}  // namespace tessera::zellige
