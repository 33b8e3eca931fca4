#include "cli/xema/trace_source.h"

#include "xema/analytic_trace.h"

namespace tessera::cli {

void AddTraceSourceOptions(CLI::App* app, TraceSourceArgs* a, CommandPaths* paths) {
  paths->Input(app, "--trace", &a->trace_path, "memory trace JSON (tessera.xema.trace/1)");
  app->add_option("--analytic", a->analytic,
                  "instead of --trace: a modeled trace of flux2-dev, cogvideox-5b or ltx-2");
  app->add_option("--size", a->size, "with --analytic: WIDTHxHEIGHT")->capture_default_str();
  app->add_option("--frames", a->frames, "with --analytic: video frames (1 for images)")
      ->transform(Integer(1, 1025))
      ->capture_default_str();
  app->add_option("--steps", a->steps, "with --analytic: denoising steps")
      ->transform(Integer(1, xema::kMaxSteps))
      ->capture_default_str();
  app->add_option("--cfg", a->cfg, "with --analytic: on, off or default (the model's)")
      ->capture_default_str();
  app->add_flag("--unfused-attention", a->unfused_attention,
                "with --analytic: materialize the attention scores");
}

core::StatusOr<xema::MemoryTrace> LoadTraceSource(const TraceSourceArgs& a) {
  if (a.trace_path.empty() == a.analytic.empty()) {
    return core::InvalidArgument("--trace / --analytic: give exactly one (got " +
                                 std::string(a.trace_path.empty() ? "neither" : "both") + ")");
  }
  if (!a.trace_path.empty()) return xema::ReadTraceFile(a.trace_path);
  xema::AnalyticRequest r;
  r.model = a.analytic;
  ASSIGN_OR_RETURN(auto size, xema::ParseImageSize(a.size));
  r.width = size.first;
  r.height = size.second;
  r.frames = a.frames;
  r.steps = a.steps;
  if (a.cfg == "on") {
    r.cfg = 1;
  } else if (a.cfg == "off") {
    r.cfg = 0;
  } else if (a.cfg != "default") {
    return core::InvalidArgument("--cfg: got '" + a.cfg + "', must be on, off or default");
  }
  r.fused_attention = !a.unfused_attention;
  return xema::AnalyticTrace(r);
}

}  // namespace tessera::cli
