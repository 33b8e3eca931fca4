// DiffusionJob: one generation request on its way through a DiffusionServer (server.h): the
// serving core's Job (serve/job.h: arrival, deadline, status, device, batch mates) with the
// parsed request, its run and, under a serving plan, its route, admission and SP gang.
// Thread-safety: as serve::Job; `world` is shared by the gang's members (thread-safe).
#pragma once

#include <memory>

#include "comm/in_process_communicator.h"
#include "serve/job.h"
#include "xema/serve/plan_admission.h"
#include "xema/serve/request_json.h"
#include "xema/serve/serve_device.h"
#include "xema/serve/serving_plan.h"

namespace tessera::xema {

struct DiffusionJob : serve::Job {
  GenerationRequest request;
  DeviceRun run;  // set by the worker before `done`
  // With a serving plan: the route, and the admission once admitted.
  Route route;
  Admission admission;
  // An SP gang (admission.span > 1): its members' communicator (one rank per member device,
  // threads of this process).
  std::shared_ptr<comm::InProcessWorld> world;
};

}  // namespace tessera::xema
