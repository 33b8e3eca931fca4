#include "compass/engine/link_check.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "comm/copy_engine.h"
#include "comm/futex.h"
#include "comm/link_fabric.h"
#include "comm/shared_barrier.h"
#include "comm/symmetric_memory.h"
#include "core/stats.h"

namespace tessera::compass {

namespace {

using comm::CopyEngine;
using comm::NowNs;
using core::Median;
using core::Status;

// The probe fabric: private links "a->b" for every ordered pair, except that every flow
// into rank 2 crosses one shared resource "shared" of the same bandwidth.
comm::PacedLinks ProbeLinks(int n, const LinkProbeConfig& c) {
  comm::PacedLinks links = comm::FullMeshLinks(n, c.bw_bytes_per_s, c.latency_ns);
  if (n >= 3) {
    const int shared = static_cast<int>(links.resources.size());
    links.resources.push_back({"shared", c.bw_bytes_per_s});
    for (int s = 0; s < n; ++s) {
      if (s != 2) links.routes[s * n + 2].resources = {shared};
    }
  }
  return links;
}

ProbeFigure Figure(const std::vector<double>& times, double expected) {
  ProbeFigure f;
  f.expected_s = expected;
  f.median_s = Median(times);
  f.min_s = *std::min_element(times.begin(), times.end());
  f.max_s = *std::max_element(times.begin(), times.end());
  return f;
}

}  // namespace

core::StatusOr<LinkAccuracy> MeasureLinkAccuracy(comm::Communicator& world,
                                                 const LinkProbeConfig& config) {
  const int n = world.size();
  if (n < 2)
    return core::InvalidArgument("link probes need at least 2 ranks, got " + std::to_string(n));
  if (config.repeats < 1 || config.bytes < 1) {
    return core::InvalidArgument("link probes: repeats and bytes must be >= 1");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<comm::LinkFabric> fabric,
                   comm::LinkFabric::Create(world, ProbeLinks(n, config)));
  // Window: a signal page, then room for two messages (the shared probe receives two of
  // at least 16 packets each, so that sharing is measured, not the order of two packets).
  constexpr int64_t kHeader = 4096;
  const int64_t bytes = config.bytes;  // real bytes = wire bytes in the probes
  const int64_t shared_bytes = std::max<int64_t>(bytes, 16 * comm::PacedLinks::kDefaultPacketBytes);
  ASSIGN_OR_RETURN(std::unique_ptr<comm::SymmetricMemory> mem,
                   comm::SymmetricMemory::Create(world, kHeader + 2 * shared_bytes));
  CopyEngine engine(fabric.get(), world.rank());
  if (config.wake_lead_ns) engine.set_wake_lead_ns(*config.wake_lead_ns);
  std::vector<std::byte> src(static_cast<size_t>(shared_bytes), std::byte{0x5A});
  const int me = world.rank();
  auto signal = [&](int rank, int slot) {
    return reinterpret_cast<std::atomic<uint32_t>*>(mem->segment(rank)) + slot;
  };
  uint32_t expected_slot[2] = {0, 0};
  const double latency_s = static_cast<double>(config.latency_ns) * 1e-9;
  const double wire_s = static_cast<double>(bytes) / config.bw_bytes_per_s;
  // A futex barrier (MPI's would poll and steal the cores the probes need) that agrees on a
  // start instant 5 ms ahead.
  ASSIGN_OR_RETURN(std::unique_ptr<comm::SharedBarrier> barrier,
                   comm::SharedBarrier::Create(world));
  auto agree_start = [&]() { return barrier->Arrive(5'000'000, 120.0); };
  auto send = [&](int to, int slot, int64_t offset, int64_t start, int64_t bytes) {
    CopyEngine::Put put;
    put.dst_endpoint = to;
    put.dst = mem->segment(to) + kHeader + offset;
    put.src = src.data();
    put.bytes = bytes;
    put.wire_bytes = bytes;
    put.signal = signal(to, slot);
    put.not_before_ns = start;
    engine.Submit(put);
  };
  // Waits for the next message on `slot`; returns seconds since `start`.
  auto receive = [&](int slot, int64_t start) -> core::StatusOr<double> {
    const uint32_t target = ++expected_slot[slot];
    if (!comm::WaitAtLeast(signal(me, slot), target, NowNs() + 60'000'000'000)) {
      return core::DeadlineExceeded("link probe: no data within 60 s");
    }
    return static_cast<double>(NowNs() - start) * 1e-9;
  };
  const int64_t wall0 = NowNs();
  const int64_t cpu0 = engine.stats().cpu_ns;
  std::vector<double> single, fwd, rev, share_a, share_b;
  for (int rep = 0; rep < config.repeats; ++rep) {
    // Single transfer 0 -> 1.
    ASSIGN_OR_RETURN(int64_t start, agree_start());
    if (me == 0) send(1, 0, 0, start, bytes);
    if (me == 1) {
      ASSIGN_OR_RETURN(double t, receive(0, start));
      single.push_back(t);
    }
    engine.WaitAllDone(comm::kNoDeadline);
    // Duplex: 0 -> 1 and 1 -> 0 at once.
    ASSIGN_OR_RETURN(start, agree_start());
    if (me == 0 || me == 1) {
      send(1 - me, 0, 0, start, bytes);
      ASSIGN_OR_RETURN(double t, receive(0, start));
      (me == 1 ? fwd : rev).push_back(t);
    }
    engine.WaitAllDone(comm::kNoDeadline);
    // Shared: 0 -> 2 and 1 -> 2 over one resource.
    if (n >= 3) {
      ASSIGN_OR_RETURN(start, agree_start());
      if (me == 0 || me == 1) send(2, me, me * shared_bytes, start, shared_bytes);
      if (me == 2) {
        // Two slots, one per sender; the time each flow took is its own arrival.
        std::vector<double> t(2);
        for (int k = 0; k < 2; ++k) {
          const uint32_t target = ++expected_slot[k];
          if (!comm::WaitAtLeast(signal(me, k), target, NowNs() + 60'000'000'000)) {
            return core::DeadlineExceeded("link probe: no data within 60 s");
          }
          t[k] = static_cast<double>(NowNs() - start) * 1e-9 - latency_s;
        }
        const double alone_s = static_cast<double>(shared_bytes) / config.bw_bytes_per_s;
        share_a.push_back(alone_s / t[0]);
        share_b.push_back(alone_s / t[1]);
      }
      engine.WaitAllDone(comm::kNoDeadline);
    }
  }
  const double cpu_fraction =
      static_cast<double>(engine.stats().cpu_ns - cpu0) / static_cast<double>(NowNs() - wall0);
  // Gather the figures on rank 0 (rank 1 measured single and forward, rank 0 reverse,
  // rank 2 the shares).
  auto from_rank = [&](int root, std::vector<double> v) -> core::StatusOr<std::vector<double>> {
    v.resize(config.repeats, 0.0);
    RETURN_IF_ERROR(world.Broadcast(std::span<double>(v), root));
    return v;
  };
  LinkAccuracy out;
  out.config = config;
  out.wake_lead_ns = engine.wake_lead_ns();
  RETURN_IF_ERROR(world.Broadcast(std::span<int64_t>(&out.wake_lead_ns, 1), 0));
  ASSIGN_OR_RETURN(single, from_rank(1, single));
  ASSIGN_OR_RETURN(fwd, from_rank(1, fwd));
  ASSIGN_OR_RETURN(rev, from_rank(0, rev));
  out.single = Figure(single, latency_s + wire_s);
  out.duplex_forward = Figure(fwd, latency_s + wire_s);
  out.duplex_reverse = Figure(rev, latency_s + wire_s);
  if (n >= 3) {
    ASSIGN_OR_RETURN(share_a, from_rank(2, share_a));
    ASSIGN_OR_RETURN(share_b, from_rank(2, share_b));
    out.has_shared = true;
    out.shared_share_a = Median(share_a);
    out.shared_share_b = Median(share_b);
  }
  double cpu_max = cpu_fraction;
  std::vector<double> all(n);
  RETURN_IF_ERROR(world.AllGather(std::span<const double>(&cpu_max, 1), std::span<double>(all)));
  out.engine_cpu_fraction = *std::max_element(all.begin(), all.end());
  RETURN_IF_ERROR(world.Barrier());
  return out;
}

core::StatusOr<int64_t> CalibrateWakeLeadNs(comm::Communicator& world, int64_t latency_ns,
                                            int repeats) {
  if (world.size() < 2 || repeats < 1) {
    return core::InvalidArgument("calibration needs >= 2 ranks and >= 1 repeat");
  }
  LinkProbeConfig c;
  c.latency_ns = latency_ns;
  ASSIGN_OR_RETURN(std::unique_ptr<comm::LinkFabric> fabric,
                   comm::LinkFabric::Create(world, ProbeLinks(world.size(), c)));
  ASSIGN_OR_RETURN(std::unique_ptr<comm::SymmetricMemory> mem,
                   comm::SymmetricMemory::Create(world, 4096));
  ASSIGN_OR_RETURN(std::unique_ptr<comm::SharedBarrier> barrier,
                   comm::SharedBarrier::Create(world));
  CopyEngine engine(fabric.get(), world.rank());
  engine.set_wake_lead_ns(0);
  auto* signal = reinterpret_cast<std::atomic<uint32_t>*>(mem->segment(1));
  std::vector<double> late;
  for (int rep = 0; rep < repeats; ++rep) {
    ASSIGN_OR_RETURN(int64_t start, barrier->Arrive(5'000'000, 120.0));
    if (world.rank() == 0) {
      CopyEngine::Put put;
      put.dst_endpoint = 1;
      put.dst = mem->segment(1) + 64;
      put.signal = signal;
      put.not_before_ns = start;
      engine.Submit(put);
    }
    if (world.rank() == 1) {
      if (!comm::WaitAtLeast(signal, static_cast<uint32_t>(rep + 1), NowNs() + 60'000'000'000)) {
        return core::DeadlineExceeded("calibration: no signal within 60 s");
      }
      late.push_back(static_cast<double>(NowNs() - (start + latency_ns)));
    }
    engine.WaitAllDone(comm::kNoDeadline);
  }
  double median = world.rank() == 1 ? Median(late) : 0;
  RETURN_IF_ERROR(world.Broadcast(std::span<double>(&median, 1), 1));
  RETURN_IF_ERROR(barrier->Arrive(0, 120.0).status());
  return std::max<int64_t>(0, static_cast<int64_t>(median));
}

core::Json ToJson(const LinkAccuracy& a) {
  auto fig = [](const ProbeFigure& f) {
    return core::Json{{"expected_s", f.expected_s},
                      {"median_s", f.median_s},
                      {"min_s", f.min_s},
                      {"max_s", f.max_s},
                      {"error", f.error()}};
  };
  core::Json j = {{"bw_bytes_per_s", a.config.bw_bytes_per_s},
                  {"latency_ns", a.config.latency_ns},
                  {"bytes", a.config.bytes},
                  {"repeats", a.config.repeats},
                  {"single", fig(a.single)},
                  {"duplex_forward", fig(a.duplex_forward)},
                  {"duplex_reverse", fig(a.duplex_reverse)},
                  {"engine_cpu_fraction", a.engine_cpu_fraction},
                  {"wake_lead_ns", a.wake_lead_ns}};
  if (a.has_shared) {
    j["shared_share_a"] = a.shared_share_a;
    j["shared_share_b"] = a.shared_share_b;
  }
  return j;
}

}  // namespace tessera::compass
