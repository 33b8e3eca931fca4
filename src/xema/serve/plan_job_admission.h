// PlanJobAdmission: the serving core's Admission (serve/admission.h) of a PlannedServer: the
// rule of PlanAdmission (plan_admission.h: per device arenas placed first fit, per entry
// concurrency, fallback alone, SP gangs over replica groups) applied to DiffusionJobs, and its
// batching (BatchMates) as the core's TakeBatch hook. An admitted job of span > 1 gets the
// in-process communicator of its gang (comm/in_process_communicator.h). Every job it is
// offered must be a DiffusionJob routed by RouteRequest.
// Thread-safety: not thread-safe (the serving core calls it under its lock).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "serve/admission.h"
#include "xema/serve/diffusion_job.h"
#include "xema/serve/plan_admission.h"
#include "xema/serve/serving_plan.h"

namespace tessera::xema {

class PlanJobAdmission final : public serve::Admission {
 public:
  // `plan` must outlive this object.
  PlanJobAdmission(const ServingPlan& plan, int devices, int64_t region_bytes);

  std::optional<serve::Placement> Admit(serve::Job& head) override;
  void Release(serve::Job& job, const serve::Placement& placement) override;
  std::vector<std::shared_ptr<serve::Job>> TakeBatch(
      serve::Job& head, serve::BoundedQueue<std::shared_ptr<serve::Job>>& queue) override;

 private:
  const ServingPlan& plan_;
  PlanAdmission admission_;
};

}  // namespace tessera::xema
