#include "xema/serve/loadgen.h"

namespace tessera::xema {

core::StatusOr<LoadgenReport> RunLoadgen(const LoadgenOptions& options) {
  const MixSource source(options.mix);
  return serve::RunLoadgen(options, source);
}

core::StatusOr<std::vector<PlannedArrival>> PlanArrivals(const LoadgenOptions& options) {
  const MixSource source(options.mix);
  return serve::PlanArrivals(options, source);
}

core::Json ToJson(const LoadgenReport& report, const LoadgenOptions& options) {
  return serve::ToJson(report, options, "tessera.xema.loadgen/1");
}

}  // namespace tessera::xema
