// `tessera xema loadgen`: an open-loop load against a diffusion server
// (xema/serve/loadgen.h), with a progress bar on stderr; prints the report and, with --json,
// writes it.
#include "xema/serve/loadgen.h"

#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "core/json_util.h"
#include "core/progress.h"
#include "core/table.h"

namespace tessera::cli {
namespace {

struct LoadgenArgs {
  std::string url;
  double rate_rps = 1;
  std::string arrivals = "poisson";
  double cv = 1;
  std::string mix;
  std::string trace;  // recorded arrivals instead of --rate / --arrivals / --duration
  double duration_s = 10;
  uint64_t seed = 1;
  double slo_scale = 5;
  std::vector<double> slo_reference_s;  // per template; empty: each template's solo latency here
  std::string json_path;
};

core::Status RunLoadgenCommand(const LoadgenArgs& a) {
  xema::LoadgenOptions o;
  o.url = a.url;
  o.rate_rps = a.rate_rps;
  ASSIGN_OR_RETURN(o.arrivals, serve::ParseArrivalKind(a.arrivals));
  o.cv = a.cv;
  ASSIGN_OR_RETURN(o.mix, xema::ReadMix(a.mix));
  o.duration_s = a.duration_s;
  if (!a.trace.empty()) {
    ASSIGN_OR_RETURN(o.trace, serve::ReadArrivalTrace(a.trace, static_cast<int>(o.mix.size())));
  }
  o.seed = a.seed;
  o.slo_scale = a.slo_scale;
  o.reference_solo_s = a.slo_reference_s;
  std::unique_ptr<core::ProgressBar> bar;
  o.progress = [&bar](int64_t done, int64_t total) {
    if (!bar) bar = std::make_unique<core::ProgressBar>("xema loadgen", total);
    bar->Update(done);
  };
  ASSIGN_OR_RETURN(xema::LoadgenReport r, xema::RunLoadgen(o));
  if (bar) bar->Done();
  core::Table t({"template", "solo s", "SLO s", "sent", "completed", "SLO met"});
  for (const xema::TemplateLoad& tl : r.templates) {
    const bool solo = tl.solo_error.empty();
    const size_t i = static_cast<size_t>(&tl - r.templates.data());
    const double ref = a.slo_reference_s.empty() ? tl.solo_latency_s : a.slo_reference_s[i];
    t.AddRow({tl.label, solo ? core::Fixed(tl.solo_latency_s, 3) : "refused",
              solo || !a.slo_reference_s.empty() ? core::Fixed(a.slo_scale * ref, 3) : "-",
              std::to_string(tl.sent), std::to_string(tl.completed), std::to_string(tl.slo_met)});
  }
  std::printf("%s", t.Render().c_str());
  for (const xema::TemplateLoad& tl : r.templates) {
    if (!tl.solo_error.empty()) {
      std::printf("solo %s refused: %s\n", tl.label.c_str(), tl.solo_error.c_str());
    }
  }
  std::string status;
  for (const auto& [code, n] : r.status_counts) {
    status += (status.empty() ? "" : ", ") + std::to_string(code) + ": " + std::to_string(n);
  }
  std::printf(
      "arrivals %lld, sent %lld, completed %lld, not sent %lld, transport errors %lld; "
      "status {%s}\n",
      static_cast<long long>(r.planned), static_cast<long long>(r.sent),
      static_cast<long long>(r.completed), static_cast<long long>(r.not_sent),
      static_cast<long long>(r.transport_errors), status.c_str());
  std::printf(
      "SLO attainment %.1f%% (x%s solo); latency p50 %.3f s, p99 %.3f s; "
      "throughput %.2f req/s over %.1f s (measured)\n",
      100 * r.slo_attainment, core::Fixed(a.slo_scale, 2).c_str(), r.latency_p50_s, r.latency_p99_s,
      r.throughput_rps, r.wall_s);
  if (!a.json_path.empty()) RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, ToJson(r, o)));
  return core::Status::Ok();
}

}  // namespace

void AddXemaLoadgen(CLI::App* xema, Action* action) {
  auto a = std::make_shared<LoadgenArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c =
      xema->add_subcommand("loadgen", "Open-loop load against a diffusion server, SLO report");
  c->add_option("--url", a->url, "the server, http://HOST:PORT")->required();
  c->add_option("--rate", a->rate_rps, "requests per second")
      ->check(PositiveNumber(10000))
      ->capture_default_str();
  c->add_option("--arrivals", a->arrivals, "poisson or gamma")->capture_default_str();
  c->add_option("--cv", a->cv, "gamma: coefficient of variation of the gaps")
      ->check(Number(0.05, 20))
      ->capture_default_str();
  c->add_option("--mix", a->mix,
                "templates: a JSON file or inline, e.g. "
                "'[{\"model\":\"tiny-t2i\",\"size\":\"64x64\",\"steps\":4,\"weight\":3}]'")
      ->required();
  paths->RecordInput("--mix", &a->mix);
  paths->Input(c, "--trace", &a->trace,
               "recorded arrivals instead of --rate: a JSON array of {\"at_s\", \"template\" "
               "(index into the mix)}");
  c->add_option("--duration", a->duration_s, "seconds of arrivals")
      ->check(PositiveNumber(86400))
      ->capture_default_str();
  c->add_option("--seed", a->seed, "arrival and template seed")
      ->check(Seed())
      ->capture_default_str();
  ListOption(c, "--slo-reference", &a->slo_reference_s,
             "per mix template, the latency the SLO scales (comma separated seconds, e.g. a "
             "plan table's isolated latencies); default: each template's solo latency here",
             PositiveNumber(1e6));
  c->add_option("--slo-scale", a->slo_scale, "SLO = this x the template's solo latency")
      ->check(PositiveNumber(1e6))
      ->capture_default_str();
  paths->Output(c, "--json", &a->json_path, "write the report as JSON here");
  c->callback(
      [action, a, paths] { *action = Checked(paths, [a] { return RunLoadgenCommand(*a); }); });
}

}  // namespace tessera::cli
