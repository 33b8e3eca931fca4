#include "xema/static_layout.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <numeric>
#include <queue>

#include "core/byte_size.h"
#include "xema/layout_algorithms.h"

namespace tessera::xema {

using core::Status;
using core::StatusOr;
using internal::LayoutProblem;

namespace {

struct AlgorithmEntry {
  const char* name;
  std::function<StatusOr<Layout>(const LayoutProblem&, const LayoutOptions&)> plan;
};

Layout Greedy(const char* name, std::vector<int64_t> offsets, std::string detail = "") {
  Layout l;
  l.algorithm = name;
  l.offsets = std::move(offsets);
  l.detail = std::move(detail);
  return l;
}

Status TooLarge(const char* name, int n, int limit, const char* why) {
  return core::InvalidArgument(std::string(name) + ": the trace has " + std::to_string(n) +
                               " tensor instances, must be <= " + std::to_string(limit) + " (" +
                               why + "; use tflite, tflm or xla)");
}

const std::vector<AlgorithmEntry>& Table() {
  static const std::vector<AlgorithmEntry> table = {
      {"tflite",
       [](const LayoutProblem& p, const LayoutOptions&) -> StatusOr<Layout> {
         return Greedy("tflite", internal::LayoutTflite(p));
       }},
      {"tflm",
       [](const LayoutProblem& p, const LayoutOptions&) -> StatusOr<Layout> {
         return Greedy("tflm", internal::LayoutTflm(p));
       }},
      {"xla",
       [](const LayoutProblem& p, const LayoutOptions&) -> StatusOr<Layout> {
         std::string detail;
         std::vector<int64_t> offsets = internal::LayoutXla(p, &detail);
         return Greedy("xla", std::move(offsets), "xla " + detail);
       }},
      {"milp",
       [](const LayoutProblem& p, const LayoutOptions& o) -> StatusOr<Layout> {
         if (p.size() > o.milp_max_tensors) {
           return TooLarge("milp", p.size(), o.milp_max_tensors,
                           "the exact MILP has one binary per overlapping pair");
         }
         ASSIGN_OR_RETURN(internal::ExactResult r,
                          internal::LayoutMilp(p, o.milp_time_limit_s, o.milp_shortcut));
         Layout l = Greedy("milp", std::move(r.offsets), r.detail);
         l.proven_optimal = r.proven_optimal;
         return l;
       }},
      {"brute",
       [](const LayoutProblem& p, const LayoutOptions& o) -> StatusOr<Layout> {
         if (p.size() > o.brute_max_tensors) {
           return TooLarge("brute", p.size(), o.brute_max_tensors,
                           "exhaustive search is for tests on tiny traces");
         }
         internal::ExactResult r = internal::LayoutBrute(p);
         Layout l = Greedy("brute", std::move(r.offsets), r.detail);
         l.proven_optimal = true;
         return l;
       }},
  };
  return table;
}

}  // namespace

std::vector<std::string> LayoutAlgorithmNames() {
  std::vector<std::string> names;
  for (const AlgorithmEntry& e : Table()) names.push_back(e.name);
  return names;
}

StatusOr<Layout> PlanLayout(const ExpandedTrace& x, const std::string& algorithm,
                            const LayoutOptions& options) {
  for (const AlgorithmEntry& e : Table()) {
    if (algorithm != e.name) continue;
    if (x.tensors.size() > static_cast<size_t>(kMaxLayoutInstances)) {
      return core::InvalidArgument(
          "layout: the trace has " + std::to_string(x.tensors.size()) +
          " tensor instances, must be <= " + std::to_string(kMaxLayoutInstances) +
          " (fewer steps: every step adds the body's tensors again)");
    }
    const auto t0 = std::chrono::steady_clock::now();
    LayoutProblem p = internal::ProblemOf(x);
    ASSIGN_OR_RETURN(Layout l, e.plan(p, options));
    l.arena_bytes = internal::ArenaOf(p, l.offsets);
    l.time_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return l;
  }
  std::string names;
  for (const std::string& n : LayoutAlgorithmNames()) names += (names.empty() ? "" : ", ") + n;
  return core::InvalidArgument("algo: got '" + algorithm + "', must be one of " + names +
                               " or all");
}

StatusOr<std::vector<Layout>> PlanAllLayouts(const ExpandedTrace& x, const LayoutOptions& options,
                                             std::string* skipped) {
  std::vector<Layout> out;
  for (const char* name : {"tflite", "tflm", "xla", "milp"}) {
    if (std::string(name) == "milp" &&
        static_cast<int>(x.tensors.size()) > options.milp_max_tensors) {
      if (skipped) {
        *skipped = "milp skipped: " + std::to_string(x.tensors.size()) + " tensor instances > " +
                   std::to_string(options.milp_max_tensors);
      }
      continue;
    }
    ASSIGN_OR_RETURN(Layout l, PlanLayout(x, name, options));
    out.push_back(std::move(l));
  }
  return out;
}

namespace {

std::string InstanceName(const MemoryTrace& trace, const ExpandedTrace& x, size_t i) {
  const FlatTensor& f = x.tensors[i];
  std::string s = "tensor " + std::to_string(f.tensor) + " '" + trace.tensors[f.tensor].name + "'";
  if (f.step >= 0) s += "@step" + std::to_string(f.step);
  return s;
}

std::string Span(const ExpandedTrace& x, const Layout& l, size_t i) {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "[" + to_string(...).
  std::string s = "[";
  s += std::to_string(l.offsets[i]);
  s += ", " + std::to_string(l.offsets[i] + x.tensors[i].bytes) + ") live at ops ";
  s += std::to_string(x.tensors[i].alloc_op) + ".." + std::to_string(x.tensors[i].free_op);
  return s;
}

}  // namespace

Status VerifyLayout(const MemoryTrace& trace, const ExpandedTrace& x, const Layout& l) {
  const std::string who = "layout " + l.algorithm + ": ";
  if (l.offsets.size() != x.tensors.size()) {
    return core::FailedPrecondition(who + std::to_string(l.offsets.size()) + " offsets for " +
                                    std::to_string(x.tensors.size()) + " tensor instances");
  }
  for (size_t i = 0; i < x.tensors.size(); ++i) {
    const int64_t o = l.offsets[i];
    if (o < 0 || o % kAlignmentBytes != 0 || o + x.tensors[i].bytes > l.arena_bytes) {
      return core::FailedPrecondition(who + InstanceName(trace, x, i) + " at offset " +
                                      std::to_string(o) + " (" +
                                      std::to_string(x.tensors[i].bytes) +
                                      " bytes): must be >= 0, a multiple of 512 and end within " +
                                      "the arena of " + std::to_string(l.arena_bytes) + " bytes");
    }
  }
  // Sweep in alloc order; the live instances sit in a map by offset, pairwise disjoint so
  // far, so a new one only needs checking against its two neighbours.
  std::vector<size_t> order(x.tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return x.tensors[a].alloc_op < x.tensors[b].alloc_op;
  });
  using Item = std::pair<int, size_t>;  // (free_op, instance)
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ends;
  std::map<int64_t, size_t> live;
  auto overlap = [&](size_t a, size_t b) {
    return core::FailedPrecondition(who + InstanceName(trace, x, a) + " " + Span(x, l, a) +
                                    " and " + InstanceName(trace, x, b) + " " + Span(x, l, b) +
                                    " overlap in memory while both live");
  };
  for (size_t i : order) {
    const FlatTensor& f = x.tensors[i];
    while (!ends.empty() && ends.top().first < f.alloc_op) {
      live.erase(l.offsets[ends.top().second]);
      ends.pop();
    }
    const int64_t o = l.offsets[i];
    auto next = live.lower_bound(o);
    if (next != live.end() && next->first < o + f.bytes) return overlap(next->second, i);
    if (next != live.begin()) {
      auto prev = std::prev(next);
      if (prev->first + x.tensors[prev->second].bytes > o) return overlap(prev->second, i);
    }
    live[o] = i;
    ends.push({f.free_op, i});
  }
  return Status::Ok();
}

core::Json SummaryJson(const Layout& l, int64_t lower_bound_bytes) {
  return core::Json{
      {"algorithm", l.algorithm},
      {"arena_bytes", l.arena_bytes},
      {"ratio_to_lower_bound", lower_bound_bytes > 0 ? static_cast<double>(l.arena_bytes) /
                                                           static_cast<double>(lower_bound_bytes)
                                                     : 1.0},
      {"time_ms", l.time_ms},
      {"proven_optimal", l.proven_optimal},
      {"detail", l.detail}};
}

core::Json LayoutToJson(const MemoryTrace& trace, const ExpandedTrace& x, const Layout& l) {
  core::Json tensors = core::Json::array();
  for (size_t i = 0; i < x.tensors.size(); ++i) {
    const FlatTensor& f = x.tensors[i];
    tensors.push_back({{"tensor", f.tensor},
                       {"name", trace.tensors[f.tensor].name},
                       {"step", f.step},
                       {"bytes", f.bytes},
                       {"alloc_op", f.alloc_op},
                       {"free_op", f.free_op},
                       {"offset", l.offsets[i]}});
  }
  return core::Json{{"format", "tessera.xema.layout/1"},
                    {"algorithm", l.algorithm},
                    {"detail", l.detail},
                    {"arena_bytes", l.arena_bytes},
                    {"lower_bound_bytes", LowerBoundBytes(x)},
                    {"alignment_bytes", kAlignmentBytes},
                    {"trace", Describe(trace)},
                    {"tensors", std::move(tensors)}};
}

}  // namespace tessera::xema
