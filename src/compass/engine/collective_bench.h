// Collective benchmark on emulated links (Compass, part 1): every algorithm of
// comm/link_collectives.h (ring1, ring2, direct) for AllGather and ReduceScatter at several
// block sizes, on real MPI ranks placed on devices 0..n-1 of a topology, measured next to
// the closed-form model (compass/collective_model.h).
//
// Each row carries the lower bound from the topology alone (collective_bound.h) beside the
// model; CheckAgainstBound flags a measurement below it.
//
// Method: the fabric is the topology scaled by the time scale (emulated_links.h). Each
// repetition runs every (kind, size, algorithm) once, in that interleaved order, so a
// drifting machine affects all algorithms alike; each run starts on every rank at one
// instant agreed through a futex barrier, and its time is the slowest rank's time from that
// instant to its return. Times are reported in device seconds (emulated seconds / s).
// Every run's output is checked against a plain reference (AllGather exact, ReduceScatter
// within 1e-6 relative of a double sum); a mismatch is an Internal error naming the run.
// Data are fp32 in memory and paced at 2 bytes per element (bf16 on the wire), so a block
// of B wire bytes holds B / 2 floats.
//
// Ring orders: ring1 and direct use the best single ring (hw::BestRing kSingle); ring2 the
// best double ring; direct pulls in ring-position order from position p+s at step s.
//
// Collective over `world` (every rank calls it with the same arguments; world.size() = n
// ranks on devices 0..n-1). Progress is reported on rank 0 only.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/link_collectives.h"
#include "compass/collective_bound.h"
#include "compass/collective_model.h"
#include "core/json_util.h"
#include "hw/topology.h"
#include "runtime/time_scale.h"

namespace tessera::compass {

struct CollectiveBenchConfig {
  std::vector<int64_t> block_wire_bytes = {256 << 10, 1 << 20, 4 << 20};
  std::vector<comm::LinkAlgo> algos = {comm::LinkAlgo::kRing1, comm::LinkAlgo::kRing2,
                                       comm::LinkAlgo::kDirect};
  std::vector<CollectiveKind> kinds = {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter};
  int repeats = 7;
  // The copy engines' wake-up lead (link_check.h: CalibrateWakeLeadNs); unset: measured by
  // each engine at start.
  std::optional<int64_t> wake_lead_ns;
  // Called on rank 0 after each run: (runs done, runs in total).
  std::function<void(int, int)> progress;
};

struct CollectiveRow {
  CollectiveKind kind = CollectiveKind::kAllGather;
  comm::LinkAlgo algo = comm::LinkAlgo::kRing1;
  int64_t block_wire_bytes = 0;
  double median_s = 0, min_s = 0, max_s = 0;  // measured, device seconds
  double modeled_s = 0;                       // device seconds
  // The lower bound from the topology alone (collective_bound.h), device seconds.
  CollectiveBound bound;
  double error() const { return modeled_s > 0 ? median_s / modeled_s - 1 : 0; }
  // Measured median over the bound (>= 1 on a faithful emulator).
  double over_bound() const { return bound.bound_s > 0 ? median_s / bound.bound_s : 0; }
  // Bytes each rank receives per second: (n - 1) x block / median time.
  double bandwidth_bytes_per_s(int ranks) const {
    return median_s > 0 ? (ranks - 1) * static_cast<double>(block_wire_bytes) / median_s : 0;
  }
};

struct CollectiveBench {
  std::string topology;
  int ranks = 0;
  runtime::TimeScale scale;
  std::vector<int> ring1_order, ring2_order;  // devices in ring order
  std::vector<CollectiveRow> rows;
  double engine_cpu_fraction = 0;  // busiest copy thread: CPU time / wall time
  int64_t wake_lead_ns = 0;        // rank 0's copy engine
};

core::StatusOr<CollectiveBench> RunCollectiveBench(comm::Communicator& world,
                                                   const hw::Topology& topology,
                                                   const runtime::TimeScale& scale,
                                                   const CollectiveBenchConfig& config);

// Rows whose measured median lies more than `tolerance` below their bound (an emulator that
// delivers early): FailedPrecondition naming each, "allgather ring2 256 KiB: 0.95x its bound
// (median 0.0371 ms, bound 0.0390 ms)"; OK when none does.
core::Status CheckAgainstBound(const CollectiveBench& b, double tolerance = 0.03);

// The double ring's speed-up over the single ring (median time ratio) for one kind and
// size; 0 when either row is missing.
double Ring2Speedup(const CollectiveBench& b, CollectiveKind kind, int64_t block_wire_bytes);

core::Json ToJson(const CollectiveBench& b);

}  // namespace tessera::compass
