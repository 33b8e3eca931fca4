// `tessera xema abuse`: sends a diffusion server malformed, absurd, oversized and abandoned
// requests with a share of valid ones over many connections (xema/serve/abuse.h), prints a
// table per kind, the RSS samples and the verdict; --json writes the report. Exit 1 when the
// check fails.
#include "xema/serve/abuse.h"

#include <cstdio>
#include <memory>

#include "cli/abuse_report.h"
#include "cli/command.h"
#include "cli/options.h"
#include "core/byte_size.h"
#include "core/json_util.h"
#include "core/progress.h"
#include "core/table.h"
#include "serve/hostile.h"
#include "xema/serve/request_json.h"

namespace tessera::cli {
namespace {

core::Status RunAbuseCommand(const AbuseCliArgs& a) {
  RETURN_IF_ERROR(CheckAbuseArgs(a));
  if (a.hostile) {
    // The HTTP-level hostile clients with a small image request as the valid one.
    return RunHostileFromFlags(
        a, xema::GenerationRoute(xema::GenerationKind::kImage),
        R"({"model": "tiny-t2i", "prompt": "a hostile client", "size": "16x16", )"
        R"("num_inference_steps": 1, "seed": 1})");
  }
  xema::AbuseOptions o = AbuseOptionsOf(a);
  std::unique_ptr<core::ProgressBar> bar;
  o.progress = [&bar](int64_t done, int64_t total) {
    if (!bar) bar = std::make_unique<core::ProgressBar>("xema abuse", total);
    bar->Update(done);
  };
  ASSIGN_OR_RETURN(xema::AbuseReport r, xema::RunAbuse(o));
  if (bar) bar->Done();
  return ReportAbuse(r, xema::ToJson(r, o), a.json_path);
}

}  // namespace

void AddXemaAbuse(CLI::App* xema, Action* action) {
  auto a = std::make_shared<AbuseCliArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = xema->add_subcommand(
      "abuse", "Send a diffusion server bad, huge and abandoned requests; check it survives");
  AddAbuseFlags(c, a.get(), paths.get());
  c->callback(
      [action, a, paths] { *action = Checked(paths, [a] { return RunAbuseCommand(*a); }); });
}

}  // namespace tessera::cli
