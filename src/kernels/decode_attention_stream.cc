#include "kernels/decode_attention_stream.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/infinity.h"
#include "kernels/fast_exp.h"

// The entry point is cloned for these targets and dispatched at load time (ifunc). Every helper
// below is always_inline so that each clone compiles it for its own target.
#define TESSERA_STREAM_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define TESSERA_INLINE [[gnu::always_inline]] inline

// V8 values only pass between always_inline helpers inside one clone, never across a call
// boundary, so GCC's note that their ABI differs without AVX does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace tessera::kernels::internal {
namespace {

using core::kNegInf;
constexpr int64_t kB = kStreamBlockTokens;
// Software prefetch distance in tokens: while token t is consumed, rows t + kAhead are requested.
// The hardware prefetcher alone does not keep enough lines in flight under this loop's compute
// (measured: 7 GB/s from DRAM without, vs 20+ GB/s for a plain sum over the same bytes).
constexpr int64_t kAhead = 16;

// The rows to prefetch after the current block, in visiting order: the block's own rows
// (`n` rows at k/v + t * stride) continue into `next_n` rows at next_k/next_v (same stride).
// Each row spans `span` elements (d for one head; every KV head's row for token-major).
struct Ahead {
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t n = 0;
  const float* next_k = nullptr;
  const float* next_v = nullptr;
  int64_t next_n = 0;
  int64_t stride = 0;
  int64_t span = 0;
};

// Requests the cache lines of rows [u, u + 8) of `a`'s K (or V when `values`), in address order.
TESSERA_INLINE void PrefetchRows(const Ahead* a, int64_t u, bool values) {
  if (a == nullptr) return;
  for (int64_t w = u; w < u + 8; ++w) {
    const float* row;
    if (w < a->n) {
      row = (values ? a->v : a->k) + w * a->stride;
    } else if (w - a->n < a->next_n) {
      row = (values ? a->next_v : a->next_k) + (w - a->n) * a->stride;
    } else {
      return;
    }
    for (int64_t x = 0; x < a->span; x += 16) __builtin_prefetch(row + x, 0, 3);
  }
}

// Eight fp32 lanes: one AVX register (two SSE registers on the baseline target).
typedef float V8 __attribute__((vector_size(32)));
typedef int I8 __attribute__((vector_size(32)));

TESSERA_INLINE V8 Load(const float* p) {
  V8 x;
  std::memcpy(&x, p, sizeof x);
  return x;
}

TESSERA_INLINE void Store(float* p, V8 x) { std::memcpy(p, &x, sizeof x); }

// Pairwise sums: [a0+a1, a2+a3, b0+b1, b2+b3, a4+a5, a6+a7, b4+b5, b6+b7] (vhaddps).
TESSERA_INLINE V8 PairSums(V8 a, V8 b) {
  return __builtin_shuffle(a, b, I8{0, 2, 8, 10, 4, 6, 12, 14}) +
         __builtin_shuffle(a, b, I8{1, 3, 9, 11, 5, 7, 13, 15});
}

// Lane t of the result is the sum of the eight lanes of a[t].
TESSERA_INLINE V8 TransposeSum8(const V8* a) {
  const V8 lo = PairSums(PairSums(a[0], a[1]), PairSums(a[2], a[3]));
  const V8 hi = PairSums(PairSums(a[4], a[5]), PairSums(a[6], a[7]));
  return __builtin_shuffle(lo, hi, I8{0, 1, 2, 3, 8, 9, 10, 11}) +
         __builtin_shuffle(lo, hi, I8{4, 5, 6, 7, 12, 13, 14, 15});
}

// Scores of R query rows q + r * d (d elements each) against 8 consecutive keys
// k + t * stride: one vector accumulator per (row, key) over d, reduced across lanes once at
// the end; each key vector is loaded once for the R rows.
template <int R>
TESSERA_INLINE void Scores8(const float* q, int64_t d, const float* k, int64_t stride, V8* out) {
  V8 a[R][8] = {};
  for (int64_t x = 0; x < d; x += 8) {
    V8 qx[R];
#pragma GCC unroll 2
    for (int r = 0; r < R; ++r) qx[r] = Load(q + r * d + x);
#pragma GCC unroll 8
    for (int64_t t = 0; t < 8; ++t) {
      const V8 kt = Load(k + t * stride + x);
#pragma GCC unroll 2
      for (int r = 0; r < R; ++r) a[r][t] += qx[r] * kt;
    }
  }
#pragma GCC unroll 2
  for (int r = 0; r < R; ++r) out[r] = TransposeSum8(a[r]);
}

TESSERA_INLINE float Dot(const float* q, const float* k, int64_t d) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t x = 0; x < d; ++x) sum += q[x] * k[x];
  return sum;
}

// acc[r, x0 + c * 8 + i] += sum_t p[r, t] * v[t * stride + x0 + c * 8 + i] for R rows and C
// vectors of d starting at x0, t < nb; the accumulators stay in registers over the tokens.
template <int R, int C>
TESSERA_INLINE void AccumulateChunk(const float* p, const float* v, int64_t stride, int64_t nb,
                                    float* acc, int64_t d) {
  V8 a[R][C];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int c = 0; c < C; ++c) a[r][c] = Load(acc + r * d + c * 8);
  }
  for (int64_t t = 0; t < nb; ++t) {
    V8 vt[C];
#pragma GCC unroll 2
    for (int c = 0; c < C; ++c) vt[c] = Load(v + t * stride + c * 8);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const float pr = p[r * kB + t];
#pragma GCC unroll 2
      for (int c = 0; c < C; ++c) a[r][c] += pr * vt[c];
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int c = 0; c < C; ++c) Store(acc + r * d + c * 8, a[r][c]);
  }
}

// Tokens in groups of 8 (2 KB of V rows at d = 64 stay in L1 across the column chunks), each
// group first requesting the V rows kAhead tokens on.
template <int R>
TESSERA_INLINE void AccumulateRows(const float* p, const float* v, int64_t stride, int64_t nb,
                                   float* acc, int64_t d, const Ahead* ahead) {
  for (int64_t t0 = 0; t0 < nb; t0 += 8) {
    PrefetchRows(ahead, t0 + kAhead, true);
    const int64_t n = std::min<int64_t>(8, nb - t0);
    int64_t x = 0;
    for (; x + 16 <= d; x += 16) {
      AccumulateChunk<R, 2>(p + t0, v + t0 * stride + x, stride, n, acc + x, d);
    }
    if (x < d) AccumulateChunk<R, 1>(p + t0, v + t0 * stride + x, stride, n, acc + x, d);
  }
}

// Scores of R rows q + r * d against the block's keys into p[r * kB + t]: the first c[r]
// keys of row r, -inf beyond.
template <int R>
TESSERA_INLINE void BlockScores(const float* q, int64_t d, const float* k, int64_t stride,
                                const int64_t* c, float* p, const Ahead* ahead) {
  int64_t c_min = c[0];
  for (int r = 1; r < R; ++r) c_min = std::min(c_min, c[r]);
  int64_t t = 0;
  for (; t + 8 <= c_min; t += 8) {
    PrefetchRows(ahead, t + kAhead, false);
    V8 s[R];
    Scores8<R>(q, d, k + t * stride, stride, s);
#pragma GCC unroll 2
    for (int r = 0; r < R; ++r) Store(p + r * kB + t, s[r]);
  }
  for (int r = 0; r < R; ++r) {
    int64_t u = t;
    for (; u < c[r]; ++u) p[r * kB + u] = Dot(q + r * d, k + u * stride, d);
    for (; u < kB; ++u) p[r * kB + u] = kNegInf;
  }
}

// Online-softmax update of one row by the block's scores p[0, kB) (-inf where invisible):
// rescales the row's accumulator only when its max grows; p becomes the weights.
TESSERA_INLINE void BlockSoftmax(float* p, int64_t d, float* row_max, float* row_sum,
                                 float* acc_row) {
  float mb = kNegInf;
#pragma omp simd reduction(max : mb)
  for (int64_t j = 0; j < kB; ++j) mb = p[j] > mb ? p[j] : mb;
  const float m_old = *row_max;
  if (!(mb > m_old)) {
    if (m_old == kNegInf) {  // nothing seen yet and nothing visible here
      std::fill_n(p, kB, 0.0f);
      return;
    }
  } else {
    if (m_old != kNegInf) {
      const float corr = FastExp(m_old - mb);
      *row_sum *= corr;
#pragma omp simd
      for (int64_t x = 0; x < d; ++x) acc_row[x] *= corr;
    }
    *row_max = mb;
  }
  const float m = *row_max;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < kB; ++j) {
    const float e = FastExp(p[j] - m);
    p[j] = e;
    sum += e;
  }
  *row_sum += sum;
}

// One block of nb <= kB tokens (tile offset tb) of one KV head.
TESSERA_INLINE void Block(const float* qs, int64_t rows, int64_t d, const float* k, const float* v,
                          int64_t stride, int64_t nb, int64_t tb, const int64_t* visible,
                          float* row_max, float* row_sum, float* acc, const Ahead* ahead) {
  alignas(32) float p[kStreamMaxRows * kB];
  int64_t c[kStreamMaxRows];
  for (int64_t r = 0; r < rows; ++r) {
    c[r] = visible == nullptr ? nb : std::clamp<int64_t>(visible[r] - tb, 0, nb);
  }
  int64_t r = 0;
  for (; r + 2 <= rows; r += 2)
    BlockScores<2>(qs + r * d, d, k, stride, c + r, p + r * kB, r == 0 ? ahead : nullptr);
  if (r < rows)
    BlockScores<1>(qs + r * d, d, k, stride, c + r, p + r * kB, r == 0 ? ahead : nullptr);
  for (r = 0; r < rows; ++r) BlockSoftmax(p + r * kB, d, row_max + r, row_sum + r, acc + r * d);
  r = 0;
  for (; r + 4 <= rows; r += 4)
    AccumulateRows<4>(p + r * kB, v, stride, nb, acc + r * d, d, r == 0 ? ahead : nullptr);
  if (r + 2 <= rows) {
    AccumulateRows<2>(p + r * kB, v, stride, nb, acc + r * d, d, r == 0 ? ahead : nullptr);
    r += 2;
  }
  if (r < rows)
    AccumulateRows<1>(p + r * kB, v, stride, nb, acc + r * d, d, r == 0 ? ahead : nullptr);
}

}  // namespace

TESSERA_STREAM_CLONES
void DecodeStreamTile(const float* qs, int64_t hkv, int64_t rows, int64_t d, const float* k,
                      const float* v, int64_t token_stride, int64_t head_stride, int64_t n,
                      const int64_t* visible, float* row_max, float* row_sum, float* acc) {
  // Head-major (a head's tokens adjacent): one head at a time streams its K and V; token-major:
  // every head of a block before the next block, so memory is read in address order.
  const bool heads_outer = head_stride > token_stride;
  const int64_t blocks = (n + kB - 1) / kB;
  const int64_t outer = heads_outer ? hkv : blocks, inner = heads_outer ? blocks : hkv;
  for (int64_t i = 0; i < outer; ++i) {
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t kv = heads_outer ? i : j, tb = (heads_outer ? j : i) * kB;
      const int64_t off = kv * head_stride + tb * token_stride, nb = std::min(kB, n - tb);
      // Prefetch stream: head-major, this head's rows then the next block's (the next head's
      // first block after the last); token-major, whole token rows (every head) on the first
      // head's pass, running into the next block, so the other heads' passes hit the cache.
      Ahead ahead;
      ahead.k = k + off;
      ahead.v = v + off;
      ahead.n = nb;
      ahead.stride = token_stride;
      ahead.span = heads_outer ? d : (hkv - 1) * head_stride + d;
      int64_t next = -1;  // offset of the next block's rows in the stream, -1 when none
      if (heads_outer) {
        if (tb + kB < n) {
          next = off + kB * token_stride;
        } else if (kv + 1 < hkv) {
          next = (kv + 1) * head_stride;
        }
      } else if (tb + kB < n) {
        next = (tb + kB) * token_stride;
      }
      if (next >= 0) {
        ahead.next_k = k + next;
        ahead.next_v = v + next;
        ahead.next_n = std::min(kB, heads_outer && tb + kB >= n ? n : n - tb - kB);
      }
      Block(qs + kv * rows * d, rows, d, k + off, v + off, token_stride, nb, tb, visible,
            row_max + kv * rows, row_sum + kv * rows, acc + kv * rows * d,
            heads_outer || kv == 0 ? &ahead : nullptr);
    }
  }
}

}  // namespace tessera::kernels::internal
