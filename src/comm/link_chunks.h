// How many chunk messages a collective's message is cut into: the one rule that the emulated
// collectives (link_collectives.h, and the fused operators riding them) and their model
// (compass/collective_model.h) share. Header-only, so a cost model can use it without linking
// the runtime. Pure functions; thread-safe.
//
// A ring forwards chunk j of a step's message as soon as chunk j of the previous step has
// arrived, so a message of B wire bytes cut into k chunks over hops of bandwidth W and route
// latency L keeps its link busy when the next step's first chunk is back before the link has
// sent this step's message: per step a hop takes
//     t(k) = max(B / W, L + B / (k W))
// (the link's time for the message, or one chunk's latency plus its transfer). More chunks
// shorten the exposed part until B / W is reached (bandwidth-bound) or, when L W >= B
// (latency-bound: every block pays the route latency anyway), until chunks reach one packet.
// Each chunk costs a message (a wake-up of the copy engine and of the receiver), so the count
// is the smallest k in [1, k_max] whose t(k) is within kLinkChunkSlack of t(k_max), where
// k_max = min(kMaxLinkChunks, max(1, floor(B / packet_bytes))) (a chunk smaller than a packet
// gains nothing: the packet is the fabric's unit).
//
// Inputs are in any consistent units: scaling time (bandwidth / s, latency x s, the link
// emulator's time scale) leaves L W / B and so the count unchanged. W is the slowest hop's
// bandwidth alone and L the largest hop's route latency over the messages of one collective
// (every rank must choose the same count: compute them from the whole ring, not one's own hop).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>

#include "comm/link_algo.h"
#include "comm/paced_links.h"

namespace tessera::comm {

// At most this many chunk messages per message (and per step and direction).
inline constexpr int kMaxLinkChunks = 16;
// A count is good enough within this fraction of the best count's per-step time.
inline constexpr double kLinkChunkSlack = 0.01;

// Per-step time t(k) of a message of `message_bytes` cut into `chunks` (see above).
inline double ChunkedStepTime(double message_bytes, double bytes_per_s, double latency,
                              int chunks) {
  const double whole = message_bytes / bytes_per_s;
  return std::max(whole, latency + whole / chunks);
}

// The chunk count of a message of `message_bytes` over hops whose slowest bandwidth is
// `bytes_per_s` (> 0) and largest route latency `latency` (>= 0), with fabric packets of
// `packet_bytes` (> 0). 1 for an empty message.
inline int LinkChunkCount(double message_bytes, double bytes_per_s, double latency,
                          int64_t packet_bytes) {
  if (!(message_bytes > 0) || !(bytes_per_s > 0) || packet_bytes <= 0) return 1;
  const double by_packet = message_bytes / static_cast<double>(packet_bytes);
  const int k_max =
      by_packet >= kMaxLinkChunks ? kMaxLinkChunks : std::max(1, static_cast<int>(by_packet));
  const double best = ChunkedStepTime(message_bytes, bytes_per_s, latency, k_max);
  for (int k = 1; k < k_max; ++k) {
    if (ChunkedStepTime(message_bytes, bytes_per_s, latency, k) <= best * (1 + kLinkChunkSlack))
      return k;
  }
  return k_max;
}

// The message of one collective step and direction on the wire: the block (ring1, direct) or
// half of it (ring2, whose halves split at a granule: the count is taken at block / 2).
inline double LinkMessageBytes(LinkAlgo algo, double block_bytes) {
  return algo == LinkAlgo::kRing2 ? block_bytes / 2 : block_bytes;
}

// The chunk count of one collective of `algo` among n ring positions with blocks of
// `block_bytes` on the wire, W and L taken over every (from, to) position pair the algorithm
// sends on (ring1: p -> p+1; ring2: also p -> p-1; direct: p -> p-s, s = 1..n-1);
// hop(from, to) returns {bandwidth of the route's slowest resource, route latency}.
template <typename Hop>
int CollectiveChunkCount(LinkAlgo algo, int n, double block_bytes, Hop&& hop,
                         int64_t packet_bytes) {
  if (n < 2) return 1;
  double w = 0, l = 0;
  bool first = true;
  auto add = [&](int from, int to) {
    const std::pair<double, double> h = hop(from, to);
    w = first ? h.first : std::min(w, h.first);
    l = first ? h.second : std::max(l, h.second);
    first = false;
  };
  for (int p = 0; p < n; ++p) {
    if (algo == LinkAlgo::kDirect) {
      for (int s = 1; s < n; ++s) add(p, ((p - s) % n + n) % n);
    } else {
      add(p, (p + 1) % n);
      if (algo == LinkAlgo::kRing2) add(p, (p + n - 1) % n);
    }
  }
  return LinkChunkCount(LinkMessageBytes(algo, block_bytes), w, l, packet_bytes);
}

// CollectiveChunkCount on an emulated fabric (what LinkCollectives uses): endpoint_at[p] is
// the endpoint at ring position p; a route's bandwidth is its slowest resource's (bytes per
// second), its latency in seconds.
inline int PacedChunkCount(const PacedLinks& links, std::span<const int> endpoint_at, LinkAlgo algo,
                           double block_bytes) {
  auto hop = [&](int from, int to) {
    const PacedRoute& r = links.route(endpoint_at[from], endpoint_at[to]);
    double bw = 0;
    for (int res : r.resources) {
      const double b = links.resources[res].bytes_per_s;
      bw = bw == 0 ? b : std::min(bw, b);
    }
    return std::pair<double, double>(bw, static_cast<double>(r.latency_ns) * 1e-9);
  };
  return CollectiveChunkCount(algo, static_cast<int>(endpoint_at.size()), block_bytes, hop,
                              links.packet_bytes);
}

}  // namespace tessera::comm
