#include "kernels/decode_attention_stream.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/infinity.h"
#include "kernels/fast_exp.h"

// The entry point has one copy per target (AVX-512, AVX2+FMA, baseline), picked once from the CPU
// features. Every helper below is always_inline so that each copy compiles it for its target.
#define TESSERA_INLINE [[gnu::always_inline]] inline

// Vector values only pass between always_inline helpers inside one target's copy, never across a
// call boundary, so GCC's note that their ABI differs without AVX does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace tessera::kernels::internal {
namespace {

using core::kNegInf;
constexpr int64_t kB = kStreamBlockTokens;
// Software prefetch distance in bytes of the prefetched stream: while a row is consumed, the row
// about kAheadBytes further on is requested into L2 (prefetcht1). The hardware prefetcher alone
// does not keep enough lines in flight under this loop's compute. Measured with
// bench_decode_attention at 32K-64K tokens (AMD EPYC, AVX-512 copy): requests into L1 16 rows
// ahead gave 7-16 GB/s, into L2 8 KB ahead 15-19 GB/s, of a 22-27 GB/s streaming read.
constexpr int64_t kAheadBytes = 8192;
// Tokens per score window: their partial dot products are reduced across lanes together.
constexpr int64_t kWindow = 8;

// Eight fp32 lanes: one AVX register (two SSE registers on the baseline target); sixteen: one
// AVX-512 register.
typedef float V8 __attribute__((vector_size(32)));
typedef float V16 __attribute__((vector_size(64)));
typedef int I8 __attribute__((vector_size(32)));

template <class V>
TESSERA_INLINE V Load(const float* p) {
  V x;
  std::memcpy(&x, p, sizeof x);
  return x;
}

template <class V>
TESSERA_INLINE void Store(float* p, V x) {
  std::memcpy(p, &x, sizeof x);
}

// Eight lanes whose sum is the sum of x's lanes.
TESSERA_INLINE V8 Fold(V8 x) { return x; }
TESSERA_INLINE V8 Fold(V16 x) {
  V8 lo, hi;
  std::memcpy(&lo, &x, sizeof lo);
  std::memcpy(&hi, reinterpret_cast<const char*>(&x) + sizeof lo, sizeof hi);
  return lo + hi;
}

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

// The rows to prefetch, in visiting order: `n` rows at k/v + t * stride, each `span` elements,
// continuing into `next_n` rows at next_k/next_v + t * next_stride of `next_span` elements.
struct Ahead {
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t n = 0, stride = 0, span = 0;
  int64_t rows_ahead = 0;  // prefetch distance in rows
  const float* next_k = nullptr;
  const float* next_v = nullptr;
  int64_t next_n = 0, next_stride = 0, next_span = 0;
};

// Requests the cache lines of row w of `a`'s K (or V when `values`), in address order.
TESSERA_INLINE void PrefetchRow(const Ahead* a, int64_t w, bool values) {
  const float* row;
  int64_t span;
  if (w < a->n) {
    row = (values ? a->v : a->k) + w * a->stride;
    span = a->span;
  } else if (w - a->n < a->next_n) {
    row = (values ? a->next_v : a->next_k) + (w - a->n) * a->next_stride;
    span = a->next_span;
  } else {
    return;
  }
  for (int64_t x = 0; x < span; x += 16) __builtin_prefetch(row + x, 0, 2);
}

// One block of nb tokens (segment offset tb) of nh KV heads: head h's K row of token t at
// k + h * hs + t * ts (V likewise); its queries, accumulators and row state at the pass's
// pointers offset by h * rows (rows of d elements for qs and acc).
struct Pass {
  const float* k;
  const float* v;
  int64_t ts, hs, nh, rows, d, nb, tb;
  const int64_t* visible;
  const float* qs;
  float* row_max;
  float* row_sum;
  float* acc;
  const Ahead* ahead;  // null: another pass prefetches this block
};

// Partial dot products of R query rows q + r * d against the K rows of n <= kWindow tokens
// k + t * ts: part[r * kWindow + t] holds eight lanes summing to the score. Each K row is loaded
// once, in token order, for the R rows.
template <class V, int R>
TESSERA_INLINE void ScoreUnit(const float* q, int64_t d, const float* k, int64_t ts, int64_t n,
                              V8* part) {
  constexpr int64_t kW = sizeof(V) / sizeof(float);
  for (int64_t t = 0; t < n; ++t) {
    const float* kt = k + t * ts;
    V a[R] = {};
    for (int64_t x = 0; x < d; x += kW) {
      const V kx = Load<V>(kt + x);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) a[r] += Load<V>(q + r * d + x) * kx;
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) part[r * kWindow + t] = Fold(a[r]);
  }
}

// Scores of every (head, row) of the pass into p[(h * rows + r) * kB + t], -inf where the row
// does not see token t (and for t >= nb).
template <class V, int kD>
TESSERA_INLINE void PassScores(const Pass& s, float* p) {
  alignas(64) V8 part[kStreamMaxHeadRows * kWindow];
  const int64_t hr_count = s.nh * s.rows, d = kD > 0 ? kD : s.d;
  for (int64_t t0 = 0; t0 < s.nb; t0 += kWindow) {
    const int64_t n = std::min(kWindow, s.nb - t0);
    if (s.ahead != nullptr) {
      for (int64_t t = t0; t < t0 + n; ++t) PrefetchRow(s.ahead, t + s.ahead->rows_ahead, false);
    }
    if (n < kWindow) std::fill_n(part, hr_count * kWindow, V8{});
    for (int64_t h = 0; h < s.nh; ++h) {
      const float* k = s.k + h * s.hs + t0 * s.ts;
      const float* q = s.qs + h * s.rows * d;
      V8* ph = part + h * s.rows * kWindow;
      int64_t r = 0;
      for (; r + 4 <= s.rows; r += 4) ScoreUnit<V, 4>(q + r * d, d, k, s.ts, n, ph + r * kWindow);
      switch (s.rows - r) {
        case 3:
          ScoreUnit<V, 3>(q + r * d, d, k, s.ts, n, ph + r * kWindow);
          break;
        case 2:
          ScoreUnit<V, 2>(q + r * d, d, k, s.ts, n, ph + r * kWindow);
          break;
        case 1:
          ScoreUnit<V, 1>(q + r * d, d, k, s.ts, n, ph + r * kWindow);
          break;
        default:
          break;
      }
    }
    for (int64_t hr = 0; hr < hr_count; ++hr) {
      Store(p + hr * kB + t0, TransposeSum8(part + hr * kWindow));
    }
  }
  for (int64_t hr = 0; hr < hr_count; ++hr) {
    const int64_t r = hr % s.rows;
    const int64_t c =
        s.visible == nullptr ? s.nb : std::clamp<int64_t>(s.visible[r] - s.tb, 0, s.nb);
    std::fill(p + hr * kB + c, p + (hr + 1) * kB, kNegInf);
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

// acc[r * d + c * W + i] += sum_t p[r * kB + t] * v[t * ts + c * W + i] for R rows, C vectors
// and t < n, the accumulators in registers over the tokens; each V row (its C vectors) is loaded
// once, in token order. With `ahead`, requests the V row ahead->rows_ahead tokens on (block
// offset t_first) before each token.
template <class V, int R, int C>
TESSERA_INLINE void ValueUnit(const float* p, const float* v, int64_t ts, int64_t n, float* acc,
                              int64_t d, const Ahead* ahead, int64_t t_first) {
  constexpr int64_t kW = sizeof(V) / sizeof(float);
  V a[R][C];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) a[r][c] = Load<V>(acc + r * d + c * kW);
  }
  for (int64_t t = 0; t < n; ++t) {
    if (ahead != nullptr) PrefetchRow(ahead, t_first + t + ahead->rows_ahead, true);
    V vt[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) vt[c] = Load<V>(v + t * ts + c * kW);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const float pr = p[r * kB + t];
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) a[r][c] += pr * vt[c];
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) Store(acc + r * d + c * kW, a[r][c]);
  }
}

// Largest power of two <= x.
constexpr int FloorPow2(int x) { return x >= 8 ? 8 : x >= 4 ? 4 : x >= 2 ? 2 : 1; }

// R rows' accumulators over all of d in column chunks of up to kRegs / R vectors (kD = d when
// known at compile time, else 0), for tokens [t0, t0 + n) of the block.
template <class V, int kRegs, int kD, int R>
TESSERA_INLINE void ValueRows(const float* p, const float* v, int64_t ts, int64_t t0, int64_t n,
                              float* acc, int64_t d, const Ahead* ahead) {
  constexpr int kW = sizeof(V) / sizeof(float);
  constexpr int kC = kD > 0 ? std::min(FloorPow2(kRegs / R), kD / kW) : FloorPow2(kRegs / R);
  int64_t x = 0;
  for (; x + kC * kW <= d; x += kC * kW) {
    ValueUnit<V, R, kC>(p + t0, v + t0 * ts + x, ts, n, acc + x, d, x == 0 ? ahead : nullptr, t0);
  }
  for (; x < d; x += kW) {
    ValueUnit<V, R, 1>(p + t0, v + t0 * ts + x, ts, n, acc + x, d, x == 0 ? ahead : nullptr, t0);
  }
}

// The P V product of the pass: head-major (one head), each row group over the whole block;
// token-major, windows of kWindow tokens, every head's rows of a window before the next window.
template <class V, int kRegs, int kD>
TESSERA_INLINE void PassValues(const Pass& s, const float* p) {
  const int64_t d = kD > 0 ? kD : s.d;
  const int64_t window = s.nh == 1 ? s.nb : kWindow;
  for (int64_t t0 = 0; t0 < s.nb; t0 += window) {
    const int64_t n = std::min(window, s.nb - t0);
    for (int64_t h = 0; h < s.nh; ++h) {
      const float* v = s.v + h * s.hs;
      for (int64_t r = 0; r < s.rows;) {
        const float* pr = p + (h * s.rows + r) * kB;
        float* acc = s.acc + (h * s.rows + r) * d;
        const Ahead* ahead = h == 0 && r == 0 ? s.ahead : nullptr;
        switch (std::min<int64_t>(4, s.rows - r)) {
          case 4:
            ValueRows<V, kRegs, kD, 4>(pr, v, s.ts, t0, n, acc, d, ahead);
            r += 4;
            break;
          case 3:
            ValueRows<V, kRegs, kD, 3>(pr, v, s.ts, t0, n, acc, d, ahead);
            r += 3;
            break;
          case 2:
            ValueRows<V, kRegs, kD, 2>(pr, v, s.ts, t0, n, acc, d, ahead);
            r += 2;
            break;
          default:
            ValueRows<V, kRegs, kD, 1>(pr, v, s.ts, t0, n, acc, d, ahead);
            r += 1;
            break;
        }
      }
    }
  }
}

template <class V, int kRegs, int kD>
TESSERA_INLINE void RunPass(const Pass& s) {
  alignas(64) float p[kStreamMaxHeadRows * kB];
  const int64_t d = kD > 0 ? kD : s.d;
  PassScores<V, kD>(s, p);
  for (int64_t hr = 0; hr < s.nh * s.rows; ++hr) {
    BlockSoftmax(p + hr * kB, d, s.row_max + hr, s.row_sum + hr, s.acc + hr * d);
  }
  PassValues<V, kRegs, kD>(s, p);
}

// Elements of one prefetched row of `seg`: one head's d (head-major) or every head's (token-major).
int64_t RowSpan(const KvSegment& seg, int64_t hkv, int64_t d) {
  return seg.head_stride > seg.token_stride ? d : (hkv - 1) * seg.head_stride + d;
}

struct Args {
  const float* qs;
  int64_t hkv, rows, d;
  const KvSegment* seg;
  const KvSegment* next;
  const int64_t* visible;
  float* row_max;
  float* row_sum;
  float* acc;
};

// Head-major (a head's tokens adjacent): one head at a time streams its K and V, block by
// block; token-major: every head of a block (in groups of up to kStreamMaxHeadRows query rows)
// before the next block, so memory is read in address order.
template <class V, int kRegs, int kD>
TESSERA_INLINE void Tile(const Args& a) {
  const KvSegment& seg = *a.seg;
  const int64_t n = seg.len, ts = seg.token_stride, hs = seg.head_stride, d = kD > 0 ? kD : a.d;
  const bool heads_outer = hs > ts;
  const int64_t group = heads_outer ? 1 : std::max<int64_t>(1, kStreamMaxHeadRows / a.rows);
  const int64_t blocks = (n + kB - 1) / kB;
  const int64_t outer = heads_outer ? a.hkv : blocks;
  for (int64_t i = 0; i < outer; ++i) {
    for (int64_t j = 0; j < (heads_outer ? blocks : a.hkv); j += heads_outer ? 1 : group) {
      const int64_t kv = heads_outer ? i : j, tb = (heads_outer ? j : i) * kB;
      const int64_t off = kv * hs + tb * ts, nb = std::min(kB, n - tb);
      // Prefetch stream: head-major, this head's rows, then the next block's (the next head's
      // first block after the last, the next segment's after the last head); token-major, whole
      // token rows on the first head group's pass, running into the next block or segment.
      Ahead ahead;
      ahead.k = seg.k + off;
      ahead.v = seg.v + off;
      ahead.n = nb;
      ahead.stride = ts;
      ahead.span = RowSpan(seg, a.hkv, d);
      ahead.rows_ahead = std::max<int64_t>(4, kAheadBytes / (ahead.span * 4));
      if (tb + kB < n) {
        ahead.next_k = ahead.k + kB * ts;
        ahead.next_v = ahead.v + kB * ts;
        ahead.next_n = std::min(kB, n - tb - kB);
        ahead.next_stride = ts;
        ahead.next_span = ahead.span;
      } else if (heads_outer && kv + 1 < a.hkv) {
        ahead.next_k = seg.k + (kv + 1) * hs;
        ahead.next_v = seg.v + (kv + 1) * hs;
        ahead.next_n = std::min(kB, n);
        ahead.next_stride = ts;
        ahead.next_span = ahead.span;
      } else if (a.next != nullptr && a.next->len > 0) {
        ahead.next_k = a.next->k;
        ahead.next_v = a.next->v;
        ahead.next_n = std::min(kB, a.next->len);
        ahead.next_stride = a.next->token_stride;
        ahead.next_span = RowSpan(*a.next, a.hkv, d);
      }
      const Pass pass{seg.k + off,
                      seg.v + off,
                      ts,
                      hs,
                      std::min(group, a.hkv - kv),
                      a.rows,
                      d,
                      nb,
                      tb,
                      a.visible,
                      a.qs + kv * a.rows * d,
                      a.row_max + kv * a.rows,
                      a.row_sum + kv * a.rows,
                      a.acc + kv * a.rows * d,
                      heads_outer || kv == 0 ? &ahead : nullptr};
      RunPass<V, kRegs, kD>(pass);
    }
  }
}

// The copies per target: kRegs bounds the vector accumulators a value unit holds (of 32
// registers with AVX-512, 16 with AVX2, 16 SSE registers holding 8 V8 on the baseline).
template <class V, int kRegs>
TESSERA_INLINE void TileAnyD(const Args& a) {
  if (a.d == 64) {
    Tile<V, kRegs, 64>(a);
  } else if (a.d == 128) {
    Tile<V, kRegs, 128>(a);
  } else {
    Tile<V, kRegs, 0>(a);
  }
}

[[gnu::target("arch=x86-64-v4")]] void TileAvx512(const Args& a) {
  if (a.d % 16 == 0) {
    TileAnyD<V16, 16>(a);
  } else {
    Tile<V8, 16, 0>(a);
  }
}

[[gnu::target("arch=x86-64-v3")]] void TileAvx2(const Args& a) { TileAnyD<V8, 8>(a); }

void TileBaseline(const Args& a) { Tile<V8, 4, 0>(a); }

using TileFn = void (*)(const Args&);

TileFn TileFor(StreamTarget target) {
  switch (target) {
    case StreamTarget::kAvx512:
      return TileAvx512;
    case StreamTarget::kAvx2:
      return TileAvx2;
    default:
      return TileBaseline;
  }
}

StreamTarget BestTarget() {
  if (StreamTargetSupported(StreamTarget::kAvx512)) return StreamTarget::kAvx512;
  if (StreamTargetSupported(StreamTarget::kAvx2)) return StreamTarget::kAvx2;
  return StreamTarget::kBaseline;
}

}  // namespace

bool StreamTargetSupported(StreamTarget target) {
  __builtin_cpu_init();
  switch (target) {
    case StreamTarget::kAvx512:
      return __builtin_cpu_supports("x86-64-v4");
    case StreamTarget::kAvx2:
      return __builtin_cpu_supports("x86-64-v3");
    default:
      return true;
  }
}

void DecodeStreamTileOn(StreamTarget target, const float* qs, int64_t hkv, int64_t rows, int64_t d,
                        const KvSegment& seg, const KvSegment* next, const int64_t* visible,
                        float* row_max, float* row_sum, float* acc) {
  TileFor(target)(Args{qs, hkv, rows, d, &seg, next, visible, row_max, row_sum, acc});
}

void DecodeStreamTile(const float* qs, int64_t hkv, int64_t rows, int64_t d, const KvSegment& seg,
                      const KvSegment* next, const int64_t* visible, float* row_max, float* row_sum,
                      float* acc) {
  static const TileFn tile = TileFor(BestTarget());
  tile(Args{qs, hkv, rows, d, &seg, next, visible, row_max, row_sum, acc});
}

}  // namespace tessera::kernels::internal
