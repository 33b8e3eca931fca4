// ListSchedule: gang tasks on resources that run one task at a time at speed 1, each
// resource taking its tasks in increasing task id. Task g starts at the latest of its
// resources' free times (when they finished every earlier task needing them) and
// earliest_s(g), and ends work_s(g) later. This is what Simulator::Run computes for such a
// workload (it calls this); callers with a fixed task list (Zellige's step, priced inside
// planners' loops) call it directly: it copies nothing and allocates nothing.
// resources_of(g) returns an iterable range of resource ids (e.g. const std::vector<int>&);
// free_s has one entry per resource and holds the free times on entry (zeros for a fresh
// start) and on return. Header-only so that the callables inline. Thread-compatible.
#pragma once

#include <algorithm>
#include <span>

namespace tessera::sim {

template <typename ResourcesOf, typename EarliestOf, typename WorkOf>
void ListSchedule(int num_tasks, ResourcesOf&& resources_of, EarliestOf&& earliest_s,
                  WorkOf&& work_s, std::span<double> start_s, std::span<double> end_s,
                  std::span<double> free_s) {
  for (int g = 0; g < num_tasks; ++g) {
    const auto& res = resources_of(g);
    double st = earliest_s(g);
    for (auto r : res) st = std::max(st, free_s[r]);
    const double end = st + work_s(g);
    start_s[g] = st;
    end_s[g] = end;
    for (auto r : res) free_s[r] = end;
  }
}

}  // namespace tessera::sim
