#include "xema/pipeline/template_check.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <memory>

#include "core/memory_info.h"
#include "runtime/device_allocator.h"
#include "xema/pipeline/caching_device_allocator.h"
#include "xema/pipeline/layout_allocator.h"
#include "xema/pipeline/trace_recorder.h"

namespace tessera::xema {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool BitwiseEqual(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Loads the model into `allocator` (with `host`, may be null), runs the request, unloads; the
// output in *output. With a host tier, its stats cover the request only; *parked_bytes gets
// the weights the request left parked.
core::Status RunOnce(const TinyModelSpec& spec, const DiffusionRequest& request,
                     runtime::DeviceAllocator& allocator, std::vector<float>* output, double* run_s,
                     HostTier* host = nullptr, int64_t* parked_bytes = nullptr) {
  ASSIGN_OR_RETURN(std::unique_ptr<DiffusionPipeline> pipeline,
                   DiffusionPipeline::Load(spec, allocator, host));
  output->assign(static_cast<size_t>(OutputFloats(request)), 0.0f);
  if (host != nullptr) host->ResetStats();
  const auto t0 = std::chrono::steady_clock::now();
  core::Status s = pipeline->Run(request, *output);
  *run_s = SecondsSince(t0);
  if (parked_bytes != nullptr) *parked_bytes = pipeline->ParkedWeightBytes();
  return s;
}

// The host budget for a run of `request`, or Infeasible when it cannot fit.
core::StatusOr<int64_t> HostBudget(const TinyModelSpec& spec, const DiffusionRequest& request,
                                   int64_t host_budget_bytes) {
  int64_t budget = host_budget_bytes;
  if (budget <= 0) budget = HostMemoryBudgetBytes();
  if (budget <= 0) return int64_t{0};  // unknown: unbounded
  const int64_t need = MinimumPeakBytes(spec, request);
  if (need > budget) {
    return core::Infeasible(fmt::format(
        "request {}x{}x{}: needs at least {} bytes of memory (weights and the VAE's "
        "full-resolution activations), more than the {} bytes this host can give it; use a "
        "smaller size, fewer frames, more VAE slices or more VAE tiles",
        request.width, request.height, request.frames, need, budget));
  }
  return budget;
}

}  // namespace

int64_t HostMemoryBudgetBytes() { return core::AvailableMemoryBytes() / 10 * 8; }

core::StatusOr<RecordedRequest> RecordRequest(const TinyModelSpec& spec,
                                              const DiffusionRequest& request,
                                              int64_t host_budget_bytes, HostTier* host) {
  RETURN_IF_ERROR(ValidateRequest(spec, request));
  ASSIGN_OR_RETURN(const int64_t budget, HostBudget(spec, request, host_budget_bytes));
  RecordedRequest r;
  runtime::HeapDeviceAllocator heap(budget);
  {
    TraceRecorder recorder(heap);
    RETURN_IF_ERROR(
        RunOnce(spec, request, heap, &r.output, &r.run_s, host, &r.parked_weight_bytes));
    if (host != nullptr) {
      r.host = host->stats();
      r.restore_s = host->CopySeconds(r.parked_weight_bytes);
    }
    // The pipeline is unloaded here: the weights are released after the last op.
    ASSIGN_OR_RETURN(r.trace, recorder.Finish(KeyOf(request)));
  }
  r.measured_peak_bytes = heap.peak_bytes();
  ASSIGN_OR_RETURN(ExpandedTrace x, Expand(r.trace));
  r.weight_bytes = WeightBytes(x);
  return r;
}

core::StatusOr<RecordedRequest> RecordActivations(DiffusionPipeline& pipeline,
                                                  const DiffusionRequest& request,
                                                  int64_t activation_budget_bytes, HostTier* host,
                                                  const SpMember* sp) {
  RETURN_IF_ERROR(ValidateRequest(pipeline.spec(), request));
  const int64_t budget =
      activation_budget_bytes > 0 ? activation_budget_bytes : HostMemoryBudgetBytes();
  RecordedRequest r;
  runtime::HeapDeviceAllocator heap(budget);
  {
    TraceRecorder recorder(heap);
    const bool decodes = sp == nullptr || sp->member == 0;
    r.output.assign(decodes ? static_cast<size_t>(OutputFloats(request)) : 0, 0.0f);
    if (host != nullptr) host->ResetStats();
    const auto t0 = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(pipeline.Run(request, r.output, &heap, sp));
    r.run_s = SecondsSince(t0);
    if (host != nullptr) r.host = host->stats();
    TraceKey key = KeyOf(request);
    if (sp != nullptr) key.sp_degree = sp->degree();
    ASSIGN_OR_RETURN(r.trace, recorder.Finish(key));
  }
  r.measured_peak_bytes = heap.peak_bytes();
  return r;
}

core::StatusOr<TemplateCheck> CheckTemplate(const TinyModelSpec& spec,
                                            const DiffusionRequest& request,
                                            const TemplateCheckOptions& options) {
  TemplateCheck c;
  ASSIGN_OR_RETURN(c.recorded, RecordRequest(spec, request, options.host_budget_bytes));
  ASSIGN_OR_RETURN(const int64_t budget, HostBudget(spec, request, options.host_budget_bytes));
  ASSIGN_OR_RETURN(ExpandedTrace x, Expand(c.recorded.trace));
  c.lower_bound_bytes = LowerBoundBytes(x);
  ASSIGN_OR_RETURN(std::vector<Layout> layouts,
                   PlanAllLayouts(x, options.layout, &c.layouts_skipped));
  std::vector<AllocatorPolicy> policies;
  for (const std::string& p : options.policies) {
    ASSIGN_OR_RETURN(AllocatorPolicy policy, ParseAllocatorPolicy(p));
    policies.push_back(policy);
  }
  const int total = 1 + static_cast<int>(layouts.size() + policies.size());
  int done = 1;
  if (options.progress) options.progress(done, total);

  c.ok = c.recorded.measured_peak_bytes == c.lower_bound_bytes;
  for (Layout& layout : layouts) {
    LayoutRunRow row;
    ASSIGN_OR_RETURN(std::unique_ptr<LayoutDeviceAllocator> arena,
                     LayoutDeviceAllocator::Create(x, layout));
    std::vector<float> out;
    core::Status s = RunOnce(spec, request, *arena, &out, &row.run_s);
    if (s.ok()) s = arena->status();
    if (!s.ok()) row.error = s.ToString();
    row.output_equal = s.ok() && BitwiseEqual(out, c.recorded.output);
    c.ok = c.ok && row.output_equal;
    row.layout = std::move(layout);
    c.layouts.push_back(std::move(row));
    if (options.progress) options.progress(++done, total);
  }
  for (const AllocatorPolicy& policy : policies) {
    CachingRunRow row;
    row.policy = PolicyName(policy);
    AllocatorPolicy limited = policy;
    limited.device_limit_bytes = budget;  // host memory: the replay below gets the same limit
    CachingDeviceAllocator caching(limited);
    std::vector<float> out;
    const core::Status s = RunOnce(spec, request, caching, &out, &row.run_s);
    if (!s.ok()) row.error = s.ToString();
    row.stats = caching.stats();
    row.replay_peak_reserved = ReplayTrace(x, limited).stats.peak_reserved_bytes;
    row.output_equal = s.ok() && BitwiseEqual(out, c.recorded.output);
    c.ok = c.ok && row.output_equal && row.stats.peak_reserved_bytes == row.replay_peak_reserved;
    c.caching.push_back(std::move(row));
    if (options.progress) options.progress(++done, total);
  }
  return c;
}

core::Json ToJson(const TemplateCheck& c) {
  core::Json layouts = core::Json::array();
  for (const LayoutRunRow& r : c.layouts) {
    core::Json j = SummaryJson(r.layout, c.lower_bound_bytes);
    j["output_equal"] = r.output_equal;
    j["run_s"] = r.run_s;
    j["error"] = r.error;
    layouts.push_back(std::move(j));
  }
  core::Json caching = core::Json::array();
  for (const CachingRunRow& r : c.caching) {
    caching.push_back({{"policy", r.policy},
                       {"peak_reserved_bytes", r.stats.peak_reserved_bytes},
                       {"replay_peak_reserved_bytes", r.replay_peak_reserved},
                       {"peak_allocated_bytes", r.stats.peak_allocated_bytes},
                       {"fragmentation", r.stats.Fragmentation()},
                       {"output_equal", r.output_equal},
                       {"run_s", r.run_s},
                       {"error", r.error}});
  }
  return {{"trace", Describe(c.recorded.trace)},
          {"measured_peak_bytes", c.recorded.measured_peak_bytes},
          {"lower_bound_bytes", c.lower_bound_bytes},
          {"weight_bytes", c.recorded.weight_bytes},
          {"plain_run_s", c.recorded.run_s},
          {"layouts", std::move(layouts)},
          {"layouts_skipped", c.layouts_skipped},
          {"caching", std::move(caching)},
          {"ok", c.ok},
          {"label", "measured on this machine (sizes exact, times wall-clock)"}};
}

}  // namespace tessera::xema
