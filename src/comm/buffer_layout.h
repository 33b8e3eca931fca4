// Argument checks shared by every Communicator backend and by the collective algorithms
// written over point-to-point (p2p_collectives.h), so that all of them accept and reject
// exactly the same arguments with the same messages.
//
// A "variable layout" is the (counts, displs) pair of an MPI v-collective: block i holds
// counts[i] elements starting at element displs[i] of a buffer. Units are elements (not
// bytes). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"

namespace tessera::comm {

// Largest tag a caller may use; 32767 is the smallest MPI_TAG_UB the MPI standard allows.
inline constexpr int kMaxTag = 32767;

// counts and displs have comm_size entries, every count and displacement is >= 0 and every
// block lies inside a buffer of buffer_elems elements. `what` names the argument, e.g.
// "AllToAllV send".
core::Status CheckVarLayout(const std::string& what, std::span<const int64_t> counts,
                            std::span<const int64_t> displs, int64_t buffer_elems, int comm_size);

// The two buffers do not share any byte (backends do not support in-place v-collectives).
core::Status CheckNoOverlap(const std::string& what, const void* a, int64_t a_bytes, const void* b,
                            int64_t b_bytes);

// 0 <= peer < comm_size.
core::Status CheckPeer(const std::string& what, int peer, int comm_size);

// 0 <= tag <= kMaxTag.
core::Status CheckTag(const std::string& what, int tag);

// The exclusive prefix sum of counts (displacements of a packed layout).
void PackedDispls(std::span<const int64_t> counts, std::span<int64_t> displs);

}  // namespace tessera::comm
