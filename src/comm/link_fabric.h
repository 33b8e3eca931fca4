// LinkFabric: the machine-wide reservation table of the link emulator. Every resource of a
// PacedLinks (a directed link, a shared uplink, ...) has a next-free time in a table shared by
// all ranks (one MPI shared window, or heap memory for the in-process backend). A packet of w wire
// bytes on route src->dst (resources r_1..r_m in path order) is reserved atomically,
// cut-through along the path: with start_0 = end_0 = earliest_ns,
//     start_i = max(start_{i-1}, next_free[r_i], end_{i-1} - w / bw_i)
//     end_i   = start_i + w / bw_i,   next_free[r_i] = end_i
//     arrival = end_m + route latency
// so a resource carries the packet as soon as it is free and the packet has reached it (no
// resource idles waiting for the others to be free together), and a packet never leaves a
// slower resource before it came through the faster one before it. Flows that share a
// resource queue behind each other packet by packet: fair sharing when no flow books a
// resource further ahead than one packet, which copy_engine.h ensures by reserving a flow's
// next packet only once the current one has started on its route's last resource
// (last_start_ns), whichever resource of the route is the shared one. The two directions of a
// link, being separate resources, run at full rate at once.
//
// Collective rules: Create is collective over the communicator whose ranks are the
// PacedLinks endpoints (normally the world); destroy it on every rank. Reserve may be called
// by any thread of any rank concurrently (a process-shared mutex guards the table).
#pragma once

#include <cstdint>
#include <memory>

#include "comm/communicator.h"
#include "comm/paced_links.h"
#include "comm/symmetric_memory.h"

namespace tessera::comm {

class LinkFabric {
 public:
  struct Reservation {
    int64_t start_ns = 0;       // first byte on the route's first resource
    int64_t last_start_ns = 0;  // first byte on the route's last resource: past every queue
    int64_t arrival_ns = 0;     // last byte delivered (includes the route latency)
  };

  // Validates `links` (InvalidArgument) and checks that links.num_endpoints equals the
  // communicator's size.
  static StatusOr<std::unique_ptr<LinkFabric>> Create(Communicator& comm, PacedLinks links);
  // A fabric whose endpoints all live in this process (its table on the heap, no
  // communicator): copy engines of one process pace their copies on it, e.g. a device and its
  // host memory (PacedCopier). Validates `links` (InvalidArgument).
  static StatusOr<std::unique_ptr<LinkFabric>> CreateLocal(PacedLinks links);
  ~LinkFabric();
  LinkFabric(const LinkFabric&) = delete;
  LinkFabric& operator=(const LinkFabric&) = delete;

  const PacedLinks& links() const { return links_; }
  // Reserves one packet of `wire_bytes` on route src->dst (src != dst), starting no earlier
  // than earliest_ns.
  Reservation Reserve(int src, int dst, int64_t wire_bytes, int64_t earliest_ns);
  // Forgets every reservation (all resources free now); collective use only, between runs.
  void Reset();

 private:
  struct Table;
  LinkFabric(PacedLinks links, std::unique_ptr<SymmetricMemory> memory);
  LinkFabric(PacedLinks links, std::unique_ptr<Table> local);
  PacedLinks links_;
  std::vector<double> ns_per_byte_;  // per resource
  std::unique_ptr<SymmetricMemory> memory_;
  std::unique_ptr<Table> local_;  // CreateLocal's table
  Table* table_ = nullptr;        // in rank 0's segment, or local_
};

}  // namespace tessera::comm
