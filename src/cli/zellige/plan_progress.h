// Progress of the planning commands on stderr, whether or not stderr is a terminal (long plans
// run in logs too). The planners call these one call at a time, from any thread.
//
// SlowPlanProgress: the parts callback (PlanningProblem::progress). Silent for the first 2 s of
// a plan; then one line at most every 2 s, "zellige: 12/64 parts planned, 4.1 s".
//
// SolverProgressLines: the exact planners' CBC progress (PlanningProblem::solver_progress), e.g.
//   "joint: makespan solve, 12.0 s of its 60 s limit (--joint-time-limit): incumbent 9.8123 s,
//    bound 9.5000 s, gap 3.183%, 1534 nodes"
// Silent for the first 2 s of a plan, then at most one line every 5 s of the planner's own
// clock (SolverProgress::elapsed_s, so a test drives it with made-up reports); the end of a
// solve is a line too once lines were printed ("... done after 45.0 s ...").
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "zellige/planner.h"

namespace tessera::cli {

class SlowPlanProgress {
 public:
  explicit SlowPlanProgress(std::string label) : label_(std::move(label)) {}
  // A callback for one plan (the clock starts now).
  std::function<void(int, int)> ForPlan() {
    start_ = last_ = std::chrono::steady_clock::now();
    return [this](int done, int total) { Report(done, total); };
  }

 private:
  void Report(int done, int total) {
    const auto now = std::chrono::steady_clock::now();
    const double secs = std::chrono::duration<double>(now - start_).count();
    if (secs < 2 || (now - last_ < std::chrono::seconds(2) && done < total)) return;
    last_ = now;
    std::fprintf(stderr, "%s: %d/%d parts planned, %.1f s\n", label_.c_str(), done, total, secs);
    std::fflush(stderr);
  }

  std::string label_;
  std::chrono::steady_clock::time_point start_, last_;
};

class SolverProgressLines {
 public:
  // `limit_flag` names the option that sets the planner's time limit ("--joint-time-limit").
  explicit SolverProgressLines(std::string limit_flag) : flag_(std::move(limit_flag)) {}

  // The line for report `p`, or nullopt when it is too soon after the last one. A report
  // whose elapsed time is below the last one's starts a new plan.
  std::optional<std::string> Line(const zellige::SolverProgress& p) {
    if (last_s_ && p.elapsed_s < *last_s_) last_s_.reset();  // the next plan
    if (p.solve.done) {
      if (!last_s_) return std::nullopt;  // a solve too short to have shown anything
    } else if (p.elapsed_s < kFirstS || (last_s_ && p.elapsed_s < *last_s_ + kEveryS)) {
      return std::nullopt;
    }
    last_s_ = p.elapsed_s;
    return Format(p);
  }
  // A callback that prints Line's lines on stderr.
  zellige::SolverProgressFn Callback() {
    return [this](const zellige::SolverProgress& p) {
      if (std::optional<std::string> line = Line(p)) {
        std::fprintf(stderr, "%s\n", line->c_str());
        std::fflush(stderr);
      }
    };
  }

 private:
  static constexpr double kFirstS = 2;
  static constexpr double kEveryS = 5;

  std::string Format(const zellige::SolverProgress& p) const {
    const bool makespan = p.stage == "makespan";
    const char* unit = makespan ? " s" : "";
    const solver::SolveProgress& s = p.solve;
    char buf[512];
    std::string head =
        p.planner + ": " + (makespan ? std::string("makespan solve") : "split-minimising solve");
    if (s.done) {
      std::snprintf(buf, sizeof buf, ", done after %.1f s of its %g s limit (%s)", p.elapsed_s,
                    p.time_limit_s, flag_.c_str());
    } else {
      std::snprintf(buf, sizeof buf, ", %.1f s of its %g s limit (%s)", p.elapsed_s, p.time_limit_s,
                    flag_.c_str());
    }
    head += buf;
    std::string incumbent = "no incumbent yet";
    if (std::isfinite(s.incumbent)) {
      std::snprintf(buf, sizeof buf, "incumbent %.4f%s", s.incumbent, unit);
      incumbent = buf;
    }
    std::string bound = "no bound yet";
    if (std::isfinite(s.best_bound)) {
      std::snprintf(buf, sizeof buf, "bound %.4f%s", s.best_bound, unit);
      bound = buf;
    }
    std::string gap = "gap unknown";
    if (std::isfinite(s.relative_gap)) {
      std::snprintf(buf, sizeof buf, "gap %.3f%%", 100 * s.relative_gap);
      gap = buf;
    }
    return head + ": " + incumbent + ", " + bound + ", " + gap + ", " + std::to_string(s.nodes) +
           " nodes";
  }

  std::string flag_;
  std::optional<double> last_s_;
};

}  // namespace tessera::cli
