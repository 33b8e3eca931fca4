#include "xema/serve/plan_job_admission.h"

namespace tessera::xema {

PlanJobAdmission::PlanJobAdmission(const ServingPlan& plan, int devices, int64_t region_bytes)
    : plan_(plan), admission_(plan, devices, region_bytes) {}

std::optional<serve::Placement> PlanJobAdmission::Admit(serve::Job& head) {
  auto& job = static_cast<DiffusionJob&>(head);
  const std::optional<xema::Admission> a = admission_.Admit(job.route);
  if (!a) return std::nullopt;
  job.admission = *a;
  if (a->span > 1) job.world = std::make_shared<comm::InProcessWorld>(a->span);
  return serve::Placement{a->device, a->span};
}

void PlanJobAdmission::Release(serve::Job& job, const serve::Placement&) {
  auto& j = static_cast<DiffusionJob&>(job);
  admission_.Release(j.route, j.admission);
}

std::vector<std::shared_ptr<serve::Job>> PlanJobAdmission::TakeBatch(
    serve::Job& head, serve::BoundedQueue<std::shared_ptr<serve::Job>>& queue) {
  std::vector<Route> waiting;
  for (const auto& j : queue.items()) waiting.push_back(static_cast<DiffusionJob&>(*j).route);
  const std::vector<size_t> picked =
      BatchMates(plan_, static_cast<DiffusionJob&>(head).route, waiting);
  return queue.Take(picked);
}

}  // namespace tessera::xema
