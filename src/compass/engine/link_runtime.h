// LinkRuntime: what one rank needs to run collectives on a topology's emulated links: the
// shared fabric (emulated_links.h), the rank's copy engine, a futex barrier that agrees on
// start instants, and the link collectives over the best single ring (also the direct
// algorithm's order) and over the best double ring. Ranks are placed on devices 0..n-1.
// Used by the collective bench and the overlap bench. Collective over `world` (Start);
// one thread per rank, except that one LinkCollectives may be driven by another thread of
// the rank while the rank's thread computes (overlap strategies).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "comm/communicator.h"
#include "comm/copy_engine.h"
#include "comm/link_collectives.h"
#include "comm/link_fabric.h"
#include "comm/shared_barrier.h"
#include "compass/engine/overlap_context.h"
#include "compass/tp_op.h"
#include "core/status.h"
#include "hw/ring_order.h"
#include "hw/topology.h"
#include "runtime/time_scale.h"

namespace tessera::compass {

struct LinkRuntime {
  std::vector<int> devices;       // device of rank r
  hw::RingAnalysis ring1, ring2;  // best single and double rings (orders are rank lists)
  std::unique_ptr<comm::LinkFabric> fabric;
  std::unique_ptr<comm::CopyEngine> engine;
  std::unique_ptr<comm::SharedBarrier> barrier;
  std::unique_ptr<comm::LinkCollectives> single, dual;  // on ring1's and ring2's orders
};

// InvalidArgument when the world has fewer than 1 or more ranks than the topology has
// devices. `window_bytes`: symmetric memory per rank for each of the two collectives.
core::StatusOr<LinkRuntime> StartLinkRuntime(comm::Communicator& world,
                                             const hw::Topology& topology,
                                             const runtime::TimeScale& scale, int64_t window_bytes,
                                             std::optional<int64_t> wake_lead_ns);

// The symmetric memory one TP operator's collectives need per rank (the larger of its
// AllGather and ReduceScatter windows), for StartLinkRuntime's window_bytes.
int64_t OverlapWindowBytes(const TpOpShape& s);

// Every shape timed on rank 0 alone with ProfileGemms while the others wait on `barrier`,
// then broadcast: into *out, seconds divided by `divide` (the time scale for device seconds, 1
// for wall seconds). Collective over `world`; rank 0's profiling error on every rank.
core::Status ProfileGemmsOnRankZero(comm::Communicator& world, comm::SharedBarrier& barrier,
                                    const std::vector<runtime::GemmShape>& shapes, double divide,
                                    runtime::GemmProfile* out);

// The time scale every rank uses: `fixed` when given, else one core's GEMM rate measured on
// rank 0 while the others sleep on a futex barrier, broadcast. Collective over `world`.
core::StatusOr<runtime::TimeScale> AgreeTimeScale(comm::Communicator& world,
                                                  const hw::Topology& topology,
                                                  std::optional<double> fixed);

}  // namespace tessera::compass
