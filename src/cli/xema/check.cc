// `tessera xema check`: records a request template of the tiny pipeline, then runs it again
// for real from every static layout (in an arena of exactly the layout's size) and under the
// caching-allocator replay, and reports the sizes and whether every output is bitwise equal.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/xema/request_options.h"
#include "core/byte_size.h"
#include "core/json_util.h"
#include "core/progress.h"
#include "core/table.h"
#include "kernels/gemm.h"
#include "xema/pipeline/model_file.h"
#include "xema/pipeline/template_check.h"

namespace tessera::cli {
namespace {

struct CheckArgs {
  RequestArgs request;
  double milp_time_limit_s = 10;
  std::string json_path;
};

std::string Ratio(int64_t a, int64_t b) {
  return b > 0 ? core::Fixed(static_cast<double>(a) / static_cast<double>(b), 4) + "x" : "-";
}

core::Status RunCheck(const CheckArgs& a) {
  ASSIGN_OR_RETURN(xema::TinyModelSpec spec, xema::ResolveTinyModel(a.request.model));
  ASSIGN_OR_RETURN(xema::DiffusionRequest request, ToRequest(a.request, spec));
  // A device is one core: the GEMMs run single-threaded (as each MPI rank does).
  RETURN_IF_ERROR(kernels::SetBlasNumThreads(1));
  xema::TemplateCheckOptions options;
  options.layout.milp_time_limit_s = a.milp_time_limit_s;
  std::unique_ptr<core::ProgressBar> bar;
  options.progress = [&bar](int done, int total) {
    if (!bar) bar = std::make_unique<core::ProgressBar>("xema check", total);
    bar->Update(done);
  };
  ASSIGN_OR_RETURN(xema::TemplateCheck c, xema::CheckTemplate(spec, request, options));
  if (bar) bar->Done();
  const int64_t lb = c.lower_bound_bytes;
  std::printf("trace %s\n", xema::Describe(c.recorded.trace).c_str());
  std::printf("peak live: measured %lld bytes, trace lower bound %lld bytes (%s); weights %s\n",
              static_cast<long long>(c.recorded.measured_peak_bytes), static_cast<long long>(lb),
              c.recorded.measured_peak_bytes == lb ? "equal" : "DIFFERENT",
              core::FormatBytes(c.recorded.weight_bytes).c_str());
  core::Table t(
      {"allocator", "arena / peak reserved", "bytes", "vs lower bound", "output", "run s", "note"});
  t.AddRow({"plain", core::FormatBytes(c.recorded.measured_peak_bytes),
            std::to_string(c.recorded.measured_peak_bytes),
            Ratio(c.recorded.measured_peak_bytes, lb), "reference",
            core::Fixed(c.recorded.run_s, 3), "heap, one block per tensor"});
  for (const xema::LayoutRunRow& r : c.layouts) {
    t.AddRow({"layout:" + r.layout.algorithm, core::FormatBytes(r.layout.arena_bytes),
              std::to_string(r.layout.arena_bytes), Ratio(r.layout.arena_bytes, lb),
              r.output_equal ? "bitwise equal" : "DIFFERENT", core::Fixed(r.run_s, 3),
              r.error.empty() ? r.layout.detail : r.error});
  }
  for (const xema::CachingRunRow& r : c.caching) {
    const bool replay_equal = r.stats.peak_reserved_bytes == r.replay_peak_reserved;
    t.AddRow({"caching:" + r.policy, core::FormatBytes(r.stats.peak_reserved_bytes),
              std::to_string(r.stats.peak_reserved_bytes), Ratio(r.stats.peak_reserved_bytes, lb),
              r.output_equal ? "bitwise equal" : "DIFFERENT", core::Fixed(r.run_s, 3),
              r.error.empty() ? std::string(replay_equal ? "= replay of the trace"
                                                         : "replay of the trace differs: ") +
                                    (replay_equal ? "" : std::to_string(r.replay_peak_reserved))
                              : r.error});
  }
  std::printf("%s", t.Render().c_str());
  if (!c.layouts_skipped.empty()) std::printf("%s\n", c.layouts_skipped.c_str());
  std::printf("(measured on this machine: sizes exact, times wall-clock)\n");
  if (!a.json_path.empty()) RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, xema::ToJson(c)));
  if (!c.ok) return core::Internal("check failed: see the rows marked above");
  std::printf("check passed\n");
  return core::Status::Ok();
}

}  // namespace

void AddXemaCheck(CLI::App* xema, Action* action) {
  auto a = std::make_shared<CheckArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = xema->add_subcommand(
      "check", "Record a request, then rerun it from every static layout and allocator policy");
  AddRequestOptions(c, &a->request);
  paths->RecordInput("--model", &a->request.model);  // a preset name or a model file
  c->add_option("--milp-time-limit", a->milp_time_limit_s, "seconds for the exact MILP")
      ->check(PositiveNumber(3600))
      ->capture_default_str();
  paths->Output(c, "--json", &a->json_path, "write the results as JSON here");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunCheck(*a); }); });
}

}  // namespace tessera::cli
