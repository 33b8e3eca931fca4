#include "models/ops.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "kernels/fast_exp.h"
#include "kernels/gemm.h"

namespace tessera::models::ops {
namespace {

using kernels::GemmUnchecked;
using kernels::Transpose;

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

// exp for the element-wise loops below: degree 6, huge negative inputs clamped (see
// kernels/fast_exp.h for the accuracy contract); std::tanh / std::exp were ~1/3 of a training
// step of the default model (measured with perf).
inline float FastExp(float x) { return kernels::FastExp<6, kernels::ExpUnderflow::kClamp>(x); }

// tanh(u) = (e - 1) / (e + 1), e = exp(2u); |u| > 9 saturates to +-1 in fp32. Absolute error
// below ~2e-7.
inline float FastTanh(float u) {
  u = u < -9.0f ? -9.0f : u;
  u = u > 9.0f ? 9.0f : u;
  const float e = FastExp(2.0f * u);
  return (e - 1.0f) / (e + 1.0f);
}

inline float Sigmoid(float x) { return 1.0f / (1.0f + FastExp(-x)); }

}  // namespace

void LinearForward(const float* x, int64_t n, int64_t in, const float* w, int64_t ldw,
                   const float* b, int64_t out, float* y, int64_t ldy) {
  if (n == 0 || out == 0) return;
  GemmUnchecked(Transpose::kNo, Transpose::kNo, n, out, in, 1.0f, x, in, w, ldw, 0.0f, y, ldy);
  if (b == nullptr) return;
  for (int64_t r = 0; r < n; ++r) {
    float* row = y + r * ldy;
    for (int64_t j = 0; j < out; ++j) row[j] += b[j];
  }
}

void LinearBackward(const float* x, int64_t n, int64_t in, const float* w, int64_t ldw, int64_t out,
                    const float* dy, int64_t ldy, float* dw, float* db, float* dx,
                    bool accumulate_dx) {
  if (n == 0) return;
  GemmUnchecked(Transpose::kYes, Transpose::kNo, in, out, n, 1.0f, x, in, dy, ldy, 1.0f, dw, ldw);
  if (db != nullptr) AccumulateColumnSums(dy, n, out, ldy, db);
  if (dx != nullptr) {
    GemmUnchecked(Transpose::kNo, Transpose::kYes, n, in, out, 1.0f, dy, ldy, w, ldw,
                  accumulate_dx ? 1.0f : 0.0f, dx, in);
  }
}

void LayerNormForward(const float* x, int64_t n, int64_t width, float eps, float* y, float* rstd) {
  for (int64_t r = 0; r < n; ++r) {
    const float* xr = x + r * width;
    double sum = 0.0;
    for (int64_t j = 0; j < width; ++j) sum += xr[j];
    const double mean = sum / static_cast<double>(width);
    double var = 0.0;
    for (int64_t j = 0; j < width; ++j) {
      const double d = xr[j] - mean;
      var += d * d;
    }
    var /= static_cast<double>(width);
    const float rs = static_cast<float>(1.0 / std::sqrt(var + eps));
    rstd[r] = rs;
    float* yr = y + r * width;
    const float mean_f = static_cast<float>(mean);
    for (int64_t j = 0; j < width; ++j) yr[j] = (xr[j] - mean_f) * rs;
  }
}

void LayerNormBackward(const float* dy, const float* y, const float* rstd, int64_t n, int64_t width,
                       float* dx, bool accumulate_dx) {
  for (int64_t r = 0; r < n; ++r) {
    const float* dyr = dy + r * width;
    const float* yr = y + r * width;
    double sum_dy = 0.0, sum_dy_y = 0.0;
    for (int64_t j = 0; j < width; ++j) {
      sum_dy += dyr[j];
      sum_dy_y += static_cast<double>(dyr[j]) * yr[j];
    }
    const float mean_dy = static_cast<float>(sum_dy / static_cast<double>(width));
    const float mean_dy_y = static_cast<float>(sum_dy_y / static_cast<double>(width));
    float* dxr = dx + r * width;
    for (int64_t j = 0; j < width; ++j) {
      const float g = rstd[r] * (dyr[j] - mean_dy - yr[j] * mean_dy_y);
      dxr[j] = accumulate_dx ? dxr[j] + g : g;
    }
  }
}

void ModulateForward(const float* x, std::span<const int64_t> cu_seqlens, int64_t width,
                     const float* shift, const float* scale, int64_t ld_mod, float* y) {
  for (size_t s = 0; s + 1 < cu_seqlens.size(); ++s) {
    const float* sh = shift + s * ld_mod;
    const float* sc = scale + s * ld_mod;
    for (int64_t t = cu_seqlens[s]; t < cu_seqlens[s + 1]; ++t) {
      const float* xr = x + t * width;
      float* yr = y + t * width;
      for (int64_t j = 0; j < width; ++j) yr[j] = xr[j] * (1.0f + sc[j]) + sh[j];
    }
  }
}

void ModulateBackward(const float* dy, const float* x, std::span<const int64_t> cu_seqlens,
                      int64_t width, const float* scale, int64_t ld_mod, float* dx, float* dshift,
                      float* dscale) {
  for (size_t s = 0; s + 1 < cu_seqlens.size(); ++s) {
    const float* sc = scale + s * ld_mod;
    float* dsh = dshift + s * ld_mod;
    float* dsc = dscale + s * ld_mod;
    for (int64_t t = cu_seqlens[s]; t < cu_seqlens[s + 1]; ++t) {
      const float* dyr = dy + t * width;
      const float* xr = x + t * width;
      float* dxr = dx + t * width;
      for (int64_t j = 0; j < width; ++j) {
        dxr[j] = dyr[j] * (1.0f + sc[j]);
        dsh[j] += dyr[j];
        dsc[j] += dyr[j] * xr[j];
      }
    }
  }
}

void GatedResidualForward(const float* y, std::span<const int64_t> cu_seqlens, int64_t width,
                          const float* gate, int64_t ld_mod, float* h) {
  for (size_t s = 0; s + 1 < cu_seqlens.size(); ++s) {
    const float* g = gate + s * ld_mod;
    for (int64_t t = cu_seqlens[s]; t < cu_seqlens[s + 1]; ++t) {
      const float* yr = y + t * width;
      float* hr = h + t * width;
      for (int64_t j = 0; j < width; ++j) hr[j] += g[j] * yr[j];
    }
  }
}

void GatedResidualBackward(const float* dh, const float* y, std::span<const int64_t> cu_seqlens,
                           int64_t width, const float* gate, int64_t ld_mod, float* dy,
                           float* dgate) {
  for (size_t s = 0; s + 1 < cu_seqlens.size(); ++s) {
    const float* g = gate + s * ld_mod;
    float* dg = dgate + s * ld_mod;
    for (int64_t t = cu_seqlens[s]; t < cu_seqlens[s + 1]; ++t) {
      const float* dhr = dh + t * width;
      const float* yr = y + t * width;
      float* dyr = dy + t * width;
      for (int64_t j = 0; j < width; ++j) {
        dyr[j] = g[j] * dhr[j];
        dg[j] += dhr[j] * yr[j];
      }
    }
  }
}

void GeluForward(const float* x, int64_t count, float* y) {
  for (int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    const float u = kSqrt2OverPi * (v + kGeluCubic * v * v * v);
    y[i] = 0.5f * v * (1.0f + FastTanh(u));
  }
}

void GeluBackward(const float* dy, const float* x, int64_t count, float* dx) {
  for (int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    const float u = kSqrt2OverPi * (v + kGeluCubic * v * v * v);
    const float th = FastTanh(u);
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * v * v);
    dx[i] = dy[i] * (0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * du);
  }
}

void SiluForward(const float* x, int64_t count, float* y) {
  for (int64_t i = 0; i < count; ++i) y[i] = x[i] * Sigmoid(x[i]);
}

void SiluBackward(const float* dy, const float* x, int64_t count, float* dx, bool accumulate_dx) {
  for (int64_t i = 0; i < count; ++i) {
    const float sg = Sigmoid(x[i]);
    const float g = dy[i] * sg * (1.0f + x[i] * (1.0f - sg));
    dx[i] = accumulate_dx ? dx[i] + g : g;
  }
}

void SinusoidalEmbedding(const float* values, int64_t n, int64_t dim, float max_period,
                         float* out) {
  const int64_t half = dim / 2;
  for (int64_t i = 0; i < n; ++i) {
    float* row = out + i * dim;
    for (int64_t j = 0; j < half; ++j) {
      const double freq = std::exp(-std::log(static_cast<double>(max_period)) *
                                   static_cast<double>(j) / static_cast<double>(half));
      const double arg = static_cast<double>(values[i]) * freq;
      row[j] = static_cast<float>(std::cos(arg));
      row[half + j] = static_cast<float>(std::sin(arg));
    }
    if (dim % 2 == 1) row[dim - 1] = 0.0f;
  }
}

void AddPositionEmbedding(std::span<const int64_t> cu_seqlens,
                          std::span<const int64_t> position_offsets, int64_t width, float* h) {
  auto offset = [&](size_t s) { return position_offsets.empty() ? 0 : position_offsets[s]; };
  // One table for positions 0 .. longest - 1, shared by all sequences.
  int64_t longest = 0;
  for (size_t s = 0; s + 1 < cu_seqlens.size(); ++s) {
    longest = std::max(longest, offset(s) + cu_seqlens[s + 1] - cu_seqlens[s]);
  }
  std::vector<float> positions(longest), table(longest * width);
  for (int64_t p = 0; p < longest; ++p) positions[p] = static_cast<float>(p);
  SinusoidalEmbedding(positions.data(), longest, width, 10000.0f, table.data());
  for (size_t s = 0; s + 1 < cu_seqlens.size(); ++s) {
    for (int64_t t = cu_seqlens[s]; t < cu_seqlens[s + 1]; ++t) {
      const float* emb = table.data() + (offset(s) + t - cu_seqlens[s]) * width;
      float* hr = h + t * width;
      for (int64_t j = 0; j < width; ++j) hr[j] += emb[j];
    }
  }
}

void AccumulateColumnSums(const float* x, int64_t rows, int64_t cols, int64_t ldx, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * ldx;
    for (int64_t j = 0; j < cols; ++j) out[j] += xr[j];
  }
}

}  // namespace tessera::models::ops
