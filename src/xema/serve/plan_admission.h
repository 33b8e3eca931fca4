// PlanAdmission: which device a request routed by a serving plan (serving_plan.h) starts on,
// and where its arena lies there; the one rule both the server and the serving simulation
// (xema/planner/serving_sim.h) follow, so that the simulation admits exactly as the server does.
//
// Per device: an activation region of `region_bytes` (the budget less every model's weights),
// the arenas in flight placed in it first fit (ArenaPlacer), and per plan entry the requests of
// it in flight. A request of entry e (exact or covered route) is admitted on a device where
// fewer than e.concurrency requests of e are in flight, no fallback request runs, and
// e.arena_bytes fit in the region: of those, the one running the fewest requests (ties: the
// lowest index), so that requests spread over idle devices before they share one; a fallback
// request only on an idle device (the lowest), which it then holds alone. An entry of SP
// degree d > 1 runs each request as a gang over the d devices of one replica group (devices
// g d .. g d + d - 1, fixed): it is admitted on a group where every member admits it as above
// (its arena placed on each member), all at once or not at all; of those, the group whose
// busiest member runs the fewest requests (ties: the lowest). Strict FCFS is the caller's: it
// offers the queue's head and stops at the first refusal. Not thread-safe (the server calls it
// under its lock).
// Batching (BatchMates): an admitted head of an exact route to an entry of batch b > 1 takes
// with it up to b - 1 more waiting requests routed exactly to the same entry, the first in
// queue order, into the same run (one slot, one arena; no waiting for a batch to fill).
// Covered and fallback requests run alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "xema/serve/arena_placer.h"
#include "xema/serve/serving_plan.h"

namespace tessera::xema {

struct Admission {
  int device = -1;      // the first device (of the gang)
  int64_t offset = -1;  // of the arena in the device's region; -1 for the fallback
  int span = 1;         // devices held: device .. device + span - 1 (the entry's SP degree)
  std::vector<int64_t> offsets;  // per device held, for a planned entry (offsets[0] == offset)
};

// The indices into `waiting` (the routes queued behind an admitted head, in queue order) of
// the requests that join the head's run: see the file comment. Empty for a batch of 1.
std::vector<size_t> BatchMates(const ServingPlan& plan, const Route& head,
                               std::span<const Route> waiting);

// Takes the head's batch mates out of `queue` (the requests waiting behind the admitted head,
// in order; route_of(element) gives each one's route) and returns them in queue order.
template <typename T, typename RouteOf>
std::vector<T> TakeBatchMates(const ServingPlan& plan, const Route& head, std::deque<T>& queue,
                              RouteOf route_of) {
  std::vector<Route> waiting;
  for (const T& x : queue) waiting.push_back(route_of(x));
  const std::vector<size_t> picked = BatchMates(plan, head, waiting);
  std::vector<T> mates;
  for (const size_t i : picked) mates.push_back(queue[i]);
  for (auto i = picked.rbegin(); i != picked.rend(); ++i)
    queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(*i));
  return mates;
}

class PlanAdmission {
 public:
  PlanAdmission(const ServingPlan& plan, int devices, int64_t region_bytes);

  // Admits (and reserves) or returns nullopt.
  std::optional<Admission> Admit(const Route& route);
  void Release(const Route& route, const Admission& admission);

  int running(int device) const { return devices_[static_cast<size_t>(device)].running; }
  int64_t used_bytes(int device) const {
    return devices_[static_cast<size_t>(device)].placer.used_bytes();
  }

 private:
  struct Device {
    ArenaPlacer placer;
    std::vector<int> in_flight;  // per entry
    int running = 0;
    bool exclusive = false;
  };
  // True when device d admits entry e (not exclusive, a free slot, the arena fits).
  bool Fits(size_t d, size_t e) const;

  std::vector<int64_t> arena_bytes_;
  std::vector<int> concurrency_;
  std::vector<int> sp_degree_;
  std::vector<Device> devices_;
};

}  // namespace tessera::xema
