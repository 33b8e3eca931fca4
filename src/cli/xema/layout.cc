// `tessera xema layout`: static arena layouts of a trace, compared with the lower bound.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/xema/trace_source.h"
#include "core/byte_size.h"
#include "core/json_util.h"
#include "core/table.h"
#include "xema/memory_trace.h"
#include "xema/static_layout.h"

namespace tessera::cli {
namespace {

struct LayoutArgs {
  TraceSourceArgs source;
  std::string algo = "all";
  double milp_time_limit_s = 10;
  std::string out_path;
  std::string json_path;
};

core::Status RunLayout(const LayoutArgs& a) {
  ASSIGN_OR_RETURN(xema::MemoryTrace trace, LoadTraceSource(a.source));
  ASSIGN_OR_RETURN(xema::ExpandedTrace x, xema::Expand(trace));
  xema::LayoutOptions options;
  options.milp_time_limit_s = a.milp_time_limit_s;
  std::vector<xema::Layout> layouts;
  std::string skipped;
  if (a.algo == "all") {
    ASSIGN_OR_RETURN(layouts, xema::PlanAllLayouts(x, options, &skipped));
  } else {
    auto l = xema::PlanLayout(x, a.algo, options);
    if (!l.ok()) return l.status().WithPrefix("--algo");
    layouts.push_back(std::move(l).value());
  }
  const int64_t lb = xema::LowerBoundBytes(x);
  std::printf("trace %s: %zu ops, %zu tensor instances; lower bound (peak live) %s\n",
              xema::Describe(trace).c_str(), x.ops.size(), x.tensors.size(),
              core::FormatBytes(lb).c_str());
  core::Table t({"algo", "arena", "arena bytes", "vs lower bound", "time ms", "note"});
  const xema::Layout* best = nullptr;
  for (const xema::Layout& l : layouts) {
    core::Status v = xema::VerifyLayout(trace, x, l);
    if (!v.ok()) return core::Internal(v.message());
    if (best == nullptr || l.arena_bytes < best->arena_bytes) best = &l;
    std::string note = l.detail;
    if (l.proven_optimal && note.find("optimal") == std::string::npos)
      note += note.empty() ? "optimal" : " (optimal)";
    t.AddRow({l.algorithm, core::FormatBytes(l.arena_bytes), std::to_string(l.arena_bytes),
              lb > 0 ? core::Fixed(static_cast<double>(l.arena_bytes) / lb, 4) + "x" : "-",
              core::Fixed(l.time_ms, 2), note});
  }
  std::printf("%s", t.Render().c_str());
  if (!skipped.empty()) std::printf("%s\n", skipped.c_str());
  std::printf("(arena sizes exact; times measured on this machine)\n");
  if (!a.json_path.empty()) {
    core::Json rows = core::Json::array();
    for (const xema::Layout& l : layouts) rows.push_back(xema::SummaryJson(l, lb));
    RETURN_IF_ERROR(core::WriteJsonFile(
        a.json_path, core::Json{{"trace", xema::Describe(trace)},
                                {"lower_bound_bytes", lb},
                                {"layouts", std::move(rows)},
                                {"skipped", skipped},
                                {"label", "arena sizes exact; times measured"}}));
  }
  if (!a.out_path.empty() && best != nullptr) {
    RETURN_IF_ERROR(core::WriteJsonFile(a.out_path, xema::LayoutToJson(trace, x, *best)));
    std::printf("wrote the %s layout to %s\n", best->algorithm.c_str(), a.out_path.c_str());
  }
  return core::Status::Ok();
}

}  // namespace

void AddXemaLayout(CLI::App* xema, Action* action) {
  auto a = std::make_shared<LayoutArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = xema->add_subcommand("layout", "Offsets for every tensor of a trace in one arena");
  AddTraceSourceOptions(c, &a->source, paths.get());
  c->add_option("--algo", a->algo, "tflite, tflm, xla, milp or all")->capture_default_str();
  c->add_option("--milp-time-limit", a->milp_time_limit_s, "seconds for the exact MILP")
      ->check(PositiveNumber(3600))
      ->capture_default_str();
  paths->Output(c, "--out", &a->out_path, "write the (best) layout JSON here");
  paths->Output(c, "--json", &a->json_path, "write the comparison as JSON here");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunLayout(*a); }); });
}

}  // namespace tessera::cli
