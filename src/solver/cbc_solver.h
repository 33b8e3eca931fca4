// Solve(model, options): solves a MilpModel with COIN-OR CBC (branch and cut over Clp).
//
// Every call builds a fresh CBC model from the MilpModel, so a caller can solve, add a
// constraint (e.g. objective <= (1 + eps) * T*) and solve again; building is cheap (a whole
// Solve of a 1-variable LP takes ~0.05 ms). All CBC objects are owned by the call (RAII);
// nothing persists between calls except the malloc tuning below.
//
// Outcomes: the model's verdict is a SolveStatus in the result (infeasible is a value, not an
// error). The returned Status is not OK only for bad input (InvalidArgument naming the
// variable / row / option) or a CBC failure (Internal).
//
// Output: with log_level 0 (the default) nothing is printed. log_level > 0 is for debugging:
// CBC then logs to stdout (and a little to stderr) exactly as the `cbc` program does.
//
// Progress: SolveOptions::progress, when set, is called on the solving thread with the search's
// state (SolveProgress): on CBC's node and solution events at most every
// progress_interval_s, and once at the end (done = true, the result's figures).
//
// Thread-safety: Solve may be called from several threads, but CBC's stand-alone driver
// (CbcMain1) keeps process-global state, so calls are serialised by an internal mutex. Use
// `threads` for parallelism inside one solve. With threads > 1 CBC runs in its deterministic
// (repeatable) parallel mode.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/status.h"
#include "solver/milp_model.h"

namespace tessera::solver {

enum class SolveStatus {
  kOptimal,          // proven optimal within relative_gap / absolute_gap; values set
  kFeasible,         // a limit was hit with an incumbent; values set, gap may be > requested
  kInfeasible,       // proven: no solution (with a cutoff: no solution with objective <= it)
  kNoSolutionFound,  // a limit was hit before any solution was found; values empty
  kUnbounded,        // the continuous relaxation is unbounded (the MILP is unbounded or, in
                     // rare cases, integer-infeasible); values empty
};

// "optimal", "feasible", "infeasible", "no solution found", "unbounded".
const char* SolveStatusName(SolveStatus status);

// How CBC searches. All are exact given time; they differ in speed. Measured here on random
// 10-group x 30-option x 16-rank makespan assignments (301 variables, 26 rows), 0.05-0.3 s
// limits: kCbcNoCuts found the best incumbents at every limit; kCbcDefaults stayed ~20% above
// the best known (it spends the time in root cut generation); kPlainBranchAndBound often had
// no solution yet at 0.05-0.1 s. Cuts pay off on knapsack-like models (50-item knapsack to
// optimality: ~90 ms with cuts, ~480 ms without).
enum class CbcAlgorithm {
  // CBC's stand-alone driver (what `cbc model.lp -solve` runs) without cut generators:
  // integer preprocessing, primal heuristics (feasibility pump, diving, RINS, ...), strong
  // branching and pseudo-costs. The default: best on min-max assignment models.
  kCbcNoCuts,
  // CBC's stand-alone defaults: the above plus root and in-tree cut generation (probing,
  // Gomory, knapsack cover, clique, MIR, flow cover, two-MIR, zero-half).
  kCbcDefaults,
  // Plain LP-based branch and bound on CbcModel: no preprocessing, cuts or heuristics.
  // Often slow to find a first solution; a reference and a fallback.
  kPlainBranchAndBound,
};

const char* CbcAlgorithmName(CbcAlgorithm algorithm);

// The state of a running solve (objective values include the model's offset). A feasible warm
// start counts as an incumbent in every report, even above objective_cutoff (it is the best
// solution the caller holds); the bound is then at most its objective.
struct SolveProgress {
  double elapsed_s = 0;          // since Solve was called
  double incumbent = kInfinity;  // best solution so far (a feasible warm start counts); +inf: none
  double best_bound = -kInfinity;   // proven lower bound; -inf: none yet
  double relative_gap = kInfinity;  // (incumbent - bound) / max(|incumbent|, 1e-9); +inf: unknown
  int64_t nodes = 0;                // branch-and-bound nodes so far
  bool done = false;                // the final report (the SolveResult's figures, as above)
};

struct SolveOptions {
  // Wall-clock limit for the whole call (building included), seconds, > 0; kInfinity = none.
  // CBC checks it between nodes, cut passes and heuristics, so a call can overrun by a few
  // milliseconds (measured: up to ~15 ms on 300-variable models). To keep it honoured, CBC's
  // "fast node" depth-first sub-search inside Clp and the RINS heuristic's sub-MIP (neither
  // looks at the clock; RINS was seen stuck for 20 minutes under a 10 s limit) are always
  // switched off in the stand-alone driver.
  double time_limit_s = kInfinity;
  // Stop once (incumbent - bound) <= relative_gap * |incumbent| (CBC's ratioGap), >= 0.
  double relative_gap = 0.0;
  // Stop once incumbent - bound <= absolute_gap (CBC's allowableGap), >= 0.
  double absolute_gap = 1e-9;
  // Threads CBC may use inside this solve, >= 1.
  int threads = 1;
  // A full assignment (size num_variables(), finite) handed to CBC as a MIP start: CBC fixes
  // its integer variables, re-optimises the continuous ones and, if that is feasible, starts
  // with it as the incumbent. If `warm_start` itself is feasible for the model (to 1e-6,
  // see MilpModel::MaxViolation), the result is never worse than it: if CBC ends without a
  // better solution, the warm start is returned (incumbent_is_warm_start = true).
  std::optional<std::vector<double>> warm_start;
  // Only solutions with objective <= objective_cutoff (plus ~1e-9 relative slack) are sought;
  // none existing gives kInfeasible. Prunes the search like a known incumbent would.
  std::optional<double> objective_cutoff;
  // 0 = silent; 1 = CBC's normal log (to stdout); higher = more detail, <= 4.
  int log_level = 0;
  CbcAlgorithm algorithm = CbcAlgorithm::kCbcNoCuts;
  // CBC's integer preprocessing (CglPreProcess) in the stand-alone driver. Switch it off
  // under short time limits: CBC 2.10.8 can crash in CglPreProcess::postProcess when the
  // limit expires inside preprocessing (seen with 5 ms limits on ~300-variable models).
  bool preprocess = true;
  // Progress reports (see the file comment); none when empty. Must return quickly and must not
  // call Solve (the CBC mutex is held).
  std::function<void(const SolveProgress&)> progress;
  // The least time between two reports during the search, seconds, >= 0.
  double progress_interval_s = 1.0;
};

struct SolveResult {
  SolveStatus status = SolveStatus::kNoSolutionFound;
  // model.ObjectiveValue(values) (offset included); +inf when there are no values.
  double objective_value = kInfinity;
  // Proven lower bound on the optimum (offset included); <= objective_value. -inf when
  // unknown (e.g. unbounded); +inf when infeasible.
  double best_bound = -kInfinity;
  // (objective_value - best_bound) / max(|objective_value|, 1e-9), >= 0; ~0 when optimal
  // with the default gaps; +inf without values.
  double relative_gap = kInfinity;
  // One value per variable, integer variables rounded to exact integers; empty when none.
  std::vector<double> values;
  // Wall-clock time of the whole call (validation and CBC model building included), ms.
  double solve_ms = 0.0;
  // Branch-and-bound nodes CBC explored (0 for a pure LP).
  int64_t node_count = 0;
  // True when `values` is the caller's warm start because CBC ended with nothing better.
  bool incumbent_is_warm_start = false;

  bool has_solution() const {
    return status == SolveStatus::kOptimal || status == SolveStatus::kFeasible;
  }
};

// Raises glibc malloc's trim threshold to 64 MiB and its mmap threshold to 8 MiB, for the
// whole process, once (later calls do nothing; a no-op on other C libraries). Clp allocates
// and frees ~100-300 KiB factorization arrays on every LP solve; with glibc's defaults each
// free hands the memory back to the OS and the next solve page-faults it in again. Measured
// on a loaded 2-core VM: a 10-item knapsack took 17 ms per Solve before and 2.2 ms after
// (kCbcNoCuts; 0.55 ms with kPlainBranchAndBound). The price: up to 64 MiB of freed heap stays
// mapped, and blocks of 128 KiB - 8 MiB come from the heap instead of mmap. Solve() calls it
// on first use; call it at start-up to make the choice explicit.
void TuneMallocForSolver();

// Solves `model` (minimise). See the file comment for the contract. Errors:
// InvalidArgument for an invalid model (MilpModel::Validate) or options (naming the field,
// its value and what is allowed); Internal when CBC fails or returns a solution that violates
// the model by more than 1e-6 (relative, see MilpModel::MaxViolation).
core::StatusOr<SolveResult> Solve(const MilpModel& model, const SolveOptions& options = {});

}  // namespace tessera::solver
