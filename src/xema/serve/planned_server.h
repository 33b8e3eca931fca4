// PlannedServer: the DiffusionServer (server.h) of a serving plan (serving_plan.h, `serve
// --plan`): the plan decides the memory control and concurrency of every template (policy is
// unused, reported "plan"). Start records and lays out every entry of the plan before the
// listener opens (RecordPlanEntries: nothing is planned at request time) and checks that the
// plan fits the budget and devices. Each device is a PlannedDevice (planned_device.h) run by
// SlotsPerDevice() worker threads pinned to one core (the host's last cores, device 0 on the
// last; unpinned when the devices outnumber the cores); the serving core admits the queue's
// head by PlanJobAdmission (plan_job_admission.h: arenas, concurrency, fallback alone, SP gangs
// over the in-process communicator, batch mates). A template missing from the table is routed
// to a covering entry or the fallback, logged on stderr ("template miss: ...") and counted.
// Replies add "route" (exact, covered, fallback); /v1/metrics adds per device the "cpu",
// "template_misses" {"covered", "fallback"} and "batch_mates"; "templates_planned" is the
// number of plan entries.
// Errors: Start returns InvalidArgument naming the table (options.serving_plan_source) for a
// plan that does not fit (device, weights above the budget, recorded layouts that differ from
// the plan's arenas) and the errors of PlannedDevice::Create.
// Thread-safety: as DiffusionServer.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "xema/serve/planned_device.h"
#include "xema/serve/server.h"

namespace tessera::xema {

class PlannedServer final : public DiffusionServer {
 public:
  // `options` must pass ValidateServerOptions and have a serving plan.
  static core::StatusOr<std::unique_ptr<PlannedServer>> Start(const ServerOptions& options);
  ~PlannedServer() override;

 protected:
  std::string PolicyName() const override { return "plan"; }
  MemoryPolicy StrongestPolicy() const override { return MemoryPolicy::kTiling; }
  void RouteJob(DiffusionJob& job) override;
  void AddReplyFields(const DiffusionJob& job, core::Json& body) const override;
  void AddMetrics(core::Json& metrics) const override;

 private:
  explicit PlannedServer(const ServerOptions& options) : DiffusionServer(options) {}
  // Runs member `member` of `job`'s pass on `device` (member 0 answers).
  core::Status RunMember(DiffusionJob& job, int device, int member);

  std::unique_ptr<PlanRecordings> recordings_;
  std::vector<std::unique_ptr<PlannedDevice>> devices_;
  std::atomic<int64_t> misses_covered_{0};
  std::atomic<int64_t> misses_fallback_{0};
};

}  // namespace tessera::xema
