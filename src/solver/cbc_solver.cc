#include "solver/cbc_solver.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/elapsed.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

// CBC / Clp / CoinUtils (Debian coinor-libcbc-dev 2.10).
#include <CbcEventHandler.hpp>
#include <CbcModel.hpp>
#include <CbcSolver.hpp>
#include <CoinError.hpp>
#include <CoinPackedMatrix.hpp>
#include <OsiClpSolverInterface.hpp>

namespace tessera::solver {

const char* SolveStatusName(SolveStatus status) {
  switch (status) {
    case SolveStatus::kOptimal:
      return "optimal";
    case SolveStatus::kFeasible:
      return "feasible";
    case SolveStatus::kInfeasible:
      return "infeasible";
    case SolveStatus::kNoSolutionFound:
      return "no solution found";
    case SolveStatus::kUnbounded:
      return "unbounded";
  }
  return "unknown";
}

const char* CbcAlgorithmName(CbcAlgorithm algorithm) {
  switch (algorithm) {
    case CbcAlgorithm::kCbcNoCuts:
      return "cbc-no-cuts";
    case CbcAlgorithm::kCbcDefaults:
      return "cbc-defaults";
    case CbcAlgorithm::kPlainBranchAndBound:
      return "plain-branch-and-bound";
  }
  return "unknown";
}

void TuneMallocForSolver() {
  static std::once_flag once;
  std::call_once(once, [] {
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 8 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
  });
}

namespace {

using Clock = std::chrono::steady_clock;

// A solution CBC returns must satisfy the model to this (relative) tolerance.
constexpr double kFeasibilityTolerance = 1e-6;
// The least time limit handed to CBC once ours is nearly spent, seconds.
constexpr double kMinCbcSeconds = 1e-3;

// CbcMain1 keeps process-global state (read mode, current model for signals, ...).
std::mutex& CbcMutex() {
  static std::mutex mutex;
  return mutex;
}

core::Status ValidateOptions(const MilpModel& model, const SolveOptions& options) {
  if (!(options.time_limit_s > 0.0)) {
    return core::InvalidArgument(
        fmt::format("SolveOptions.time_limit_s: got {}, must be > 0 (kInfinity for none)",
                    options.time_limit_s));
  }
  if (!(options.relative_gap >= 0.0) || std::isinf(options.relative_gap)) {
    return core::InvalidArgument(fmt::format(
        "SolveOptions.relative_gap: got {}, must be finite and >= 0", options.relative_gap));
  }
  if (!(options.absolute_gap >= 0.0) || std::isinf(options.absolute_gap)) {
    return core::InvalidArgument(fmt::format(
        "SolveOptions.absolute_gap: got {}, must be finite and >= 0", options.absolute_gap));
  }
  if (options.threads < 1 || options.threads > 99) {
    return core::InvalidArgument(
        fmt::format("SolveOptions.threads: got {}, must be in [1, 99]", options.threads));
  }
  if (!(options.progress_interval_s >= 0.0) || std::isinf(options.progress_interval_s)) {
    return core::InvalidArgument(
        fmt::format("SolveOptions.progress_interval_s: got {}, must be finite and >= 0",
                    options.progress_interval_s));
  }
  if (options.log_level < 0 || options.log_level > 4) {
    return core::InvalidArgument(
        fmt::format("SolveOptions.log_level: got {}, must be in [0, 4]", options.log_level));
  }
  if (options.objective_cutoff && !std::isfinite(*options.objective_cutoff)) {
    return core::InvalidArgument(fmt::format(
        "SolveOptions.objective_cutoff: got {}, must be finite", *options.objective_cutoff));
  }
  if (options.warm_start) {
    const std::vector<double>& ws = *options.warm_start;
    if (static_cast<int>(ws.size()) != model.num_variables()) {
      return core::InvalidArgument(
          fmt::format("SolveOptions.warm_start: has {} values, must have one per variable ({})",
                      ws.size(), model.num_variables()));
    }
    for (int j = 0; j < model.num_variables(); ++j) {
      if (!std::isfinite(ws[j])) {
        return core::InvalidArgument(
            fmt::format("SolveOptions.warm_start[{}] ({}): got {}, must be finite", j,
                        model.VariableLabel(j), ws[j]));
      }
    }
  }
  return core::Status::Ok();
}

// Loads `model` (without its objective offset) into `solver`. Rows are merged (repeated
// variables summed, zeros dropped); infinite bounds become the solver's infinity.
void LoadProblem(const MilpModel& model, OsiClpSolverInterface& solver) {
  const int n = model.num_variables();
  const int m = model.num_constraints();
  const double inf = solver.getInfinity();
  auto clamp_inf = [inf](double v) { return std::clamp(v, -inf, inf); };

  std::vector<double> col_lower(n), col_upper(n), objective(n);
  std::vector<int> integer_columns;
  integer_columns.reserve(model.num_integer_variables());
  for (int j = 0; j < n; ++j) {
    const MilpVariable& v = model.variables()[j];
    col_lower[j] = clamp_inf(v.lower);
    col_upper[j] = clamp_inf(v.upper);
    objective[j] = v.objective;
    if (v.is_integer) integer_columns.push_back(j);
  }

  std::vector<double> row_lower(m), row_upper(m);
  std::vector<CoinBigIndex> starts(m + 1, 0);
  std::vector<int> lengths(m, 0);
  std::vector<int> indices;
  std::vector<double> elements;
  indices.reserve(model.num_terms());
  elements.reserve(model.num_terms());
  std::vector<MilpTerm> row;
  for (int i = 0; i < m; ++i) {
    const MilpConstraint& c = model.constraints()[i];
    row_lower[i] = clamp_inf(c.lower);
    row_upper[i] = clamp_inf(c.upper);
    starts[i] = static_cast<CoinBigIndex>(indices.size());
    row.assign(c.terms.begin(), c.terms.end());
    std::sort(row.begin(), row.end(),
              [](const MilpTerm& a, const MilpTerm& b) { return a.var < b.var; });
    for (size_t k = 0; k < row.size();) {
      const int var = row[k].var;
      double coef = 0.0;
      for (; k < row.size() && row[k].var == var; ++k) coef += row[k].coef;
      if (coef != 0.0) {
        indices.push_back(var);
        elements.push_back(coef);
      }
    }
    lengths[i] = static_cast<int>(indices.size()) - static_cast<int>(starts[i]);
  }
  starts[m] = static_cast<CoinBigIndex>(indices.size());

  // Row-ordered: major dimension = rows, minor = columns.
  CoinPackedMatrix matrix(/*colordered=*/false, /*minor=*/n, /*major=*/m,
                          static_cast<CoinBigIndex>(indices.size()), elements.data(),
                          indices.data(), starts.data(), lengths.data());
  matrix.setDimensions(m, n);  // keeps empty trailing columns / rows
  solver.loadProblem(matrix, col_lower.data(), col_upper.data(), objective.data(), row_lower.data(),
                     row_upper.data());
  if (!integer_columns.empty()) {
    solver.setInteger(integer_columns.data(), static_cast<int>(integer_columns.size()));
  }
  solver.setObjSense(1.0);  // minimise
}

// Applies the log level to a solver (its own and Clp's handler) and a CBC model. CBC's
// default handlers are kept: a handler passed in is shared with the sub-models CBC's
// heuristics create, which reset its level and silence the rest of the log.
void SetLogLevels(OsiClpSolverInterface& solver, int log_level) {
  solver.messageHandler()->setLogLevel(log_level);
  solver.getModelPtr()->messageHandler()->setLogLevel(log_level);
  solver.getModelPtr()->setLogLevel(log_level);
}

void SetLogLevels(CbcModel& cbc, int log_level) {
  cbc.setLogLevel(log_level);
  if (auto* clp = dynamic_cast<OsiClpSolverInterface*>(cbc.solver())) {
    SetLogLevels(*clp, log_level);
  }
}

// The cutoff handed to CBC: the caller's plus a little slack so that a solution exactly at
// the cutoff still counts (CBC wants solutions strictly better than its cutoff).
double SlackCutoff(double cutoff) { return cutoff + 1e-9 * (1.0 + std::fabs(cutoff)); }

// What CBC reported, in the model's column space, before our own checks.
struct RawOutcome {
  SolveStatus status = SolveStatus::kNoSolutionFound;
  std::vector<double> values;  // empty when there is no solution
  double best_bound = -kInfinity;
  int64_t node_count = 0;
};

core::StatusOr<RawOutcome> SolveLp(OsiClpSolverInterface& solver, double seconds_left) {
  if (std::isfinite(seconds_left)) {
    solver.getModelPtr()->setMaximumWallSeconds(std::max(seconds_left, kMinCbcSeconds));
  }
  solver.initialSolve();
  RawOutcome out;
  if (solver.isProvenOptimal()) {
    out.status = SolveStatus::kOptimal;
    const double* x = solver.getColSolution();
    out.values.assign(x, x + solver.getNumCols());
    out.best_bound = solver.getObjValue();
  } else if (solver.isProvenPrimalInfeasible()) {
    out.status = SolveStatus::kInfeasible;
    out.best_bound = kInfinity;
  } else if (solver.isProvenDualInfeasible()) {
    out.status = SolveStatus::kUnbounded;
  } else if (solver.getModelPtr()->hitMaximumIterations()) {
    // Clp reports a time limit as hitting its iteration / time limit.
    out.status = SolveStatus::kNoSolutionFound;
  } else {
    return core::Internal(fmt::format("Clp failed on the LP (status {}, secondary status {})",
                                      solver.getModelPtr()->status(),
                                      solver.getModelPtr()->secondaryStatus()));
  }
  return out;
}

// Reads the outcome of a finished CBC search (either algorithm).
core::StatusOr<RawOutcome> ReadCbcOutcome(CbcModel& cbc, int num_columns) {
  RawOutcome out;
  out.node_count = cbc.getNodeCount();
  const double* best = cbc.bestSolution();
  if (cbc.status() == 2) {
    return core::Internal(fmt::format(
        "CBC stopped with numerical difficulties (secondary status {})", cbc.secondaryStatus()));
  }
  if (best != nullptr) {
    out.values.assign(best, best + num_columns);
    out.status = cbc.isProvenOptimal() ? SolveStatus::kOptimal : SolveStatus::kFeasible;
    out.best_bound = cbc.getBestPossibleObjValue();
  } else if (cbc.isProvenInfeasible()) {
    out.status = SolveStatus::kInfeasible;
    out.best_bound = kInfinity;
  } else if (cbc.isContinuousUnbounded() || cbc.secondaryStatus() == 7) {
    out.status = SolveStatus::kUnbounded;
  } else if (cbc.status() == 0) {
    // Search finished without a solution: nothing feasible (below the cutoff) exists.
    out.status = SolveStatus::kInfeasible;
    out.best_bound = kInfinity;
  } else if (cbc.status() == 1) {
    // Stopped on a limit before finding anything.
    out.status = SolveStatus::kNoSolutionFound;
    out.best_bound = cbc.getBestPossibleObjValue();
  } else {
    return core::Internal(
        fmt::format("CBC ended without a solution or a verdict (status {}, secondary status {})",
                    cbc.status(), cbc.secondaryStatus()));
  }
  return out;
}

std::vector<std::pair<std::string, double>> MipStart(const OsiSolverInterface& solver,
                                                     const std::vector<double>& values) {
  std::vector<std::pair<std::string, double>> start;
  start.reserve(values.size());
  for (size_t j = 0; j < values.size(); ++j) {
    // CBC matches MIP-start entries by column name; the solver's default names are unique.
    start.emplace_back(solver.getColName(static_cast<int>(j)), values[j]);
  }
  return start;
}

int NoCallback(CbcModel* /*model*/, int /*where_from*/) { return 0; }

// What every copy of the progress handler shares (CBC clones the handler into each model it
// makes: the stand-alone driver's working model, heuristics' sub-models).
struct ProgressState {
  std::mutex mutex;
  std::function<void(const SolveProgress&)> report;
  double interval_s = 1.0;
  Clock::time_point start;
  std::optional<Clock::time_point> last;
  double offset = 0;                     // the model's objective offset (CBC sees none)
  std::optional<double> warm_objective;  // a feasible warm start: an incumbent from the start
};

// (incumbent - bound) / max(|incumbent|, 1e-9), or +inf when either is unknown.
double RelativeGap(double incumbent, double bound) {
  if (!std::isfinite(incumbent) || !std::isfinite(bound)) return kInfinity;
  return std::max(0.0, incumbent - bound) / std::max(std::fabs(incumbent), 1e-9);
}

// Reports the search's state on CBC's node and solution events, at most every interval_s.
class ProgressHandler : public CbcEventHandler {
 public:
  explicit ProgressHandler(std::shared_ptr<ProgressState> state) : state_(std::move(state)) {}
  CbcEventHandler* clone() const override { return new ProgressHandler(*this); }
  using CbcEventHandler::event;
  CbcAction event(CbcEvent which) override {
    if (which == node || which == treeStatus || which == solution || which == heuristicSolution) {
      Report();
    }
    return noAction;
  }

 private:
  void Report() {
    const CbcModel* m = getModel();
    if (m == nullptr) return;
    std::lock_guard<std::mutex> lock(state_->mutex);
    const Clock::time_point now = Clock::now();
    if (state_->last &&
        std::chrono::duration<double>(now - *state_->last).count() < state_->interval_s) {
      return;
    }
    state_->last = now;
    SolveProgress p;
    p.elapsed_s = std::chrono::duration<double>(now - state_->start).count();
    // CBC's "no value" is +-1e50 or more; objective values are minimisation values.
    if (m->bestSolution() != nullptr && std::fabs(m->getObjValue()) < 1e40) {
      p.incumbent = m->getObjValue() + state_->offset;
    }
    if (state_->warm_objective) p.incumbent = std::min(p.incumbent, *state_->warm_objective);
    const double bound = m->getBestPossibleObjValue();
    if (std::fabs(bound) < 1e40) p.best_bound = std::min(bound + state_->offset, p.incumbent);
    p.relative_gap = RelativeGap(p.incumbent, p.best_bound);
    p.nodes = m->getNodeCount();
    state_->report(p);
  }

  std::shared_ptr<ProgressState> state_;
};

// A handler for `options.progress`, or null when there is none.
std::unique_ptr<ProgressHandler> MakeProgressHandler(const SolveOptions& options,
                                                     Clock::time_point start, double offset,
                                                     std::optional<double> warm_objective) {
  if (!options.progress) return nullptr;
  auto state = std::make_shared<ProgressState>();
  state->report = options.progress;
  state->interval_s = options.progress_interval_s;
  state->start = start;
  state->offset = offset;
  state->warm_objective = warm_objective;
  return std::make_unique<ProgressHandler>(std::move(state));
}

// CBC's stand-alone driver, as `cbc -solve` runs it (with or without cut generators).
core::StatusOr<RawOutcome> SolveWithCbcMain(const OsiClpSolverInterface& solver,
                                            const SolveOptions& options, double seconds_left,
                                            bool cuts, const CbcEventHandler* progress) {
  CbcModel cbc(solver);
  CbcSolverUsefulData data;
  data.noPrinting_ = options.log_level == 0;
  data.useSignalHandler_ = false;
  CbcMain0(cbc, data);
  SetLogLevels(cbc, options.log_level);
  if (progress != nullptr) cbc.passInEventHandler(progress);
  if (options.warm_start) cbc.setMIPStart(MipStart(*cbc.solver(), *options.warm_start));

  std::vector<std::string> args = {"tessera_solver"};
  auto add = [&args](std::string key, std::string value) {
    args.push_back(std::move(key));
    args.push_back(std::move(value));
  };
  add("-log", std::to_string(options.log_level));
  add("-slog", std::to_string(options.log_level > 1 ? options.log_level - 1 : 0));
  add("-timeMode", "elapsed");
  if (std::isfinite(seconds_left)) add("-seconds", fmt::format("{:.6f}", seconds_left));
  add("-ratioGap", fmt::format("{:.17g}", options.relative_gap));
  add("-allowableGap", fmt::format("{:.17g}", options.absolute_gap));
  if (options.threads > 1) add("-threads", std::to_string(100 + options.threads));
  if (options.objective_cutoff) add("-cutoff", fmt::format("{:.17g}", *options.objective_cutoff));
  if (!cuts) add("-cuts", "off");
  // CbcMain otherwise switches on, after 500 nodes, a depth-first "fast node" search inside
  // Clp that ignores the time limit (measured: 0.3 s limits overran to 0.6-1.1 s).
  add("-depthMiniBab", "-999");
  // The RINS heuristic solves a sub-MIP whose LP runs without looking at the clock
  // (measured: a 10 s joint solve of a 16-rank v55 batch still in RINS's initial LP after
  // 20 minutes, CBC 2.10.8).
  add("-rins", "off");
  if (!options.preprocess) add("-preprocess", "off");
  args.push_back("-solve");
  args.push_back("-quit");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());

  CbcMain1(static_cast<int>(argv.size()), argv.data(), cbc, NoCallback, data);
  return ReadCbcOutcome(cbc, solver.getNumCols());
}

// Plain LP-based branch and bound on CbcModel.
core::StatusOr<RawOutcome> SolvePlainBranchAndBound(const OsiClpSolverInterface& solver,
                                                    const SolveOptions& options,
                                                    double seconds_left,
                                                    const CbcEventHandler* progress) {
  CbcModel cbc(solver);
  SetLogLevels(cbc, options.log_level);
  if (progress != nullptr) cbc.passInEventHandler(progress);
  cbc.setUseElapsedTime(true);
  if (std::isfinite(seconds_left)) cbc.setMaximumSeconds(seconds_left);
  cbc.setAllowableFractionGap(options.relative_gap);
  cbc.setAllowableGap(options.absolute_gap);
  if (options.threads > 1) {
    cbc.setNumberThreads(options.threads);
    cbc.setThreadMode(1);  // deterministic
  }
  if (options.objective_cutoff) cbc.setCutoff(*options.objective_cutoff);
  cbc.initialSolve();
  if (cbc.solver()->isProvenDualInfeasible()) {
    // branchAndBound would call an unbounded root "infeasible"; say what it is.
    RawOutcome out;
    out.status = SolveStatus::kUnbounded;
    return out;
  }
  if (options.warm_start) {
    // Fixes the integers, re-solves the LP and keeps the result if it is feasible.
    cbc.setBestSolution(options.warm_start->data(), solver.getNumCols(), COIN_DBL_MAX,
                        /*check=*/true);
  }
  cbc.branchAndBound();
  return ReadCbcOutcome(cbc, solver.getNumCols());
}

}  // namespace

core::StatusOr<SolveResult> Solve(const MilpModel& model, const SolveOptions& options) {
  const Clock::time_point start = Clock::now();
  TuneMallocForSolver();
  RETURN_IF_ERROR(model.Validate());
  RETURN_IF_ERROR(ValidateOptions(model, options));

  const double offset = model.objective_offset();
  // The warm start, when it is itself feasible (and within the cutoff): our fallback.
  std::optional<double> warm_objective;
  if (options.warm_start && model.MaxViolation(*options.warm_start) <= kFeasibilityTolerance) {
    const double obj = model.ObjectiveValue(*options.warm_start);
    if (!options.objective_cutoff || obj <= SlackCutoff(*options.objective_cutoff)) {
      warm_objective = obj;
    }
  }
  // CBC sees the model without the offset; shift the cutoff to match.
  SolveOptions cbc_options = options;
  if (options.objective_cutoff)
    cbc_options.objective_cutoff = SlackCutoff(*options.objective_cutoff) - offset;

  // Progress counts a feasible warm start as the incumbent even above the cutoff: it is the
  // best solution the caller holds (the cutoff asks CBC for strictly better ones).
  std::optional<double> warm_feasible;
  if (options.warm_start && model.MaxViolation(*options.warm_start) <= kFeasibilityTolerance) {
    warm_feasible = model.ObjectiveValue(*options.warm_start);
  }
  const std::unique_ptr<ProgressHandler> progress =
      MakeProgressHandler(options, start, offset, warm_feasible);
  RawOutcome raw;
  {
    std::lock_guard<std::mutex> lock(CbcMutex());
    try {
      OsiClpSolverInterface solver;
      SetLogLevels(solver, options.log_level);
      LoadProblem(model, solver);
      const double seconds_left = options.time_limit_s - core::MillisecondsSince(start) / 1000.0;
      const double cbc_seconds =
          std::isfinite(seconds_left) ? std::max(seconds_left, kMinCbcSeconds) : kInfinity;
      core::StatusOr<RawOutcome> outcome = core::Internal("unreachable");
      if (model.num_integer_variables() == 0) {
        outcome = SolveLp(solver, cbc_seconds);
        if (outcome.ok() && outcome->status == SolveStatus::kOptimal &&
            cbc_options.objective_cutoff && solver.getObjValue() > *cbc_options.objective_cutoff) {
          outcome->status = SolveStatus::kInfeasible;
          outcome->values.clear();
          outcome->best_bound = kInfinity;
        }
      } else if (options.algorithm == CbcAlgorithm::kPlainBranchAndBound) {
        outcome = SolvePlainBranchAndBound(solver, cbc_options, cbc_seconds, progress.get());
      } else {
        outcome = SolveWithCbcMain(solver, cbc_options, cbc_seconds,
                                   /*cuts=*/options.algorithm == CbcAlgorithm::kCbcDefaults,
                                   progress.get());
      }
      if (!outcome.ok()) return outcome.status();
      raw = std::move(outcome).value();
    } catch (const CoinError& e) {
      return core::Internal(
          fmt::format("CBC threw {}::{}: {}", e.className(), e.methodName(), e.message()));
    } catch (const std::exception& e) {
      return core::Internal(fmt::format("CBC threw: {}", e.what()));
    } catch (...) {
      return core::Internal("CBC threw an unknown exception");
    }
  }

  SolveResult result;
  result.status = raw.status;
  result.node_count = raw.node_count;
  if (!raw.values.empty()) {
    for (int j = 0; j < model.num_variables(); ++j) {
      if (model.variables()[j].is_integer) raw.values[j] = std::round(raw.values[j]);
    }
    std::string what;
    const double violation = model.MaxViolation(raw.values, &what);
    if (violation > kFeasibilityTolerance) {
      return core::Internal(
          fmt::format("CBC returned a solution that violates the model by {:.3g} (relative): {}",
                      violation, what));
    }
    result.values = std::move(raw.values);
    result.objective_value = model.ObjectiveValue(result.values);
  }
  result.best_bound = std::isfinite(raw.best_bound) ? raw.best_bound + offset : raw.best_bound;
  if (std::isnan(result.best_bound)) result.best_bound = -kInfinity;

  // Fall back to the caller's feasible warm start when CBC has nothing better.
  if (warm_objective && (result.values.empty() || *warm_objective < result.objective_value)) {
    result.values = *options.warm_start;
    result.objective_value = *warm_objective;
    result.incumbent_is_warm_start = true;
    if (result.status != SolveStatus::kOptimal) result.status = SolveStatus::kFeasible;
  }

  if (result.has_solution()) {
    result.best_bound = std::min(result.best_bound, result.objective_value);
    result.relative_gap = (result.objective_value - result.best_bound) /
                          std::max(std::fabs(result.objective_value), 1e-9);
  }
  result.solve_ms = core::MillisecondsSince(start);
  if (options.progress) {
    SolveProgress last;
    last.elapsed_s = result.solve_ms / 1000.0;
    last.incumbent = result.objective_value;
    if (warm_feasible) last.incumbent = std::min(last.incumbent, *warm_feasible);
    last.best_bound = std::min(result.best_bound, last.incumbent);
    last.relative_gap = RelativeGap(last.incumbent, last.best_bound);
    last.nodes = result.node_count;
    last.done = true;
    options.progress(last);
  }
  return result;
}

}  // namespace tessera::solver
