// `tessera xema trace`: runs one request of the tiny diffusion pipeline for real under a
// recording allocator and writes its template memory trace (and the live-bytes timeline).
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/xema/request_options.h"
#include "cli/xema/trace_source.h"
#include "core/byte_size.h"
#include "core/json_util.h"
#include "core/output_file.h"
#include "kernels/gemm.h"
#include "xema/memory_trace.h"
#include "xema/pipeline/model_file.h"
#include "xema/pipeline/template_check.h"
#include "xema/timeline.h"

namespace tessera::cli {
namespace {

struct TraceArgs {
  RequestArgs request;
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

core::Status RunTrace(const TraceArgs& a) {
  if (!a.analytic.empty()) return RunAnalytic(a);
  ASSIGN_OR_RETURN(xema::TinyModelSpec spec, xema::ResolveTinyModel(a.request.model));
  ASSIGN_OR_RETURN(xema::DiffusionRequest request, ToRequest(a.request, spec));
  // A device is one core: the GEMMs run single-threaded (as each MPI rank does).
  RETURN_IF_ERROR(kernels::SetBlasNumThreads(1));
  ASSIGN_OR_RETURN(xema::RecordedRequest r, xema::RecordRequest(spec, request));
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
  paths->RecordInput("--model", &a->request.model);  // a preset name or a model file
  c->add_option("--analytic", a->analytic,
                "instead of running --model: the modeled trace of flux2-dev, cogvideox-5b or "
                "ltx-2 (--size, --frames, --steps, --cfg, --attention apply)");
  paths->Output(c, "--out", &a->out_path, "write the trace JSON here")->required();
  paths->Output(c, "--timeline", &a->timeline_path, "write the live-bytes timeline CSV here");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunTrace(*a); }); });
}

}  // namespace tessera::cli
