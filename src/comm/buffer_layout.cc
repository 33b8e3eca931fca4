#include "comm/buffer_layout.h"

#include <fmt/format.h>

namespace tessera::comm {

core::Status CheckVarLayout(const std::string& what, std::span<const int64_t> counts,
                            std::span<const int64_t> displs, int64_t buffer_elems, int comm_size) {
  if (static_cast<int64_t>(counts.size()) != comm_size) {
    return core::InvalidArgument(fmt::format(
        "{} counts: got {} entries, must have one per rank ({})", what, counts.size(), comm_size));
  }
  if (static_cast<int64_t>(displs.size()) != comm_size) {
    return core::InvalidArgument(fmt::format(
        "{} displs: got {} entries, must have one per rank ({})", what, displs.size(), comm_size));
  }
  for (int i = 0; i < comm_size; ++i) {
    if (counts[i] < 0) {
      return core::InvalidArgument(
          fmt::format("{} counts[{}]: got {}, must be >= 0", what, i, counts[i]));
    }
    if (displs[i] < 0) {
      return core::InvalidArgument(
          fmt::format("{} displs[{}]: got {}, must be >= 0", what, i, displs[i]));
    }
    if (displs[i] > buffer_elems || counts[i] > buffer_elems - displs[i]) {
      return core::InvalidArgument(
          fmt::format("{} block {}: {} elements from {} must lie inside the buffer of {} elements",
                      what, i, counts[i], displs[i], buffer_elems));
    }
  }
  return core::Status::Ok();
}

core::Status CheckNoOverlap(const std::string& what, const void* a, int64_t a_bytes, const void* b,
                            int64_t b_bytes) {
  if (a_bytes == 0 || b_bytes == 0) return core::Status::Ok();
  const auto pa = reinterpret_cast<uintptr_t>(a);
  const auto pb = reinterpret_cast<uintptr_t>(b);
  if (pa < pb + static_cast<uintptr_t>(b_bytes) && pb < pa + static_cast<uintptr_t>(a_bytes)) {
    return core::InvalidArgument(
        fmt::format("{}: the send and receive buffers overlap, they must be disjoint", what));
  }
  return core::Status::Ok();
}

core::Status CheckPeer(const std::string& what, int peer, int comm_size) {
  if (peer < 0 || peer >= comm_size) {
    return core::InvalidArgument(
        fmt::format("{}: got rank {}, must be in [0, {})", what, peer, comm_size));
  }
  return core::Status::Ok();
}

core::Status CheckTag(const std::string& what, int tag) {
  if (tag < 0 || tag > kMaxTag) {
    return core::InvalidArgument(
        fmt::format("{}: got tag {}, must be in [0, {}]", what, tag, kMaxTag));
  }
  return core::Status::Ok();
}

void PackedDispls(std::span<const int64_t> counts, std::span<int64_t> displs) {
  CHECK_EQ(counts.size(), displs.size());
  int64_t at = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    displs[i] = at;
    at += counts[i];
  }
}

}  // namespace tessera::comm
