// AdamW: Adam with decoupled weight decay (Loshchilov & Hutter) over one flat fp32 parameter
// buffer and its gradient buffer (SmallDit::Parameters() / Gradients()). One Step does, for
// step number n = 1, 2, ... and every element i:
//   p_i -= lr * weight_decay * p_i                      (decoupled decay, on every element)
//   m_i  = beta1 m_i + (1 - beta1) g_i;   v_i = beta2 v_i + (1 - beta2) g_i^2
//   p_i -= lr * (m_i / (1 - beta1^n)) / (sqrt(v_i / (1 - beta2^n)) + eps)
// State (m, v: 2 floats per parameter) is owned here; the buffers passed to Step are not
// retained. Weight decay applies to the elements whose decay_mask entry is non-zero (every
// element when the mask is empty); SmallDit::DecayMask() selects the weight matrices only.
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"

namespace tessera::models {

struct AdamWOptions {
  float learning_rate = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
};

class AdamW {
 public:
  // InvalidArgument naming the field when num_parameters < 0, learning_rate < 0, a beta is
  // outside [0, 1), eps <= 0 or weight_decay < 0 (or any is not finite).
  static core::StatusOr<AdamW> Create(int64_t num_parameters, const AdamWOptions& options);

  // One update of params from grads (both num_parameters long, and decay_mask empty or as
  // long; else InvalidArgument and nothing changes).
  [[nodiscard]] core::Status Step(std::span<float> params, std::span<const float> grads,
                                  std::span<const uint8_t> decay_mask = {});

  int64_t step() const { return step_; }
  const AdamWOptions& options() const { return options_; }
  void set_learning_rate(float lr) { options_.learning_rate = lr; }
  // The moments m and v (num_parameters each) and the step count, for checkpoints and for
  // moving a layer's optimizer state to another process (ElasWave); set_step restores the count.
  std::span<float> first_moment() { return m_; }
  std::span<float> second_moment() { return v_; }
  std::span<const float> first_moment() const { return m_; }
  std::span<const float> second_moment() const { return v_; }
  void set_step(int64_t n) { step_ = n; }
  // Bytes of optimizer state (m and v).
  int64_t StateBytes() const { return static_cast<int64_t>(2 * m_.size() * sizeof(float)); }

 private:
  AdamW(int64_t n, const AdamWOptions& options) : options_(options), m_(n, 0.0f), v_(n, 0.0f) {}

  AdamWOptions options_;
  int64_t step_ = 0;
  std::vector<float> m_;
  std::vector<float> v_;
};

}  // namespace tessera::models
