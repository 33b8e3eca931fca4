// Built when libgloo-dev was not found at configure time (src/elaswave/CMakeLists.txt): the
// gloo mode is refused; see gloo_rebuild.h.
#include "elaswave/comm_bench.h"
#include "elaswave/gloo_rebuild.h"

namespace tessera::elaswave {

bool GlooRebuildAvailable() { return false; }

core::StatusOr<GlooAllReduceResult> GlooFreshAllReduce(const std::string&, const std::string&, int,
                                                       int, int64_t, double) {
  return core::FailedPrecondition(CommBenchNoGlooMessage());
}

}  // namespace tessera::elaswave
