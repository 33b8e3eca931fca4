// SlowPlanProgress: the progress callback (PlanningProblem::progress) of the planning
// commands. Silent for the first 2 s of a plan; then one line on stderr at most every 2 s,
// "zellige: 12/64 parts planned, 4.1 s", whether or not stderr is a terminal (long plans run
// in logs too). The planners call it one call at a time, from any thread.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

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

}  // namespace tessera::cli
