// The planning commands' progress lines (cli/zellige/plan_progress.h) driven by made-up
// reports: what a long joint plan prints on stderr and when, without waiting for one.
#include "cli/zellige/plan_progress.h"

#include <gtest/gtest.h>

#include <string>

#include "cli/zellige/planner_stats_text.h"
#include "core/infinity.h"

namespace tessera::cli {
namespace {

zellige::SolverProgress Report(const std::string& stage, double elapsed_s, bool done = false) {
  zellige::SolverProgress p;
  p.planner = "joint";
  p.stage = stage;
  p.elapsed_s = elapsed_s;
  p.time_limit_s = 60;
  p.solve.incumbent = 9.8123;
  p.solve.best_bound = 9.5;
  p.solve.relative_gap = (9.8123 - 9.5) / 9.8123;
  p.solve.nodes = 1534;
  p.solve.done = done;
  return p;
}

TEST(SolverProgressLines, NamesTheLimitIncumbentBoundAndGapAtAModestRate) {
  SolverProgressLines lines("--joint-time-limit");
  EXPECT_FALSE(lines.Line(Report("makespan", 0.5)));  // the first 2 s are quiet
  auto first = lines.Line(Report("makespan", 2.1));
  ASSERT_TRUE(first);
  EXPECT_EQ(*first,
            "joint: makespan solve, 2.1 s of its 60 s limit (--joint-time-limit): incumbent "
            "9.8123 s, bound 9.5000 s, gap 3.183%, 1534 nodes");
  EXPECT_FALSE(lines.Line(Report("makespan", 4.0)));  // then one line every 5 s
  EXPECT_FALSE(lines.Line(Report("makespan", 7.0)));
  EXPECT_TRUE(lines.Line(Report("makespan", 7.2)));
  // The end of a solve that showed lines says so.
  auto done = lines.Line(Report("makespan", 8.0, true));
  ASSERT_TRUE(done);
  EXPECT_NE(done->find("makespan solve, done after 8.0 s of its 60 s limit"), std::string::npos)
      << *done;
  zellige::SolverProgress splits = Report("splits", 13.5);
  splits.solve.incumbent = core::kInf;
  splits.solve.relative_gap = core::kInf;
  auto s = lines.Line(splits);
  ASSERT_TRUE(s);
  EXPECT_EQ(*s,
            "joint: split-minimising solve, 13.5 s of its 60 s limit (--joint-time-limit): no "
            "incumbent yet, bound 9.5000, gap unknown, 1534 nodes");
}

TEST(SolverProgressLines, AQuickPlanIsSilentAndTheNextPlanStartsAfresh) {
  SolverProgressLines lines("--joint-time-limit");
  EXPECT_FALSE(lines.Line(Report("makespan", 0.2)));
  EXPECT_FALSE(lines.Line(Report("makespan", 0.3, true)));  // ended before anything showed
  ASSERT_TRUE(lines.Line(Report("makespan", 30)));
  // A report earlier than the last line's is the next plan (bench-planner runs many).
  EXPECT_FALSE(lines.Line(Report("makespan", 0.4)));
  EXPECT_FALSE(lines.Line(Report("makespan", 0.5, true)));
  EXPECT_TRUE(lines.Line(Report("makespan", 2.0)));
}

TEST(StatsLine, NamesTheTimeLimitThatWasHitAndItsFlag) {
  zellige::PlannerStats s;
  s.lower_bound_s = 9.5;
  s.max_rank_load_s = 10;
  s.deadline_hit = true;
  s.time_limit_s = 60;
  const std::string line = StatsLine("joint", s, "--joint-time-limit");
  EXPECT_NE(line.find("max rank load 10.00 s >= bound 9.50 s (gap 5.000%, modeled); time limit "
                      "of 60 s hit (--joint-time-limit), best plan kept"),
            std::string::npos)
      << line;
  s.time_limit_s = 0;
  EXPECT_NE(StatsLine("zellige", s).find("; time limit hit, best plan kept"), std::string::npos);
}

}  // namespace
}  // namespace tessera::cli
