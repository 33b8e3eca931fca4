// `tessera kernelflume abuse`: sends a completion server (`tessera kernelflume serve`)
// malformed, absurd, oversized and abandoned requests with a share of valid greedy completions
// over many connections (serve/abuse.h with kernelflume/abuse_cases.h), prints a table per
// kind, the RSS samples and the verdict; --json writes the report. --hostile runs the HTTP
// layer's hostile clients (serve/hostile.h) instead. Exit 1 when the check fails.
#include "serve/abuse.h"

#include <cstdio>
#include <memory>

#include "cli/abuse_report.h"
#include "cli/command.h"
#include "cli/options.h"
#include "core/byte_size.h"
#include "core/json_util.h"
#include "core/progress.h"
#include "core/table.h"
#include "kernelflume/abuse_cases.h"
#include "serve/hostile.h"

namespace tessera::cli {
namespace {

core::Status RunKfAbuse(const AbuseCliArgs& a) {
  RETURN_IF_ERROR(CheckAbuseArgs(a));
  if (a.hostile) {
    return RunHostileFromFlags(
        a, "/v1/completions",
        R"({"prompt": "a hostile client", "max_tokens": 4, "stop_at_eos": false})");
  }
  serve::AbuseOptions o = AbuseOptionsOf(a);
  std::unique_ptr<core::ProgressBar> bar;
  o.progress = [&bar](int64_t done, int64_t total) {
    if (!bar) bar = std::make_unique<core::ProgressBar>("kernelflume abuse", total);
    bar->Update(done);
  };
  ASSIGN_OR_RETURN(serve::AbuseReport r, serve::RunAbuse(o, kernelflume::CompletionAbuseSuite()));
  if (bar) bar->Done();
  return ReportAbuse(r, serve::ToJson(r, o, "tessera.kernelflume.abuse/1"), a.json_path);
}

}  // namespace

void AddKernelFlumeAbuse(CLI::App* kernelflume, Action* action) {
  auto a = std::make_shared<AbuseCliArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = kernelflume->add_subcommand(
      "abuse", "Send a completion server bad, huge and abandoned requests; check it survives");
  AddAbuseFlags(c, a.get(), paths.get());
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunKfAbuse(*a); }); });
}

}  // namespace tessera::cli
