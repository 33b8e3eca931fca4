#include "xema/serve/plan_admission.h"

namespace tessera::xema {

PlanAdmission::PlanAdmission(const ServingPlan& plan, int devices, int64_t region_bytes) {
  for (const ServingPlanEntry& e : plan.entries) {
    arena_bytes_.push_back(e.arena_bytes);
    concurrency_.push_back(e.concurrency);
  }
  devices_.resize(static_cast<size_t>(devices));
  for (Device& d : devices_) {
    d.placer = ArenaPlacer(region_bytes);
    d.in_flight.assign(plan.entries.size(), 0);
  }
}

std::optional<Admission> PlanAdmission::Admit(const Route& route) {
  for (size_t i = 0; i < devices_.size(); ++i) {
    Device& d = devices_[i];
    if (d.exclusive) continue;
    if (route.kind == RouteKind::kFallback) {
      if (d.running > 0) continue;
      d.exclusive = true;
      d.running = 1;
      return Admission{static_cast<int>(i), -1};
    }
    const auto e = static_cast<size_t>(route.entry);
    if (d.in_flight[e] >= concurrency_[e]) continue;
    const std::optional<int64_t> at = d.placer.Place(arena_bytes_[e]);
    if (!at) continue;
    ++d.in_flight[e];
    ++d.running;
    return Admission{static_cast<int>(i), *at};
  }
  return std::nullopt;
}

void PlanAdmission::Release(const Route& route, const Admission& a) {
  Device& d = devices_[static_cast<size_t>(a.device)];
  --d.running;
  if (route.kind == RouteKind::kFallback) {
    d.exclusive = false;
    return;
  }
  --d.in_flight[static_cast<size_t>(route.entry)];
  d.placer.Free(a.offset);
}

}  // namespace tessera::xema
