// SequenceParallelForward: models::TinyDit's forward (tiny_dit.h) on d "devices" at once, with
// Ulysses sequence parallelism (head-split all-to-all around attention, parallel/ulysses.h).
// The d members of `group` (one thread or process each) each hold their own
// runtime::DeviceAllocator and their own models::TinyDit, created with the same config, text_hidden
// and seed (identical weights, replicated), and call it collectively with the same input (latent,
// t, each its own copy of the text context on its allocator), execution and context.
//
// Rows (SpRowsOf): each of the B joint sequences (L = T_txt + N rows, text first) is cut into
// d contiguous runs, member m holding rows [m floor(L/d) + min(m, L mod d), ...) of every
// sequence, floor(L/d) or, for the first L mod d members, one more (r_m rows per sequence,
// B r_m in all); parallel::SequenceShards with rows[m][s] = r_m describes it.
// Per member: the embedding of its rows; in every block, adaLN modulation, LayerNorm and the
// q/k/v projections on its rows, then UlyssesScatter of q, k and v (one tensor per
// all-to-all) to the head-split side (B L, H/d, D), i.e. heads m H/d .. (m+1) H/d - 1 of all
// rows, attention there with models::DitExecution's mode and chunks, UlyssesGather of its output
// back to the member's rows, then output projection, gated residual and FFN (ffn_chunks over its B
// r_m rows) on its rows; the final layer on its image rows, whose results are all-gathered (one
// AllGatherV per sequence, straight into "dit.out", no staging): EVERY member returns the full
// prediction "dit.out" (B, N, C_in), the same bits on every member (the sampler's next step needs
// the whole latent on every member anyway).
//
// Memory, per member and through its allocator, under models::TinyDit's op names: "dit.embed"
// ("dit.embed.temb", "dit.cond" (B, Hd), "dit.h" (B r_m, Hd)); "dit.block<l>" workspaces
// "mod" (B, 6 Hd), "norm" and "modx" (B ceil(L/d), Hd: sized for the largest member so that
// they can hold the all-to-all staging), "rstd" (B r_m), "q", "k", "v" (B r_m, Hd; the gathered
// attention output lands in "q"), "ffn" (models::FfnChunkRows(B r_m, ffn_chunks), F), "q_heads",
// "k_heads", "v_heads", "o_heads" (B L, Hd/d), then "lse" (B L, H/d) or "scores" (B H/d,
// ceil(L/k), L); "dit.final" ("dit.final.mod", and for a member with image rows
// "dit.final.norm", ".rstd", ".modx", ".rows" (B n_m, .) for its n_m image rows per sequence;
// "dit.out" (B N, C_in)). The Ulysses staging buffers are "norm" and "modx" (dead between the
// q/k/v projections and the output projection), so nothing is hidden on the heap; a member's
// activation peak is about 1/d of the single device's plus the head-split tensors.
//
// Numerics: the math is models::TinyDit's own code (dit_stages.h) and the Ulysses moves are exact
// copies, but the GEMMs run on a member's rows only, so results may differ from
// models::TinyDit::Forward by float rounding where a GEMM kernel rounds a row by the call's shape
// (tested on seeded random configs: bitwise equal with oneDNN, up to 1.2e-6 of the output
// scale with OpenBLAS). d == 1 (group null or of size 1) IS models::TinyDit::Forward: the same
// allocations and the same bits.
//
// Errors, the same on every member (none is left waiting): every op makes all its
// allocations before it exchanges anything, then the members agree on their status (one
// AllGather of a status code each, plus an input fingerprint at the start); when any member
// failed (InvalidArgument: a malformed input, num_heads not a multiple of sp_degree d, fewer
// rows per sequence than members, members passing different shapes or executions;
// Infeasible: out of device memory; after_embed's error) every member returns that member's
// status, sent from it and prefixed "sp member j of d", with nothing leaked, no op left open
// and the communicator still usable. A failure of the communicator itself is returned as is
// and leaves it broken (communicator.h): e.g. a member that never calls, or returns without
// its share of a collective, makes its peers' next collective return Unavailable once its
// thread ends on the in-process backend (RunInProcessRanks marks a returned rank exited), or
// DeadlineExceeded when an op timeout is set; under MPI the job aborts.
// Thread-safety: one thread per member (its allocator, models::TinyDit and communicator).
#pragma once

#include <cstdint>

#include "comm/communicator.h"
#include "core/status.h"
#include "models/dit_stages.h"
#include "models/tiny_dit.h"
#include "runtime/device_allocator.h"
#include "runtime/op_scope.h"

namespace tessera::xema {

// One member of a sequence-parallel group: `group` (its size is the SP degree d; null: d = 1)
// and this member's rank in it.
struct SpMember {
  comm::Communicator* group = nullptr;
  int member = 0;
  int degree() const { return group == nullptr ? 1 : group->size(); }
};

// Member `member`'s rows of each of `batch` sequences of text_tokens + image_tokens rows
// under sp degree d >= 1 (see the file comment); empty when d exceeds L.
models::DitRows SpRowsOf(int64_t batch, int64_t text_tokens, int64_t image_tokens, int d,
                         int member);

// Collective over `group` (d members; null or size 1: d = 1), this member being its rank
// `member`. Returns "dit.out" (B, N, C_in) on every member.
core::StatusOr<runtime::DeviceTensor> SequenceParallelForward(const models::TinyDit& dit,
                                                              runtime::DeviceAllocator& allocator,
                                                              comm::Communicator* group, int member,
                                                              const models::TinyDit::Input& input,
                                                              const models::DitExecution& execution,
                                                              const runtime::OpContext& context);

}  // namespace tessera::xema
