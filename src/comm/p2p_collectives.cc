#include "comm/p2p_collectives.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

#include "comm/ring_index.h"

namespace tessera::comm {

namespace {

// Posts the receive, then the send, and waits for both.
Status Exchange(Communicator& comm, std::span<const float> send, int dst, std::span<float> recv,
                int src, int tag) {
  std::array<Request, 2> requests;
  ASSIGN_OR_RETURN(requests[0], comm.IRecv(recv, src, tag));
  ASSIGN_OR_RETURN(requests[1], comm.ISend(send, dst, tag));
  return WaitAll(requests);
}

template <typename T>
int64_t Bytes(std::span<T> s) {
  return static_cast<int64_t>(s.size_bytes());
}

// Chunk c of a buffer of `len` elements split into n near-equal contiguous chunks.
std::pair<int64_t, int64_t> Chunk(int64_t len, int n, int c) {
  const int64_t begin = len * c / n;
  const int64_t end = len * (c + 1) / n;
  return {begin, end - begin};
}

}  // namespace

Status RingAllGatherV(Communicator& comm, std::span<const float> send, std::span<float> recv,
                      std::span<const int64_t> recv_counts, std::span<const int64_t> recv_displs,
                      int tag) {
  const int n = comm.size();
  const int r = comm.rank();
  RETURN_IF_ERROR(CheckTag("RingAllGatherV", tag));
  RETURN_IF_ERROR(CheckVarLayout("RingAllGatherV recv", recv_counts, recv_displs,
                                 static_cast<int64_t>(recv.size()), n));
  if (static_cast<int64_t>(send.size()) != recv_counts[r]) {
    return core::InvalidArgument(
        fmt::format("RingAllGatherV send: got {} elements, must equal recv_counts[{}] = {}",
                    send.size(), r, recv_counts[r]));
  }
  RETURN_IF_ERROR(
      CheckNoOverlap("RingAllGatherV", send.data(), Bytes(send), recv.data(), Bytes(recv)));
  std::copy(send.begin(), send.end(), recv.begin() + recv_displs[r]);
  auto block = [&](int b) { return recv.subspan(recv_displs[b], recv_counts[b]); };
  for (int s = 0; s + 1 < n; ++s) {
    const int out = RingIndex(r - s, n);
    const int in = RingIndex(r - s - 1, n);
    RETURN_IF_ERROR(
        Exchange(comm, block(out), RingIndex(r + 1, n), block(in), RingIndex(r - 1, n), tag));
  }
  return Status::Ok();
}

Status RingAllGather(Communicator& comm, std::span<const float> send, std::span<float> recv,
                     int tag) {
  const int n = comm.size();
  if (recv.size() != send.size() * static_cast<size_t>(n)) {
    return core::InvalidArgument(
        fmt::format("RingAllGather recv: got {} elements, must be size() * send.size() = {} * {}",
                    recv.size(), n, send.size()));
  }
  std::vector<int64_t> counts(n, static_cast<int64_t>(send.size()));
  std::vector<int64_t> displs(n);
  PackedDispls(counts, displs);
  return RingAllGatherV(comm, send, recv, counts, displs, tag);
}

Status PairwiseAllToAllV(Communicator& comm, std::span<const float> send,
                         std::span<const int64_t> send_counts, std::span<const int64_t> send_displs,
                         std::span<float> recv, std::span<const int64_t> recv_counts,
                         std::span<const int64_t> recv_displs, int tag) {
  const int n = comm.size();
  const int r = comm.rank();
  RETURN_IF_ERROR(CheckTag("PairwiseAllToAllV", tag));
  RETURN_IF_ERROR(CheckVarLayout("PairwiseAllToAllV send", send_counts, send_displs,
                                 static_cast<int64_t>(send.size()), n));
  RETURN_IF_ERROR(CheckVarLayout("PairwiseAllToAllV recv", recv_counts, recv_displs,
                                 static_cast<int64_t>(recv.size()), n));
  RETURN_IF_ERROR(
      CheckNoOverlap("PairwiseAllToAllV", send.data(), Bytes(send), recv.data(), Bytes(recv)));
  if (send_counts[r] != recv_counts[r]) {
    return core::InvalidArgument(
        fmt::format("PairwiseAllToAllV: rank {} sends {} elements to itself but expects {}", r,
                    send_counts[r], recv_counts[r]));
  }
  std::copy_n(send.begin() + send_displs[r], send_counts[r], recv.begin() + recv_displs[r]);
  for (int s = 1; s < n; ++s) {
    const int dst = RingIndex(r + s, n);
    const int src = RingIndex(r - s, n);
    RETURN_IF_ERROR(Exchange(comm, send.subspan(send_displs[dst], send_counts[dst]), dst,
                             recv.subspan(recv_displs[src], recv_counts[src]), src, tag));
  }
  return Status::Ok();
}

Status RingAllReduceSum(Communicator& comm, std::span<float> data, int tag) {
  const int n = comm.size();
  const int r = comm.rank();
  RETURN_IF_ERROR(CheckTag("RingAllReduceSum", tag));
  if (n == 1) return Status::Ok();
  const int64_t len = static_cast<int64_t>(data.size());
  auto chunk = [&](int c) {
    auto [begin, count] = Chunk(len, n, c);
    return data.subspan(begin, count);
  };
  std::vector<float> incoming(static_cast<size_t>(len / n + 1));  // >= every chunk
  const int right = RingIndex(r + 1, n);
  const int left = RingIndex(r - 1, n);
  // Reduce-scatter: after step s, chunk (r-s-1) mod n holds the sum of s+2 ranks' inputs.
  for (int s = 0; s + 1 < n; ++s) {
    std::span<float> out = chunk(RingIndex(r - s, n));
    std::span<float> in = chunk(RingIndex(r - s - 1, n));
    std::span<float> tmp(incoming.data(), in.size());
    RETURN_IF_ERROR(Exchange(comm, out, right, tmp, left, tag));
    for (size_t k = 0; k < in.size(); ++k) in[k] += tmp[k];
  }
  // Rank r now owns the full sum of chunk (r+1) mod n; circulate the owned chunks.
  for (int s = 0; s + 1 < n; ++s) {
    RETURN_IF_ERROR(Exchange(comm, chunk(RingIndex(r + 1 - s, n)), right,
                             chunk(RingIndex(r - s, n)), left, tag));
  }
  return Status::Ok();
}

}  // namespace tessera::comm
