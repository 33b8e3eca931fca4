// RunAttentionSteps: `zellige run` without --train as a library service. Every rank of
// `world` runs the plan's attention forward + backward through an AttentionEngine on seeded
// random q, k, v for `steps` steps (barrier, then timed), and optionally compares its slices
// with the single-process attention (norm-wise, tolerance kAttentionCheckTolerance). A failed
// check is not an error: the report says pass = false with the reason.
// Collective over `world`; every rank returns the same report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/json_util.h"
#include "core/status.h"
#include "workload/batch.h"
#include "zellige/plan.h"

namespace tessera::zellige::engine {

inline constexpr double kAttentionCheckTolerance = 1e-5;

struct AttentionRunOptions {
  int heads = 4;
  int head_dim = 64;
  uint64_t seed = 1;  // q, k, v and dO data
  int steps = 3;      // >= 1
  bool check = false;
  std::string plan_source = "plan";  // prefix of the engine's plan errors
};

struct AttentionRankReport {
  int rank = 0;
  int64_t local_tokens = 0;
  std::vector<double> step_time_s;  // measured, per step
  int64_t peak_bytes = 0;           // engine allocator peak
  double check_max_abs = 0, check_max_rel = 0;

  double mean_step_time_s() const;
  double max_step_time_s() const;
};

struct AttentionRunReport {
  AttentionRunOptions options;
  int num_ranks = 0;
  std::vector<AttentionRankReport> ranks;
  double max_abs_err = 0, max_rel_err = 0;  // over ranks (NaN reads as +inf), when checked
  bool check_pass = true;                   // true when not checked
  std::vector<std::string> failures;

  bool pass() const { return failures.empty(); }
};

core::StatusOr<AttentionRunReport> RunAttentionSteps(comm::Communicator& world,
                                                     const zellige::Plan& plan,
                                                     const workload::Batch& batch,
                                                     const AttentionRunOptions& options);

// Today's `run --json` fields except "plan" (the caller adds the plan it ran).
core::Json ToJson(const AttentionRunReport& report);

}  // namespace tessera::zellige::engine
