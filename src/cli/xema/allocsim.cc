// `tessera xema allocsim`: replays a trace on PyTorch's caching-allocator rules and compares
// the memory it reserves with the best static layout's arena.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/xema/trace_source.h"
#include "core/byte_size.h"
#include "core/json_util.h"
#include "core/table.h"
#include "xema/caching_allocator.h"
#include "xema/memory_trace.h"
#include "xema/static_layout.h"

namespace tessera::cli {
namespace {

struct AllocsimArgs {
  TraceSourceArgs source;
  std::string policy = "pytorch";
  int64_t device_memory_bytes = 0;
  std::string json_path;
};

core::Status RunAllocsim(const AllocsimArgs& a) {
  ASSIGN_OR_RETURN(xema::AllocatorPolicy policy, xema::ParseAllocatorPolicy(a.policy));
  policy.device_limit_bytes = a.device_memory_bytes;
  ASSIGN_OR_RETURN(xema::MemoryTrace trace, LoadTraceSource(a.source));
  ASSIGN_OR_RETURN(xema::ExpandedTrace x, xema::Expand(trace));
  const xema::ReplayReport r = xema::ReplayTrace(x, policy);
  // The best greedy layout (milp is left out: it is for small traces).
  const xema::Layout* best = nullptr;
  std::vector<xema::Layout> layouts;
  std::string no_layout;  // why there is no layout to compare with
  for (const char* algo : {"tflite", "tflm", "xla"}) {
    auto l = xema::PlanLayout(x, algo);
    if (!l.ok()) {
      no_layout = l.status().message();
      break;
    }
    layouts.push_back(std::move(l).value());
  }
  for (const xema::Layout& l : layouts)
    if (best == nullptr || l.arena_bytes < best->arena_bytes) best = &l;
  const xema::AllocatorStats& s = r.stats;
  std::printf("trace %s: %zu ops, %zu tensor instances\n", xema::Describe(trace).c_str(),
              x.ops.size(), x.tensors.size());
  core::Table t({"policy " + xema::PolicyName(policy), "value"});
  t.AddRow({"peak allocated", core::FormatBytes(s.peak_allocated_bytes)});
  t.AddRow({"peak reserved", core::FormatBytes(s.peak_reserved_bytes)});
  t.AddRow({"fragmentation at peak reserved", core::Fixed(100 * s.Fragmentation(), 1) + "%"});
  t.AddRow({"segments at peak (created)", std::to_string(s.segments_at_peak_reserved) + " (" +
                                              std::to_string(s.segments_created) + ")"});
  t.AddRow({"cache flushes", std::to_string(s.cache_flushes)});
  t.AddRow({"lower bound (peak live)", core::FormatBytes(xema::LowerBoundBytes(x))});
  if (best != nullptr) {
    t.AddRow({"best layout arena (" + best->algorithm + ")", core::FormatBytes(best->arena_bytes)});
    t.AddRow(
        {"reserved / best layout arena",
         best->arena_bytes > 0
             ? core::Fixed(static_cast<double>(s.peak_reserved_bytes) / best->arena_bytes, 3) + "x"
             : "-"});
  }
  std::printf("%s", t.Render().c_str());
  if (best == nullptr) std::printf("no layout to compare with: %s\n", no_layout.c_str());
  if (r.oom) {
    std::printf("OOM at op %d (%s): %s\n", r.oom_op,
                xema::FlatOpName(trace, x.ops[r.oom_op]).c_str(), r.oom_message.c_str());
  }
  std::printf("(modeled: a replay of the allocator's rules on the trace, not a GPU run)\n");
  if (!a.json_path.empty()) {
    core::Json j{{"trace", xema::Describe(trace)},
                 {"policy", xema::PolicyName(policy)},
                 {"device_limit_bytes", policy.device_limit_bytes},
                 {"stats", xema::ToJson(s)},
                 {"lower_bound_bytes", xema::LowerBoundBytes(x)},
                 {"oom", r.oom},
                 {"label", "modeled"}};
    if (r.oom) j["oom_message"] = r.oom_message;
    if (best != nullptr) {
      j["best_layout"] = best->algorithm;
      j["best_layout_arena_bytes"] = best->arena_bytes;
    }
    RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, j));
  }
  return core::Status::Ok();
}

}  // namespace

void AddXemaAllocsim(CLI::App* xema, Action* action) {
  auto a = std::make_shared<AllocsimArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = xema->add_subcommand(
      "allocsim", "Replay a trace on PyTorch's caching-allocator rules (reserved vs allocated)");
  AddTraceSourceOptions(c, &a->source, paths.get());
  c->add_option("--policy", a->policy, "pytorch[:expandable_segments][,max_split_size_mb=N]")
      ->capture_default_str();
  c->add_option("--device-memory", a->device_memory_bytes,
                "device limit on reserved memory, e.g. 80GiB (0: none); over it the cache is "
                "flushed, then OOM")
      ->transform(ByteSize(0, core::kMaxByteSize))
      ->capture_default_str();
  paths->Output(c, "--json", &a->json_path, "write the results as JSON here");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunAllocsim(*a); }); });
}

}  // namespace tessera::cli
