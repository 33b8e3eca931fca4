// Residual dropout of SmallGpt (small_gpt.h, small_gpt_stage.h) with masks keyed by global ids,
// never by rank or stage: the keep/drop bit of an element depends only on
//   (dropout_seed, step, global micro-batch id, global layer, site, element)
// where `element` is the flat index into the UNSHARDED (M, h) tensor of the micro-batch
// (global token row x h + column). Sequence-parallel rank r of t, holding rows
// [r M/t, (r+1) M/t), draws the bits of those rows, so the mask of a run is the same whatever
// its tensor-parallel degree and however its layers are split into pipeline stages.
//
// Element e is dropped iff core::Rng(seed).Keyed({step, micro_batch, layer, site}).UniformAt(e)
// < p; a kept element is scaled by 1 / (1 - p) (inverted dropout, as a float). The backward
// multiplies the gradient by the same mask (ApplyGptDropout on dY).
// Attention-probability dropout is not offered: the attention kernel (kernels/attention.h) fuses
// the softmax with the PV product and never materialises the probabilities.
// Thread-safety: pure functions on caller-owned memory.
#pragma once

#include <compare>
#include <cstdint>

namespace tessera::models {

// The identity of a micro-batch in a training run: the optimizer step and the micro-batch's
// global id within the step (the same on every rank, stage and data-parallel replica).
struct MicroBatchKey {
  int64_t step = 0;
  int64_t micro_batch = 0;
  auto operator<=>(const MicroBatchKey&) const = default;
};

// Where in a transformer block a dropout sits.
enum class GptDropoutSite : uint64_t {
  kAttentionOut = 0,  // after the attention projection (x += Dropout(o W_proj))
  kMlpOut = 1,        // after fc2 (x += Dropout(GELU(b W_fc1) W_fc2))
};

// Whether element `element` of the (M, h) tensor at (key, layer, site) is kept.
bool GptDropoutKeeps(uint64_t seed, float p, MicroBatchKey key, int64_t layer, GptDropoutSite site,
                     int64_t element);

// x (rows, width): rows [row0, row0 + rows) of the unsharded tensor, in place: x *= mask /
// (1 - p). Does nothing when p == 0.
void ApplyGptDropout(uint64_t seed, float p, MicroBatchKey key, int64_t layer, GptDropoutSite site,
                     int64_t row0, int64_t rows, int64_t width, float* x);

}  // namespace tessera::models
