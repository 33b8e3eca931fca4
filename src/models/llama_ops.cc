#include "models/llama_ops.h"

#include <cmath>

#include "kernels/gemm.h"

namespace tessera::models {

void RmsNormRows(const float* x, int64_t rows, int64_t width, const float* w, double eps,
                 float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * width;
    double ss = 0.0;
    for (int64_t i = 0; i < width; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(width) + eps));
    float* yr = y + r * width;
    for (int64_t i = 0; i < width; ++i) yr[i] = w[i] * (xr[i] * inv);
  }
}

void RopeTables(std::span<const int64_t> positions, const std::vector<double>& inv_freq,
                float* cos_t, float* sin_t) {
  const int64_t half = static_cast<int64_t>(inv_freq.size());
  for (size_t r = 0; r < positions.size(); ++r) {
    const float pos = static_cast<float>(positions[r]);
    for (int64_t j = 0; j < half; ++j) {
      const float angle = static_cast<float>(inv_freq[j]) * pos;
      cos_t[r * half + j] = static_cast<float>(std::cos(static_cast<double>(angle)));
      sin_t[r * half + j] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
  }
}

void ApplyRope(float* x, int64_t rows, int64_t heads, int64_t head_dim, const float* cos_t,
               const float* sin_t) {
  const int64_t half = head_dim / 2;
  for (int64_t t = 0; t < rows; ++t) {
    const float* c = cos_t + t * half;
    const float* s = sin_t + t * half;
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x + (t * heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const float x1 = v[i], x2 = v[i + half];
        v[i] = x1 * c[i] - x2 * s[i];
        v[i + half] = x2 * c[i] + x1 * s[i];
      }
    }
  }
}

core::Status LlamaLinear(const float* x, int64_t rows, int64_t in, const std::vector<float>& w,
                         int64_t out, float beta, float* y) {
  return kernels::Gemm(kernels::Transpose::kNo, kernels::Transpose::kYes, rows, out, in, 1.0f, x,
                       in, w.data(), in, beta, y, out);
}

void SwiGluInPlace(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

}  // namespace tessera::models
