// RunComparison: real SmallDit training steps on the same batches under several planners'
// placements, side by side (what `tessera zellige compare` runs).
//
// Per mix: the batch is generated for the job's ranks at `load` tokens per rank
// (workload::LoadBatch), every sequence's tokens multiplied by token_scale; rank 0 plans it
// with each planner on the profile-priced cost model and sends every rank the plan or the
// planner's error (comm::BroadcastResult: planners with time limits need not agree across
// processes); every rank then measures the plans interleaved (MeasurePlansInterleaved), so
// machine noise does not favour one planner. A row holds the measured step time (median of
// the slowest rank), the predicted one, splits, and the ratios of its measured and predicted
// step times to zellige's (when zellige planned). A planner that fails to plan is a row with
// its error. Every rank returns the same report. Errors: unknown planner, bad token scale or
// a batch that does not fit (InvalidArgument), communication errors. Collective over world.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/json_util.h"
#include "core/status.h"
#include "models/small_dit.h"
#include "zellige/cost_model.h"
#include "zellige/engine/profiler.h"

namespace tessera::zellige::engine {

struct CompareOptions {
  std::vector<std::string> mixes = {"v35", "v50", "v60"};
  std::vector<std::string> planners = {"zellige", "knapformer", "usp", "dp"};
  std::string load = "low";
  double video_seconds = 5;
  double token_scale = 1.0 / 96;
  int repeats = 5;
  int warmup = 1;
  uint64_t seed = 1;
  models::SmallDitConfig model;
  std::string profile_path;  // recorded in the report
};

struct CompareRow {
  std::string planner;
  bool planned = false;
  std::string error;  // why the planner failed (planned == false)
  int splits = 0;
  double predicted_s = 0;
  double measured_s = 0;
  double measured_peak_bytes = 0;
  bool has_ratios = false;  // zellige planned in this mix
  double measured_ratio_to_zellige = 0;
  double predicted_ratio_to_zellige = 0;
};

struct CompareMix {
  std::string mix;
  int64_t sequences = 0;
  int64_t tokens = 0;
  std::vector<CompareRow> rows;  // in the order of CompareOptions::planners
};

struct CompareReport {
  std::string profile_path;
  int ranks = 0;
  std::string load;
  double token_scale = 0;
  double video_seconds = 0;
  int repeats = 0;
  std::vector<CompareMix> mixes;
};

// Sets has_ratios and the ratios of every planned row against the planned "zellige" row.
void FillRatiosToZellige(std::vector<CompareRow>* rows);

core::StatusOr<CompareReport> RunComparison(comm::Communicator& world,
                                            const CompareOptions& options, const CostModel& cost,
                                            const ProgressFn& progress);

// The JSON `tessera zellige compare --json` writes.
core::Json ToJson(const CompareReport& r);

}  // namespace tessera::zellige::engine
