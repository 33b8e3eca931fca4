// `tessera xema intervals`: the memory-pressure intervals of a trace under a budget.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/xema/trace_source.h"
#include "core/byte_size.h"
#include "core/json_util.h"
#include "core/table.h"
#include "xema/memory_trace.h"
#include "xema/pressure_intervals.h"

namespace tessera::cli {
namespace {

struct IntervalsArgs {
  TraceSourceArgs source;
  int64_t budget_bytes = 0;
  int64_t reserve_bytes = 0;
  std::string json_path;
};

core::Status RunIntervals(const IntervalsArgs& a) {
  ASSIGN_OR_RETURN(xema::MemoryTrace trace, LoadTraceSource(a.source));
  ASSIGN_OR_RETURN(xema::ExpandedTrace x, xema::Expand(trace));
  ASSIGN_OR_RETURN(xema::PressureReport r,
                   xema::FindPressureIntervals(trace, x, a.budget_bytes, a.reserve_bytes));
  if (!a.json_path.empty()) {
    core::Json j = xema::ToJson(trace, x, r);
    j["label"] = "modeled";
    RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, j));
  }
  std::printf("trace %s: %zu ops, %zu tensor instances\n", xema::Describe(trace).c_str(),
              x.ops.size(), x.tensors.size());
  std::printf("budget %s - weights %s - reserve %s = available %s; peak activations %s\n",
              core::FormatBytes(r.budget_bytes).c_str(), core::FormatBytes(r.weight_bytes).c_str(),
              core::FormatBytes(r.reserve_bytes).c_str(),
              core::FormatBytes(r.available_bytes).c_str(),
              core::FormatBytes(r.peak_live_bytes).c_str());
  if (r.intervals.empty()) {
    std::printf("no pressure interval: every op fits the budget\n");
    return core::Status::Ok();
  }
  core::Table t({"#", "ops", "first op", "last op", "phases", "excess", "peak at"});
  // In timeline order, the first kMaxRows (a step-by-step interval repeats every step).
  constexpr size_t kMaxRows = 30;
  for (size_t i = 0; i < r.intervals.size() && i < kMaxRows; ++i) {
    const xema::PressureInterval& iv = r.intervals[i];
    std::string phases;
    for (xema::Phase p : iv.phases)
      phases += (phases.empty() ? "" : "+") + std::string(PhaseName(p));
    t.AddRow(
        {std::to_string(i + 1), std::to_string(iv.first_op) + ".." + std::to_string(iv.last_op),
         xema::FlatOpName(trace, x.ops[iv.first_op]), xema::FlatOpName(trace, x.ops[iv.last_op]),
         phases, core::FormatBytes(iv.excess_bytes), xema::FlatOpName(trace, x.ops[iv.peak_op])});
  }
  std::printf("%s", t.Render().c_str());
  if (r.intervals.size() > kMaxRows)
    std::printf("... %zu more intervals not shown\n", r.intervals.size() - kMaxRows);
  std::printf("%zu intervals, %d of %zu ops under pressure, max excess %s\n", r.intervals.size(),
              r.ops_under_pressure, x.ops.size(), core::FormatBytes(r.max_excess_bytes).c_str());
  return core::Status::Ok();
}

}  // namespace

void AddXemaIntervals(CLI::App* xema, Action* action) {
  auto a = std::make_shared<IntervalsArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = xema->add_subcommand(
      "intervals", "Op ranges where a trace needs more than the budget leaves, and the excess");
  AddTraceSourceOptions(c, &a->source, paths.get());
  c->add_option("--budget", a->budget_bytes, "device memory budget, e.g. 512MiB, 80GB")
      ->transform(ByteSize(1, core::kMaxByteSize))
      ->required();
  c->add_option("--reserve", a->reserve_bytes,
                "memory the trace does not show (CUDA context, workspaces), e.g. 1GiB")
      ->transform(ByteSize(0, core::kMaxByteSize))
      ->capture_default_str();
  paths->Output(c, "--json", &a->json_path, "write the intervals as JSON here");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunIntervals(*a); }); });
}

}  // namespace tessera::cli
