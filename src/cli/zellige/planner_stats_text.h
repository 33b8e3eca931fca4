// StatsLine: one line of a Zellige plan's stage times (measured wall clock) and its bound
// (modeled), as `zellige plan` and `bench-planner` print it, e.g.
//   "zellige stages ms (measured): catalog 3.1, model 1.2, cbc 10.4, split search 2.0,
//    stage 2 0.3; 16 cells x 16 ranks (6 distinct); max rank load 125.02 s >= bound 124.90 s (gap
//    0.096%)"
// A time limit that was hit is named, with the flag that sets it when given ("; time limit of
// 60 s hit (--joint-time-limit), best plan kept"). Pure function.
#pragma once

#include <cstdio>
#include <string>

#include "zellige/planner_stats.h"

namespace tessera::cli {

inline std::string StatsLine(const std::string& planner, const zellige::PlannerStats& s,
                             const std::string& limit_flag = "") {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s stages ms (measured): catalog %.1f, model %.1f, cbc %.1f, split search %.1f, "
                "stage 2 %.1f",
                planner.c_str(), s.catalog_ms, s.model_ms, s.cbc_ms, s.split_search_ms,
                s.stage2_ms);
  std::string out = buf;
  if (s.cells > 0) {
    out += "; " + std::to_string(s.cells) + " cells x " + std::to_string(s.cell_ranks) +
           " ranks (" + std::to_string(s.cells_planned) + " distinct)";
  }
  if (s.lower_bound_s > 0) {
    std::snprintf(buf, sizeof buf, "; max rank load %.2f s >= bound %.2f s (gap %.3f%%, modeled)",
                  s.max_rank_load_s, s.lower_bound_s, 100 * s.Gap());
    out += buf;
  }
  if (s.deadline_hit) {
    out += "; time limit";
    if (s.time_limit_s > 0) {
      std::snprintf(buf, sizeof buf, " of %g s", s.time_limit_s);
      out += buf;
    }
    out += " hit";
    if (!limit_flag.empty()) out += " (" + limit_flag + ")";
    out += ", best plan kept";
  }
  return out;
}

}  // namespace tessera::cli
