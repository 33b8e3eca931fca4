// `tessera xema mitigate`: the least-time set of memory mitigations that makes a request
// template of the tiny pipeline fit a device budget, found by profiling every candidate for
// real, solving the mitigation MILP and verifying the mitigated run (mitigation_planner.h).
#include <fmt/format.h>

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
#include "xema/pipeline/host_tier.h"
#include "xema/pipeline/mitigation_planner.h"
#include "xema/pipeline/model_file.h"

namespace tessera::cli {
namespace {

struct MitigateArgs {
  RequestArgs request;
  int64_t budget_bytes = 0;
  int64_t reserve_bytes = 0;
  int repeats = 2;
  int profile_steps = 2;
  bool consider_offload = false;
  OffloadArgs link;  // host_gbps, time_scale (its offload list is unused)
  std::string json_path;
};

core::Status RunMitigate(const MitigateArgs& a) {
  ASSIGN_OR_RETURN(xema::TinyModelSpec spec, xema::ResolveTinyModel(a.request.model));
  ASSIGN_OR_RETURN(xema::DiffusionRequest request, ToRequest(a.request, spec));
  RETURN_IF_ERROR(kernels::SetBlasNumThreads(1));  // a device is one core
  xema::MitigationPlanOptions options;
  options.budget_bytes = a.budget_bytes;
  options.reserve_bytes = a.reserve_bytes;
  options.repeats = a.repeats;
  options.profile_steps = a.profile_steps;
  std::unique_ptr<xema::HostTier> tier;
  if (a.consider_offload) {
    ASSIGN_OR_RETURN(runtime::TimeScale scale, HostLinkTimeScale(a.link));
    ASSIGN_OR_RETURN(tier, xema::HostTier::ForDevice(a.link.host_gbps, scale));
    std::printf("offload candidates: host link %g GB/s per direction at time scale %.4g (%s)\n",
                a.link.host_gbps, scale.scale, scale.source.c_str());
    options.candidates.offload = true;
    options.host = tier.get();
  }
  std::unique_ptr<core::ProgressBar> bar;
  options.progress = [&bar](int done, int total) {
    if (!bar) bar = std::make_unique<core::ProgressBar>("xema mitigate", total);
    bar->SetTotal(total);
    bar->Update(done);
  };
  ASSIGN_OR_RETURN(xema::MitigationPlan p, xema::PlanMitigations(spec, request, options));
  if (bar) bar->Done();
  std::printf("template %s %lldx%lldx%lld steps %lld cfg %s; budget %s, limit %s\n",
              spec.name.c_str(), static_cast<long long>(request.width),
              static_cast<long long>(request.height), static_cast<long long>(request.frames),
              static_cast<long long>(request.steps), request.cfg ? "on" : "off",
              core::FormatBytes(a.budget_bytes).c_str(), core::FormatBytes(p.limit_bytes).c_str());
  core::Table t({"action", "chosen", "added s", "strength", "options"});
  for (size_t i = 0; i < p.problem.actions.size(); ++i) {
    const xema::MitigationActionSpec& act = p.problem.actions[i];
    const xema::MitigationOptionSpec& o = act.options[p.choice.option[i]];
    t.AddRow({act.name, o.label, core::Fixed(o.added_s, 4), core::FormatBytes(o.saved_bytes),
              std::to_string(act.options.size() - 1)});
  }
  std::printf("%s", t.Render().c_str());
  std::printf("peak: unmitigated %s, predicted %s, verified %s (re-traced run, %s the limit)\n",
              core::FormatBytes(p.base_peak_bytes).c_str(),
              core::FormatBytes(p.choice.predicted_peak_bytes).c_str(),
              core::FormatBytes(p.verified_peak_bytes).c_str(), p.fits ? "within" : "OVER");
  std::printf("excess %s, saved %s, one action's granularity %s: %s\n",
              core::FormatBytes(p.excess_bytes).c_str(), core::FormatBytes(p.saved_bytes).c_str(),
              core::FormatBytes(p.granularity_bytes).c_str(),
              p.only_as_needed ? "only as much as needed" : "MORE than needed");
  std::printf(
      "time: unmitigated %.3f s, mitigated %.3f s (modeled added %.3f s); %d runs, %zu "
      "rows, MILP %.1f ms, %d re-traces cut off\n",
      p.base_s, p.mitigated_s, p.choice.added_s, p.runs, p.problem.rows.size(), p.choice.solve_ms,
      p.retraces);
  std::printf("(measured on this machine: bytes exact from recorded runs, times wall-clock)\n");
  if (!a.json_path.empty()) RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, xema::ToJson(p)));
  if (!p.fits) {
    return core::Infeasible(
        fmt::format("the template cannot fit {} with every candidate mitigation: {} over the limit",
                    core::FormatBytes(a.budget_bytes), core::FormatBytes(p.shortfall_bytes)));
  }
  return core::Status::Ok();
}

}  // namespace

void AddXemaMitigate(CLI::App* xema, Action* action) {
  auto a = std::make_shared<MitigateArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = xema->add_subcommand(
      "mitigate", "The least-time memory mitigations that fit a request into a budget, verified");
  AddRequestOptions(c, &a->request);
  paths->RecordInput("--model", &a->request.model);
  c->add_option("--budget", a->budget_bytes, "device memory budget, e.g. 48MiB")
      ->required()
      ->transform(ByteSize(1, core::kMaxByteSize));
  c->add_option("--reserve", a->reserve_bytes, "bytes the trace does not show (context, ...)")
      ->transform(ByteSize(0, core::kMaxByteSize))
      ->capture_default_str();
  c->add_option("--repeats", a->repeats, "recordings per configuration (its time is the minimum)")
      ->transform(Integer(1, 20))
      ->capture_default_str();
  c->add_option("--profile-steps", a->profile_steps, "steps recorded per profiling run")
      ->transform(Integer(1, 1000))
      ->capture_default_str();
  c->add_flag("--consider-offload", a->consider_offload,
              "also consider parking tensors in host memory over an emulated host link");
  AddHostLinkOptions(c, &a->link);
  paths->Output(c, "--json", &a->json_path, "write the plan as JSON here");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunMitigate(*a); }); });
}

}  // namespace tessera::cli
