#include "xema/serve/plan_admission.h"

#include <algorithm>

namespace tessera::xema {

std::vector<size_t> BatchMates(const ServingPlan& plan, const Route& head,
                               std::span<const Route> waiting) {
  std::vector<size_t> out;
  if (head.kind != RouteKind::kExact) return out;
  const size_t more = static_cast<size_t>(plan.entries[static_cast<size_t>(head.entry)].batch) - 1;
  for (size_t i = 0; i < waiting.size() && out.size() < more; ++i) {
    if (waiting[i].kind == RouteKind::kExact && waiting[i].entry == head.entry) out.push_back(i);
  }
  return out;
}

PlanAdmission::PlanAdmission(const ServingPlan& plan, int devices, int64_t region_bytes) {
  for (const ServingPlanEntry& e : plan.entries) {
    arena_bytes_.push_back(e.arena_bytes);
    concurrency_.push_back(e.concurrency);
    sp_degree_.push_back(e.sp_degree);
  }
  devices_.resize(static_cast<size_t>(devices));
  for (Device& d : devices_) {
    d.placer = ArenaPlacer(region_bytes);
    d.in_flight.assign(plan.entries.size(), 0);
  }
}

bool PlanAdmission::Fits(size_t d, size_t e) const {
  const Device& dev = devices_[d];
  return !dev.exclusive && dev.in_flight[e] < concurrency_[e] &&
         dev.placer.Find(arena_bytes_[e]).has_value();
}

std::optional<Admission> PlanAdmission::Admit(const Route& route) {
  if (route.kind == RouteKind::kFallback) {
    for (size_t i = 0; i < devices_.size(); ++i) {
      Device& d = devices_[i];
      if (d.exclusive || d.running > 0) continue;
      d.exclusive = true;
      d.running = 1;
      return Admission{static_cast<int>(i), -1, 1, {}};
    }
    return std::nullopt;
  }
  const auto e = static_cast<size_t>(route.entry);
  const auto span = static_cast<size_t>(sp_degree_[e]);
  size_t best = devices_.size();
  int best_load = 0;
  for (size_t g = 0; g + span <= devices_.size(); g += span) {
    bool all = true;
    int load = 0;
    for (size_t m = g; m < g + span && all; ++m) {
      all = Fits(m, e);
      load = std::max(load, devices_[m].running);
    }
    if (all && (best == devices_.size() || load < best_load)) {
      best = g;
      best_load = load;
    }
  }
  if (best == devices_.size()) return std::nullopt;
  Admission a{static_cast<int>(best), -1, static_cast<int>(span), {}};
  for (size_t m = best; m < best + span; ++m) {
    Device& d = devices_[m];
    a.offsets.push_back(*d.placer.Place(arena_bytes_[e]));
    ++d.in_flight[e];
    ++d.running;
  }
  a.offset = a.offsets[0];
  return a;
}

void PlanAdmission::Release(const Route& route, const Admission& a) {
  if (route.kind == RouteKind::kFallback) {
    Device& d = devices_[static_cast<size_t>(a.device)];
    --d.running;
    d.exclusive = false;
    return;
  }
  for (int m = 0; m < a.span; ++m) {
    Device& d = devices_[static_cast<size_t>(a.device + m)];
    --d.running;
    --d.in_flight[static_cast<size_t>(route.entry)];
    d.placer.Free(a.offsets[static_cast<size_t>(m)]);
  }
}

}  // namespace tessera::xema
