// Xema's load generator: the serving core's open-loop load generator (serve/loadgen.h: arrivals,
// solo runs, SLO attainment, the report) over a diffusion template mix (load_mix.h), sent to a
// DiffusionServer's generation routes. The options are the core's plus the mix; the report
// types are the core's, named here too so callers keep one namespace.
//
// Errors: those of serve::RunLoadgen / serve::PlanArrivals ("mix: got no templates" for an
// empty mix). Thread-safety: reentrant; `progress` is called on the calling thread.
#pragma once

#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "serve/http_url.h"
#include "serve/loadgen.h"
#include "xema/serve/load_mix.h"

namespace tessera::xema {

using serve::AttainmentAt;
using serve::kSoloRuns;
using serve::LoadgenReport;
using serve::ParseHttpUrl;
using serve::PlannedArrival;
using serve::RequestOutcome;
using serve::TemplateLoad;

struct LoadgenOptions : serve::LoadgenOptions {
  std::vector<LoadTemplate> mix;
};

core::StatusOr<LoadgenReport> RunLoadgen(const LoadgenOptions& options);

// The arrivals RunLoadgen sends for `options` (serve::PlanArrivals over the mix).
core::StatusOr<std::vector<PlannedArrival>> PlanArrivals(const LoadgenOptions& options);

// serve::ToJson with "format": "tessera.xema.loadgen/1".
core::Json ToJson(const LoadgenReport& report, const LoadgenOptions& options);

}  // namespace tessera::xema
