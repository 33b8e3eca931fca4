// `tessera xema trace`: runs one request of the tiny diffusion pipeline for real under a
// recording allocator and writes its template memory trace (and the live-bytes timeline).
// With --offload the request parks tensors in a host tier over an emulated link (--host-gbps,
// --time-scale) and the command reports the copies and the seconds they exposed.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/xema/request_options.h"
#include "cli/xema/trace_source.h"
#include "core/byte_size.h"
#include "core/json_util.h"
#include "core/output_file.h"
#include "kernels/gemm.h"
#include "runtime/time_scale.h"
#include "xema/memory_trace.h"
#include "xema/pipeline/host_tier.h"
#include "xema/pipeline/model_file.h"
#include "xema/pipeline/template_check.h"
#include "xema/timeline.h"

namespace tessera::cli {
namespace {

struct TraceArgs {
  RequestArgs request;
  OffloadArgs offload;
  std::string analytic;
  std::string out_path;
  std::string timeline_path;
};

core::Status WriteOutputs(const TraceArgs& a, const xema::MemoryTrace& trace,
                          const xema::ExpandedTrace& x) {
  RETURN_IF_ERROR(core::WriteJsonFile(a.out_path, xema::ToJson(trace)));
  std::printf("wrote %s\n", a.out_path.c_str());
  if (!a.timeline_path.empty()) {
    RETURN_IF_ERROR(core::WriteFileAtomically(a.timeline_path, xema::TimelineCsv(trace, x)));
    std::printf("wrote %s (plot: python3 scripts/plot_xema_timeline.py %s --budget SIZE)\n",
                a.timeline_path.c_str(), a.timeline_path.c_str());
  }
  return core::Status::Ok();
}

// --analytic: the modeled trace of a public model at paper scale (nothing runs).
core::Status RunAnalytic(const TraceArgs& a) {
  TraceSourceArgs source;
  source.analytic = a.analytic;
  source.size = a.request.size;
  source.frames = a.request.frames;
  source.steps = a.request.steps;
  source.cfg = a.request.cfg;
  source.unfused_attention = a.request.attention != "fused";
  ASSIGN_OR_RETURN(xema::MemoryTrace trace, LoadTraceSource(source));
  ASSIGN_OR_RETURN(xema::ExpandedTrace x, xema::Expand(trace));
  std::printf("trace %s\n", xema::Describe(trace).c_str());
  std::printf("%zu ops, %zu tensor instances; weights %s; peak live %s (modeled)\n", x.ops.size(),
              x.tensors.size(), core::FormatBytes(xema::WeightBytes(x)).c_str(),
              core::FormatBytes(xema::LowerBoundBytes(x)).c_str());
  return WriteOutputs(a, trace, x);
}

// The host tier an offloading request runs over, and what it was built from.
core::StatusOr<std::unique_ptr<xema::HostTier>> MakeHostTier(const OffloadArgs& a,
                                                             const std::string& items) {
  ASSIGN_OR_RETURN(runtime::TimeScale scale, HostLinkTimeScale(a));
  ASSIGN_OR_RETURN(std::unique_ptr<xema::HostTier> tier,
                   xema::HostTier::ForDevice(a.host_gbps, scale));
  std::printf("offload %s: host link %s/s per direction = %g GB/s / time scale %.4g (%s)\n",
              items.c_str(), core::FormatBytes(static_cast<int64_t>(tier->bytes_per_s())).c_str(),
              a.host_gbps, scale.scale, scale.source.c_str());
  return tier;
}

void PrintHostStats(const xema::RecordedRequest& r, const xema::HostTier& tier) {
  const xema::HostTierStats& s = r.host;
  std::printf(
      "host copies: %lld to host (%s, link busy %.3f s), %lld to device (%s, %.3f s); "
      "host memory peak %s\n",
      static_cast<long long>(s.to_host_copies), core::FormatBytes(s.to_host_bytes).c_str(),
      s.to_host_busy_s, static_cast<long long>(s.to_device_copies),
      core::FormatBytes(s.to_device_bytes).c_str(), s.to_device_busy_s,
      core::FormatBytes(s.host_peak_bytes).c_str());
  std::printf("exposed copy time: %.3f s of the %.3f s request (measured)\n", s.exposed_s, r.run_s);
  if (r.parked_weight_bytes > 0) {
    std::printf(
        "weights left parked: %s; the next request restores them first (%.3f s on this "
        "link, less what its prologue overlaps)\n",
        core::FormatBytes(r.parked_weight_bytes).c_str(), tier.CopySeconds(r.parked_weight_bytes));
  }
}

core::Status RunTrace(const TraceArgs& a) {
  ASSIGN_OR_RETURN(const xema::OffloadSet offload, ParseOffloadList(a.offload.offload));
  if (!a.analytic.empty() && offload.any()) {
    return core::InvalidArgument("--offload: applies to a run of --model, not to --analytic");
  }
  if (!a.analytic.empty()) return RunAnalytic(a);
  ASSIGN_OR_RETURN(xema::TinyModelSpec spec, xema::ResolveTinyModel(a.request.model));
  ASSIGN_OR_RETURN(xema::DiffusionRequest request, ToRequest(a.request, spec));
  request.offload = offload;
  std::unique_ptr<xema::HostTier> tier;
  if (offload.any()) {
    ASSIGN_OR_RETURN(tier, MakeHostTier(a.offload, a.offload.offload));
  }
  // A device is one core: the GEMMs run single-threaded (as each MPI rank does).
  RETURN_IF_ERROR(kernels::SetBlasNumThreads(1));
  ASSIGN_OR_RETURN(xema::RecordedRequest r, xema::RecordRequest(spec, request, 0, tier.get()));
  ASSIGN_OR_RETURN(xema::ExpandedTrace x, xema::Expand(r.trace));
  const int64_t lb = xema::LowerBoundBytes(x);
  std::printf("trace %s\n", xema::Describe(r.trace).c_str());
  std::printf("ops: %zu prologue, %zu per step x %lld steps, %zu epilogue (%zu in all)\n",
              r.trace.prologue.size(), r.trace.body.size(),
              static_cast<long long>(r.trace.key.steps), r.trace.epilogue.size(), x.ops.size());
  std::printf("tensors: %zu in the template, %zu instances; weights %s\n", r.trace.tensors.size(),
              x.tensors.size(), core::FormatBytes(r.weight_bytes).c_str());
  std::printf("peak live: %s (%lld bytes) measured by the allocator, %lld in the trace: %s\n",
              core::FormatBytes(r.measured_peak_bytes).c_str(),
              static_cast<long long>(r.measured_peak_bytes), static_cast<long long>(lb),
              lb == r.measured_peak_bytes ? "equal" : "DIFFERENT");
  std::printf("request time: %.3f s measured on this machine\n", r.run_s);
  if (tier != nullptr) PrintHostStats(r, *tier);
  RETURN_IF_ERROR(WriteOutputs(a, r.trace, x));
  if (lb != r.measured_peak_bytes) {
    return core::Internal("the trace's peak differs from the measured peak");
  }
  return core::Status::Ok();
}

}  // namespace

void AddXemaTrace(CLI::App* xema, Action* action) {
  auto a = std::make_shared<TraceArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = xema->add_subcommand(
      "trace", "Run one request of the tiny diffusion pipeline and record its memory trace");
  AddRequestOptions(c, &a->request);
  AddOffloadOptions(c, &a->offload);
  paths->RecordInput("--model", &a->request.model);  // a preset name or a model file
  c->add_option("--analytic", a->analytic,
                "instead of running --model: the modeled trace of flux2-dev, cogvideox-5b or "
                "ltx-2 (--size, --frames, --steps, --cfg, --attention apply)");
  paths->Output(c, "--out", &a->out_path, "write the trace JSON here")->required();
  paths->Output(c, "--timeline", &a->timeline_path, "write the live-bytes timeline CSV here");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunTrace(*a); }); });
}

}  // namespace tessera::cli
