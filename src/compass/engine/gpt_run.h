// `tessera compass run` (Compass part 3): models::SmallGpt trained with tensor and sequence
// parallelism on MPI ranks over a topology's emulated links, every TP operator run by an
// overlap strategy (strategy_tp_ops.h): one registry strategy for all operators, or `auto`,
// the selector's pick per operator (selector.h).
//
// `auto`: for each operator of a layer (SmallGpt::LayerTpCalls), the strategy model's inputs
// (plan.h StrategyInputsFor) from this machine's GEMM times (every whole and part shape timed
// on rank 0 alone, device seconds = wall / time scale) and the collective model on the
// topology's rings, with the overheads of a profile (compass profile) when one is given, else
// none (zero overheads, kappa 1); the pick and its reason are reported per operator.
//
// Steps: K steps of AdamW on seeded synthetic batches (models::MakeSyntheticGptBatch); every
// rank starts each step at one agreed instant; a step's time runs from the last rank's begin
// to the last rank's end, in device seconds (run_timing.h). Step 1 includes first-touch of
// every buffer, so the summary is over steps 2..K (all steps when K = 1).
// --check: before the run, rank 0 trains the single-process twin (tp = 1, LocalTpOps) on the
// same batches; the run fails (Internal naming the step) when a step's loss differs by more
// than 1e-5 relative.
// Compute: real GEMMs (kernels::Gemm, one BLAS thread per rank), or modeled for ranks that
// outnumber cores: one forward-backward in kRecord mode collects every GEMM shape the
// strategies run, rank 0 times each alone (ProfileGemms), and the TP GEMMs then sleep for
// their times (overlap_context.h). Only the TP operators' GEMMs are modeled: attention, norms,
// the head and the optimizer still compute (on shared cores), and the losses are meaningless
// (GEMM outputs are not written), so --check needs real compute.
// Collective over `world`; progress on rank 0.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "compass/engine/overlap_context.h"
#include "compass/profile.h"
#include "compass/selector.h"
#include "compass/strategy_model.h"
#include "core/json_util.h"
#include "core/stats.h"
#include "core/trace.h"
#include "hw/topology.h"
#include "models/small_gpt.h"
#include "runtime/time_scale.h"

namespace tessera::compass {

struct GptRunConfig {
  std::string model = "gpt-small";  // models::SmallGptPreset
  int64_t batch = 4, seq = 256;     // sequences per step and their length
  std::string strategy = "auto";    // "auto" or an overlap_strategy.h name
  int steps = 10;
  bool check = false;
  runtime::ComputeMode compute = runtime::ComputeMode::kReal;  // kReal or kModeled
  uint64_t seed = 1;
  float learning_rate = 1e-3f;
  const CompassProfile* profile = nullptr;  // overheads for auto (may be null)
  std::string profile_name;
  SelectorOptions selector;
  std::function<void(int, int)> progress;  // rank 0: (steps done, steps)
};

// One operator's strategy and, for auto, the selector's prediction and reason.
struct GptOpChoice {
  std::string op;
  TpOpShape shape;
  std::string strategy;
  double predicted_s = 0, none_s = 0;  // auto only (device seconds), else 0
  std::string reason;
};

struct GptRun {
  std::string topology, model, strategy;
  int tp = 0;
  runtime::ComputeMode compute = runtime::ComputeMode::kReal;
  int64_t batch = 0, seq = 0, parameters_per_rank = 0;
  runtime::TimeScale scale;
  std::string overheads_source;
  std::vector<GptOpChoice> choices;      // one layer's operators
  std::vector<double> losses;            // per step
  std::vector<double> step_s;            // per step, device seconds
  core::MinMedianMax step_summary;       // steps 2..K
  std::map<std::string, double> op_s;    // rank 0's device seconds per operator over the run
  std::vector<double> reference_losses;  // --check: the single process's
  double max_loss_rel_diff = -1;         // --check
  // The last step's TP operators on every rank: names in call order (the same on every rank)
  // and per rank their [begin, end) in device seconds after the step's agreed start.
  std::vector<std::string> last_step_ops;
  std::vector<std::vector<std::pair<double, double>>> last_step_spans;  // [rank][op]
};

// The strategy per operator for `strategy` ("auto" or a registry name) on the operator
// shapes `ops` (one layer). `gemm_s` gives device seconds per GEMM (trans_a, m, n, k) and
// `collective_s` the collective model per algorithm for an operator; used by auto only.
// InvalidArgument for an unknown strategy or one that cannot run an operator's shape.
using OpGemmTimer = std::function<double(bool, int64_t, int64_t, int64_t)>;
using OpCollectiveTimer = std::function<double(const TpOpShape&, comm::LinkAlgo, double)>;
core::StatusOr<std::vector<GptOpChoice>> ChooseGptStrategies(
    const std::string& strategy, const std::vector<std::pair<std::string, TpOpShape>>& ops,
    const OpGemmTimer& gemm_s, const OpCollectiveTimer& collective_s,
    const OverheadTable& overheads, const SelectorOptions& options);

// Everything RunGpt checks before it starts, so a command line can refuse bad input before
// ranks start (one line, not one per rank): steps, compute and check, `ranks` against the
// topology's devices, the model preset and its split over `ranks` (ValidateSmallGptConfig),
// batch and seq against max_seq, the tokens divisible by `ranks`, the strategy name (unless
// auto) and the profile's topology and TP. InvalidArgument / NotFound naming the field.
core::Status CheckGptRun(const GptRunConfig& config, const hw::Topology& topology, int ranks);

core::StatusOr<GptRun> RunGpt(comm::Communicator& world, const hw::Topology& topology,
                              const runtime::TimeScale& scale, const GptRunConfig& config);

core::Json ToJson(const GptRun& r);

// The last step as a Chrome/Perfetto trace: one track per rank, each TP operator a span named
// after it (category: its strategy); the gaps are the rank's local compute (attention, norms,
// head, optimizer) and waits.
core::TraceWriter GptStepTrace(const GptRun& r);

}  // namespace tessera::compass
