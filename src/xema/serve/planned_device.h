// PlannedDevice: one serving device run by a serving plan (serving_plan.h): every model of the
// plan resident (loaded once), one activation region of the budget less the weights (mapped
// and touched once), and requests in flight at the same time, each on its own thread pinned
// to the device's core, each with its activations in the memory its route gives it:
//   exact     a static arena of the entry's recorded layout at the offset PlanAdmission gave
//             (LayoutDeviceAllocator over the region), the entry's mitigations;
//   covered   the covering entry's mitigations (tiling's always-on ones when they do not apply
//             to the smaller request) on a heap bounded by the entry's arena bytes;
//   fallback  a caching allocator (PyTorch's rules) bounded by the region's bytes, tiling's
//             always-on mitigations, the device held alone.
// An entry of SP degree d > 1 runs each request as a gang: Execute is called once on each of
// the d devices of the admission's group, at once, each with its member of the request's
// sequence-parallel group (`sp`); member m's activations lie in the arena of member m's own
// recorded layout at admission.offsets[m]; member 0 decodes and returns the image, the others
// an empty output.
// An entry of batch b > 1: a request that arrives with batch mates (the server's batch of k
// <= b, BatchMates) runs them in one pass from the arena of the layout recorded for a batch of
// k; the output holds every request's frames in turn.
// RecordPlanEntries records every entry's template once per batch size k = 1 .. batch
// (BatchTemplate; before serving; an SP entry on d pipelines at once, one layout per member)
// and checks that the largest of those layouts is the plan's arena to the byte (an SP entry:
// the largest member's): a plan made for another model or build is refused (InvalidArgument
// naming the entry). Errors of Execute: Infeasible (out of device memory:
// 507), FailedPrecondition (a replay diverged), the pipeline's own.
// Thread-safety: Execute from any number of threads at once (each with its own admission);
// Snapshot from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/device_allocator.h"
#include "xema/pipeline/tiny_pipeline.h"
#include "xema/serve/plan_admission.h"
#include "xema/serve/serve_device.h"
#include "xema/serve/serving_plan.h"

namespace tessera::xema {

struct PlanRecordings {
  // Per plan entry, per batch size k - 1 (k = 1 .. the entry's batch), per SP member (one for
  // SP degree 1).
  std::vector<std::vector<std::vector<std::shared_ptr<const TemplatePlan>>>> entries;
  std::map<std::string, int64_t> weight_bytes;  // per preset model of the plan
};

// Records `request` on `pipeline` with its activations on a heap bounded by
// activation_budget_bytes (<= 0: the host's bound), expands the trace and lays it out
// (tflite): the template's static arena. Infeasible when the activations do not fit.
core::StatusOr<std::shared_ptr<TemplatePlan>> RecordTemplatePlan(DiffusionPipeline& pipeline,
                                                                 const DiffusionRequest& request,
                                                                 int64_t activation_budget_bytes,
                                                                 const SpMember* sp = nullptr);

// The same for a sequence-parallel run over pipelines.size() = d members (one thread each, the
// in-process communicator; the pipelines of one spec, replicated weights): one plan per member.
core::StatusOr<std::vector<std::shared_ptr<TemplatePlan>>> RecordSpTemplatePlans(
    const std::vector<DiffusionPipeline*>& pipelines, const DiffusionRequest& request,
    int64_t activation_budget_bytes);
// The largest member's arena bytes.
int64_t SpArenaBytes(const std::vector<std::shared_ptr<TemplatePlan>>& members);

// Loads each model of the plan once and records each entry's (mitigated) template with its
// activations bounded by region_bytes.
core::StatusOr<PlanRecordings> RecordPlanEntries(const ServingPlan& plan, const std::string& source,
                                                 int64_t region_bytes);

class PlannedDevice {
 public:
  // `cpu`: the core its request threads pin to (-1: not pinned). `plan` and `recordings` must
  // outlive the device.
  static core::StatusOr<std::unique_ptr<PlannedDevice>> Create(int index, int cpu,
                                                               const ServingPlan& plan,
                                                               const PlanRecordings& recordings,
                                                               int64_t budget_bytes);
  ~PlannedDevice();
  PlannedDevice(const PlannedDevice&) = delete;
  PlannedDevice& operator=(const PlannedDevice&) = delete;

  core::StatusOr<DeviceRun> Execute(const DiffusionRequest& request, const Route& route,
                                    const Admission& admission, const SpMember* sp = nullptr);
  DeviceSnapshot Snapshot() const;
  int index() const { return index_; }
  int cpu() const { return cpu_; }
  int64_t region_bytes() const { return region_bytes_; }

 private:
  PlannedDevice(int index, int cpu, const ServingPlan& plan, const PlanRecordings& recordings,
                int64_t budget_bytes);
  void Account(int64_t delta_live_bytes, int64_t request_peak_bytes);

  int index_;
  int cpu_;
  const ServingPlan& plan_;
  const PlanRecordings& recordings_;
  int64_t budget_bytes_;
  runtime::HeapDeviceAllocator weights_;
  std::map<std::string, std::unique_ptr<DiffusionPipeline>> pipelines_;  // destroyed first
  char* region_ = nullptr;
  int64_t region_bytes_ = 0;

  std::atomic<int64_t> live_bytes_{0};
  std::atomic<int64_t> peak_bytes_{0};
  std::atomic<int64_t> peak_live_bytes_{0};
  std::atomic<int64_t> requests_{0};
};

}  // namespace tessera::xema
