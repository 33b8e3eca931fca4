// Link emulator accuracy probes (Compass, part 1): does the emulated link layer deliver what
// its numbers promise on this machine? Measured with real MPI ranks (or fake threads) on a
// probe fabric built from one link's emulated bandwidth and latency:
//  - single: rank 0 sends `bytes` (wire) to rank 1; expected = latency + bytes / bw;
//  - duplex: ranks 0 and 1 send to each other at once on the two directions of the link;
//    each direction is expected to take the single transfer's time (full rate both ways);
//  - shared: ranks 0 and 1 each send `bytes` to rank 2 over one shared resource of bandwidth
//    bw (needs >= 3 ranks); each flow's share = (bytes / its time) / bw, expected 0.5 while
//    both run (the time counts from the common start to the flow's last byte, latency
//    excluded);
//  - engine CPU: the copy threads' CPU time over the wall time of the probes, per rank.
// Every probe starts all its transfers at a common instant agreed ahead (CopyEngine's
// not_before_ns), and the receiver stamps the time its signal wakes it, so a figure includes
// the engine's wake-up jitter and the receiver's wake-up, as a consumer would see them.
// Each probe repeats `repeats` times; medians, minima and maxima are reported.
// The fixed overhead of a delivery (a timer wake-up, the copy, the receiver's wake-up) is
// what the engine's wake-up lead compensates (copy_engine.h); CalibrateWakeLeadNs measures it
// here under load, on messages without payload.
//
// Collective over `world` (all ranks call it; ranks beyond the probe's idle). Thread-safety:
// one thread per rank.
#pragma once

#include <cstdint>
#include <optional>

#include "comm/communicator.h"
#include "core/json_util.h"

namespace tessera::compass {

struct LinkProbeConfig {
  double bw_bytes_per_s = 60e6;    // emulated bandwidth of the probed link
  int64_t latency_ns = 1'000'000;  // emulated latency
  int64_t bytes = 64 * 1024;       // wire bytes per transfer
  int repeats = 9;
  // The copy engines' wake-up lead; unset: what each engine measured when it started.
  std::optional<int64_t> wake_lead_ns;
};

struct ProbeFigure {
  double expected_s = 0;
  double median_s = 0, min_s = 0, max_s = 0;
  // median / expected - 1
  double error() const { return expected_s > 0 ? median_s / expected_s - 1 : 0; }
};

struct LinkAccuracy {
  LinkProbeConfig config;
  ProbeFigure single;
  ProbeFigure duplex_forward, duplex_reverse;
  bool has_shared = false;                        // needs >= 3 ranks
  double shared_share_a = 0, shared_share_b = 0;  // median shares of the two flows
  double engine_cpu_fraction = 0;  // the busiest copy thread's CPU / wall, over the probes
  int64_t wake_lead_ns = 0;        // rank 0's engine lead during the probes
};

core::StatusOr<LinkAccuracy> MeasureLinkAccuracy(comm::Communicator& world,
                                                 const LinkProbeConfig& config);

core::Json ToJson(const LinkAccuracy& a);

// The emulator's fixed delivery overhead on this machine under the current load: messages
// with no payload go from rank 0 to rank 1 with the engines' lead set to 0, and the receiver
// measures how long after (start + latency) it wakes; returns the median over `repeats`, on
// every rank. Used as the engines' wake-up lead, so that data arrive on time on average.
// It is measured on empty messages, so the probes above still test the pacing of payloads.
core::StatusOr<int64_t> CalibrateWakeLeadNs(comm::Communicator& world, int64_t latency_ns,
                                            int repeats = 15);

}  // namespace tessera::compass
