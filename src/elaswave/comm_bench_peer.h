// CommBenchPeer: one process of `tessera elaswave comm-bench` (comm_bench.h), started by it as
// `tessera elaswave comm-bench-peer` with the repetition's folder, its world id, N, the victim
// and the modes. Everything goes through files in that folder, each written with
// core::WriteFileAtomically (a reader sees all of it or nothing):
//   addr.EPOCH.ID    this peer's UCX address ("host:port") at epoch 0 and after a full rebuild
//   ready.ID         written once the warm-up AllReduceSum passed (the bench kills the victim
//                    only once every peer wrote it)
//   result.ID.json   a survivor's report: {"id", "ok", "error", "detect_at_s" (monotonic,
//                    when its pending collective failed), "detect_error" (that failure's
//                    text), "steady_s" (a steady collective of the survivors),
//                    "seconds": {mode: change + collective}, "call_seconds": {mode: the
//                    change's call alone}}
// Gloo's FileStore lives in the run folder (the repetition folder's parent), "gloo-store",
// under the prefix given.
// The victim parks after ready.ID until it is killed. A survivor, after writing its result,
// also parks until the bench stops it (so no peer's exit can race a peer's last collective).
// Every wait is bounded by timeout_s; a peer parked longer than twice that ends itself.
// Test hook: with $TESSERA_COMM_BENCH_BAD_SUM_AFTER set to a mode's name, the lowest surviving
// world id adds 1000 to its value in the collective after that change, so every survivor's
// check fails (the bench must then fail).
// Exit codes: 1 when a check failed (the result file says which; written when possible), 2 on
// a setup error (stderr says which), 3 when it ended itself after parking too long.
// Thread-safety: one call per process.
#pragma once

#include <string>
#include <vector>

#include "elaswave/comm_bench.h"

namespace tessera::elaswave {

struct CommBenchPeerOptions {
  std::string dir;  // the repetition's folder
  int id = 0;       // this peer's world id, in [0, ranks)
  int ranks = 0;
  int victim = 0;
  std::vector<CommChangeMode> modes;
  std::string gloo_prefix;  // unique per repetition
  double timeout_s = 300;
};

std::string CommBenchAddressPath(const std::string& dir, uint64_t epoch, int id);
std::string CommBenchReadyPath(const std::string& dir, int id);
std::string CommBenchResultPath(const std::string& dir, int id);
// The Gloo FileStore folder of a run (the parent of the repetition folders).
std::string CommBenchGlooStorePath(const std::string& run_dir);

// Runs the peer (see above) and returns the process's exit code; it returns only on an error:
// parked peers are stopped by the bench (or end themselves with exit code 3).
int RunCommBenchPeer(const CommBenchPeerOptions& options);

}  // namespace tessera::elaswave
