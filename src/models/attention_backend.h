// AttentionBackend: the pluggable attention of the models layer. SmallDit (small_dit.h) calls
// its attention through this interface once per layer for the WHOLE packed varlen batch, so a
// distributed engine (ring / all-to-all attention across ranks) can replace the local kernels
// without touching the model.
//
// Shapes and layouts are those of kernels/attention_shape.h (all fp32, row-major, contiguous):
//   q, o, dq, d_o : (Tq_total, H, D)   k, v, dk, dv : (Tk_total, H, D)   lse : (Tq_total, H)
// block-diagonal over the sequences of cu_seqlens, causal (bottom-right aligned) when
// shape.causal is set and unmasked otherwise; LocalAttentionBackend and
// ReferenceAttentionBackend honour the flag. Forward writes o and lse;
// Backward takes the forward's o and lse as inputs and WRITES (does not accumulate) dq, dk, dv.
// A backend must produce, for each sequence, exactly the single-process attention over that
// sequence's tokens (up to fp32 rounding).
//
// Ownership: callers own every buffer; a backend retains nothing between calls unless it says
// so. Thread-safety: an instance is used by one thread at a time.
#pragma once

#include "core/status.h"
#include "kernels/attention.h"
#include "kernels/attention_shape.h"

namespace tessera::models {

class AttentionBackend {
 public:
  virtual ~AttentionBackend() = default;

  [[nodiscard]] virtual core::Status Forward(const kernels::AttentionShape& shape, const float* q,
                                             const float* k, const float* v, float* o,
                                             float* lse) = 0;

  [[nodiscard]] virtual core::Status Backward(const kernels::AttentionShape& shape, const float* q,
                                              const float* k, const float* v, const float* o,
                                              const float* d_o, const float* lse, float* dq,
                                              float* dk, float* dv) = 0;
};

// The default: one call of the tiled kernels (kernels/attention.h) for the whole packed batch.
class LocalAttentionBackend final : public AttentionBackend {
 public:
  explicit LocalAttentionBackend(kernels::AttentionTiling tiling = {}) : tiling_(tiling) {}

  core::Status Forward(const kernels::AttentionShape& shape, const float* q, const float* k,
                       const float* v, float* o, float* lse) override;
  core::Status Backward(const kernels::AttentionShape& shape, const float* q, const float* k,
                        const float* v, const float* o, const float* d_o, const float* lse,
                        float* dq, float* dk, float* dv) override;

 private:
  kernels::AttentionTiling tiling_;
};

// The plain reference kernels (kernels/attention_reference.h): slow, for tests only.
class ReferenceAttentionBackend final : public AttentionBackend {
 public:
  core::Status Forward(const kernels::AttentionShape& shape, const float* q, const float* k,
                       const float* v, float* o, float* lse) override;
  core::Status Backward(const kernels::AttentionShape& shape, const float* q, const float* k,
                        const float* v, const float* o, const float* d_o, const float* lse,
                        float* dq, float* dk, float* dv) override;
};

}  // namespace tessera::models
