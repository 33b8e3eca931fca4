// GlooRebuild: the baseline users know for a communicator change -- TorchFT recreates its Gloo
// process group after a failure. One call builds a fresh Gloo context over `size` processes
// (gloo::rendezvous::FileStore at `store_dir` under `prefix`, a TCP device on 127.0.0.1,
// connectFullMesh) and runs one int64 allreduce (sum) on it; the context is destroyed before
// return. Every one of the `size` processes calls it with the same store_dir, prefix and size
// and its own rank in [0, size). Gloo is optional: gloo_rebuild.cc is compiled when
// libgloo-dev was found at configure time, gloo_rebuild_missing.cc otherwise.
// Errors: FailedPrecondition (with CommBenchNoGlooMessage's words) in a build without Gloo;
// Unavailable with Gloo's message when the rendezvous, a connection or the allreduce fails
// (also after timeout_s, Gloo's own timeout).
// Thread-safety: reentrant (each call has its own context and device).
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace tessera::elaswave {

bool GlooRebuildAvailable();

struct GlooAllReduceResult {
  int64_t sum = 0;        // of every rank's value
  double connect_s = -1;  // the device, the store and connectFullMesh, before the allreduce
};
core::StatusOr<GlooAllReduceResult> GlooFreshAllReduce(const std::string& store_dir,
                                                       const std::string& prefix, int rank,
                                                       int size, int64_t value, double timeout_s);

}  // namespace tessera::elaswave
