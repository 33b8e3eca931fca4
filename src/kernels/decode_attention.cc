#include "kernels/decode_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/infinity.h"
#include "kernels/decode_attention_stream.h"
#include "kernels/decode_attention_tiles.h"
#include "kernels/gemm.h"

namespace tessera::kernels {
namespace {

using core::InvalidArgument;
using core::kNegInf;
using core::Status;

// Keys per tile: a tile's K and V rows of all KV heads stay in L2 between the score and the
// value passes, so each is read from memory once.
constexpr int64_t kTileTokens = 256;
// Query rows per KV head at or above which the score and value products go through
// GemmUnchecked; below it (decode: Tq * G <= 8 typically) the vectorised loops win.
constexpr int64_t kGemmMinRows = 16;
// Bound on the query rows per KV head held at once (bounds scratch for long query lists).
constexpr int64_t kMaxRowsPerHead = 128;

std::string Field(const std::string& name) { return "decode_attention." + name; }

Status NotPositive(const std::string& name, int64_t value) {
  return InvalidArgument(Field(name) + ": got " + std::to_string(value) + ", must be >= 1");
}

// Half-open byte range [lo, hi) of a tensor; empty when lo == hi.
struct ByteRange {
  uintptr_t lo = 0, hi = 0;
  bool Overlaps(const ByteRange& other) const {
    return lo < hi && other.lo < other.hi && lo < other.hi && other.lo < hi;
  }
};

ByteRange RangeOf(const float* p, int64_t elements) {
  const auto lo = reinterpret_cast<uintptr_t>(p);
  return {lo, lo + static_cast<uintptr_t>(elements) * sizeof(float)};
}

// Elements spanned by one segment's K (or V), from its first to one past its last element.
int64_t SegmentExtent(const KvSegment& seg, int64_t hkv, int64_t d) {
  return (seg.len - 1) * seg.token_stride + (hkv - 1) * seg.head_stride + d;
}

// Rows of D elements indexed by (token, head) must not overlap. Checks the nested layouts (one
// stride spans all rows of the other dimension); interleavings beyond those are rejected.
Status ValidateStrides(const KvSegment& seg, int64_t index, int64_t hkv, int64_t d) {
  const std::string name = "segments[" + std::to_string(index) + "]";
  if (seg.token_stride < 1) return NotPositive(name + ".token_stride", seg.token_stride);
  if (seg.head_stride < 1) return NotPositive(name + ".head_stride", seg.head_stride);
  const bool tokens_inner = seg.token_stride < seg.head_stride;
  const int64_t inner_count = tokens_inner ? seg.len : hkv;
  const int64_t outer_count = tokens_inner ? hkv : seg.len;
  const int64_t inner_stride = tokens_inner ? seg.token_stride : seg.head_stride;
  const int64_t outer_stride = tokens_inner ? seg.head_stride : seg.token_stride;
  const char* inner_name = tokens_inner ? ".token_stride" : ".head_stride";
  const char* outer_name = tokens_inner ? ".head_stride" : ".token_stride";
  if (inner_count > 1 && inner_stride < d) {
    return InvalidArgument(Field(name + inner_name) + ": got " + std::to_string(inner_stride) +
                           ", must be >= head_dim " + std::to_string(d) +
                           " so that rows do not overlap");
  }
  const int64_t span = (inner_count > 1 ? (inner_count - 1) * inner_stride : 0) + d;
  if (outer_count > 1 && outer_stride < span) {
    return InvalidArgument(Field(name + outer_name) + ": got " + std::to_string(outer_stride) +
                           ", must be >= " + std::to_string(span) +
                           " (the span of the other dimension) so that rows do not overlap");
  }
  return Status::Ok();
}

Status ValidateShape(const DecodeAttentionShape& shape) {
  if (shape.num_q_tokens < 1) return NotPositive("num_q_tokens", shape.num_q_tokens);
  if (shape.num_heads < 1) return NotPositive("num_heads", shape.num_heads);
  if (shape.num_kv_heads < 1) return NotPositive("num_kv_heads", shape.num_kv_heads);
  if (shape.head_dim < 1) return NotPositive("head_dim", shape.head_dim);
  if (shape.num_heads % shape.num_kv_heads != 0) {
    return InvalidArgument(Field("num_kv_heads") + ": got " + std::to_string(shape.num_kv_heads) +
                           ", must divide num_heads " + std::to_string(shape.num_heads));
  }
  if (shape.scale.has_value() && !std::isfinite(*shape.scale)) {
    return InvalidArgument(Field("scale") + ": got " + std::to_string(*shape.scale) +
                           ", must be finite");
  }
  return Status::Ok();
}

// Full validation shared by the kernel and the reference; writes the total key count.
Status Validate(const DecodeAttentionShape& shape, const float* q,
                std::span<const KvSegment> segments, const float* o, const float* lse,
                int64_t* total_keys) {
  RETURN_IF_ERROR(ValidateShape(shape));
  if (q == nullptr) return InvalidArgument(Field("q") + ": null pointer");
  if (o == nullptr) return InvalidArgument(Field("o") + ": null pointer");
  if (lse == nullptr) return InvalidArgument(Field("lse") + ": null pointer");
  const int64_t tq = shape.num_q_tokens, h = shape.num_heads, d = shape.head_dim;
  const ByteRange q_range = RangeOf(q, tq * h * d), o_range = RangeOf(o, tq * h * d),
                  lse_range = RangeOf(lse, tq * h);
  if (o_range.Overlaps(q_range)) return InvalidArgument(Field("o") + ": overlaps q");
  if (lse_range.Overlaps(q_range)) return InvalidArgument(Field("lse") + ": overlaps q");
  if (lse_range.Overlaps(o_range)) return InvalidArgument(Field("lse") + ": overlaps o");
  int64_t tk = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    const KvSegment& seg = segments[i];
    const std::string name = "segments[" + std::to_string(i) + "]";
    if (seg.len < 0) {
      return InvalidArgument(Field(name + ".len") + ": got " + std::to_string(seg.len) +
                             ", must be >= 0");
    }
    if (seg.len == 0) continue;
    if (seg.k == nullptr) return InvalidArgument(Field(name + ".k") + ": null with len > 0");
    if (seg.v == nullptr) return InvalidArgument(Field(name + ".v") + ": null with len > 0");
    RETURN_IF_ERROR(ValidateStrides(seg, static_cast<int64_t>(i), shape.num_kv_heads, d));
    const int64_t extent = SegmentExtent(seg, shape.num_kv_heads, d);
    for (const auto& [tensor, range] :
         {std::pair{"k", RangeOf(seg.k, extent)}, std::pair{"v", RangeOf(seg.v, extent)}}) {
      if (o_range.Overlaps(range)) {
        return InvalidArgument(Field("o") + ": overlaps " + name + "." + tensor);
      }
      if (lse_range.Overlaps(range)) {
        return InvalidArgument(Field("lse") + ": overlaps " + name + "." + tensor);
      }
    }
    tk += seg.len;
  }
  if (shape.causal && tk < tq) {
    return InvalidArgument(Field("causal") + ": total keys " + std::to_string(tk) +
                           " < num_q_tokens " + std::to_string(tq) +
                           "; causal needs the queries' own keys at the end of the segments");
  }
  *total_keys = tk;
  return Status::Ok();
}

float EffectiveScale(const DecodeAttentionShape& shape) {
  return shape.scale.has_value() ? *shape.scale
                                 : 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
}

// The query rows of one block of query tokens, grouped per KV head: rows of KV head g are
// (token, j) for the block's tokens and j < G, row r = token_in_block * G + j. All per-row
// arrays are [g][row]; qs and acc are [g][row][d].
struct Block {
  int64_t t0 = 0;    // first query token
  int64_t rows = 0;  // rows per KV head = tokens * G
  float* qs;         // scaled queries
  float* acc;        // unnormalised outputs
  float* row_max;    // running max of the scores
  float* row_sum;    // running sum of exp(score - row_max)
  float* row_corr;   // scratch: per-tile correction factors
  int64_t* visible;  // scratch: per-row visible key counts of the current tile (causal)
  float* scores;     // scratch: (rows, kTileTokens)
};

struct Geometry {
  int64_t tq, h, hkv, g, d, tk;
  float scale;
  bool causal;
};

// Per-row visible key counts of keys [j0, j0 + n) (global offsets) into b.visible; null when
// not causal (every key visible).
const int64_t* VisibleCounts(const Geometry& geo, const Block& b, int64_t j0, int64_t n) {
  if (!geo.causal) return nullptr;
  // Row r (query token i = b.t0 + r / G) sees global keys j <= i + tk - tq.
  for (int64_t r = 0; r < b.rows; ++r) {
    const int64_t last = b.t0 + r / geo.g + geo.tk - geo.tq;
    b.visible[r] = std::clamp<int64_t>(last - j0 + 1, 0, n);
  }
  return b.visible;
}

// Whether a segment goes through the streaming kernel (decode_attention_stream.h) in one call.
bool UseStream(const Geometry& geo, const Block& b, const KvSegment& seg) {
  const bool gemm = b.rows >= kGemmMinRows && seg.token_stride <= INT32_MAX;
  return !gemm && b.rows <= internal::kStreamMaxRows && geo.d % 8 == 0;
}

// One key tile [t0, t0 + n) of `seg` (global key offset j0) for every KV head of the block.
void ProcessTile(const Geometry& geo, const Block& b, const KvSegment& seg, int64_t t0, int64_t n,
                 int64_t j0) {
  const int64_t rows = b.rows, d = geo.d;
  const int64_t* visible = VisibleCounts(geo, b, j0, n);
  const bool use_gemm = rows >= kGemmMinRows && seg.token_stride <= INT32_MAX;
  for (int64_t kv = 0; kv < geo.hkv; ++kv) {
    const float* k = seg.k + kv * seg.head_stride + t0 * seg.token_stride;
    const float* v = seg.v + kv * seg.head_stride + t0 * seg.token_stride;
    const float* qs = b.qs + kv * rows * d;
    float* acc = b.acc + kv * rows * d;
    float* row_max = b.row_max + kv * rows;
    float* row_sum = b.row_sum + kv * rows;
    if (use_gemm) {
      GemmUnchecked(Transpose::kNo, Transpose::kYes, rows, n, d, 1.0f, qs, d, k, seg.token_stride,
                    0.0f, b.scores, kTileTokens);
    } else {
      internal::DecodeScores(qs, rows, d, k, seg.token_stride, n, b.scores, kTileTokens);
    }
    internal::DecodeSoftmax(b.scores, rows, n, kTileTokens, visible, row_max, row_sum, b.row_corr);
    internal::DecodeRescale(acc, rows, d, b.row_corr);
    if (use_gemm) {
      GemmUnchecked(Transpose::kNo, Transpose::kNo, rows, d, n, 1.0f, b.scores, kTileTokens, v,
                    seg.token_stride, 1.0f, acc, d);
    } else {
      internal::DecodeAccumulate(b.scores, rows, kTileTokens, v, seg.token_stride, n, acc, d);
    }
  }
}

// Loads the block's scaled queries, runs every key tile, writes o and lse of its tokens.
void ProcessBlock(const Geometry& geo, const Block& b, const float* q,
                  std::span<const KvSegment> segments, float* o, float* lse) {
  const int64_t rows = b.rows, d = geo.d, gsz = geo.g;
  for (int64_t kv = 0; kv < geo.hkv; ++kv) {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t head = kv * gsz + r % gsz, token = b.t0 + r / gsz;
      const float* src = q + (token * geo.h + head) * d;
      float* dst = b.qs + (kv * rows + r) * d;
      for (int64_t x = 0; x < d; ++x) dst[x] = src[x] * geo.scale;
    }
  }
  std::fill_n(b.acc, geo.hkv * rows * d, 0.0f);
  std::fill_n(b.row_max, geo.hkv * rows, kNegInf);
  std::fill_n(b.row_sum, geo.hkv * rows, 0.0f);
  int64_t j0 = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    const KvSegment& seg = segments[i];
    if (seg.len > 0 && UseStream(geo, b, seg)) {
      // The next segment with keys, whose first rows the kernel prefetches at the end of this one.
      size_t next = i + 1;
      while (next < segments.size() && segments[next].len == 0) ++next;
      internal::DecodeStreamTile(b.qs, geo.hkv, rows, d, seg,
                                 next < segments.size() ? &segments[next] : nullptr,
                                 VisibleCounts(geo, b, j0, seg.len), b.row_max, b.row_sum, b.acc);
      j0 += seg.len;
      continue;
    }
    for (int64_t t0 = 0; t0 < seg.len; t0 += kTileTokens) {
      const int64_t n = std::min(kTileTokens, seg.len - t0);
      ProcessTile(geo, b, seg, t0, n, j0 + t0);
    }
    j0 += seg.len;
  }
  for (int64_t kv = 0; kv < geo.hkv; ++kv) {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t head = kv * gsz + r % gsz, token = b.t0 + r / gsz;
      const int64_t idx = kv * rows + r;
      float* dst = o + (token * geo.h + head) * d;
      const float sum = b.row_sum[idx];
      if (sum == 0.0f) {  // no visible keys: the merge identity
        std::fill_n(dst, d, 0.0f);
        lse[token * geo.h + head] = kNegInf;
        continue;
      }
      const float inv = 1.0f / sum;
      const float* src = b.acc + idx * d;
      for (int64_t x = 0; x < d; ++x) dst[x] = src[x] * inv;
      lse[token * geo.h + head] = b.row_max[idx] + std::log(sum);
    }
  }
}

}  // namespace

Status PartialAttention(const DecodeAttentionShape& shape, const float* q,
                        std::span<const KvSegment> segments, float* o, float* lse) {
  int64_t tk = 0;
  RETURN_IF_ERROR(Validate(shape, q, segments, o, lse, &tk));
  Geometry geo{shape.num_q_tokens,    shape.num_heads,
               shape.num_kv_heads,    shape.num_heads / shape.num_kv_heads,
               shape.head_dim,        tk,
               EffectiveScale(shape), shape.causal};
  const int64_t block_tokens = std::min(geo.tq, std::max<int64_t>(1, kMaxRowsPerHead / geo.g));
  const int64_t max_rows = block_tokens * geo.g;
  // One allocation per call: floats for qs, acc, the three row vectors and the score tile.
  const int64_t per_head = max_rows * (2 * geo.d + 2);
  std::vector<float> scratch(geo.hkv * per_head + max_rows * (kTileTokens + 1));
  std::vector<int64_t> visible(max_rows);
  for (int64_t t0 = 0; t0 < geo.tq; t0 += block_tokens) {
    const int64_t tokens = std::min(block_tokens, geo.tq - t0);
    const int64_t rows = tokens * geo.g;
    float* p = scratch.data();
    Block b;
    b.t0 = t0;
    b.rows = rows;
    b.qs = p;
    b.acc = p + geo.hkv * rows * geo.d;
    b.row_max = b.acc + geo.hkv * rows * geo.d;
    b.row_sum = b.row_max + geo.hkv * rows;
    b.row_corr = b.row_sum + geo.hkv * rows;
    b.scores = b.row_corr + rows;
    b.visible = visible.data();
    ProcessBlock(geo, b, q, segments, o, lse);
  }
  return Status::Ok();
}

Status PartialAttentionReference(const DecodeAttentionShape& shape, const float* q,
                                 std::span<const KvSegment> segments, float* o, float* lse) {
  int64_t tk = 0;
  RETURN_IF_ERROR(Validate(shape, q, segments, o, lse, &tk));
  const int64_t tq = shape.num_q_tokens, h = shape.num_heads, d = shape.head_dim;
  const int64_t group = h / shape.num_kv_heads;
  const double scale = EffectiveScale(shape);
  std::vector<double> scores(tk), out(d);
  std::vector<std::pair<const float*, const float*>> rows(tk);  // (k row, v row) of key j
  for (int64_t i = 0; i < tq; ++i) {
    for (int64_t head = 0; head < h; ++head) {
      const int64_t kv = head / group;
      const float* qr = q + (i * h + head) * d;
      const int64_t visible = shape.causal ? std::min(tk, i + tk - tq + 1) : tk;
      int64_t j = 0;
      for (const KvSegment& seg : segments) {
        for (int64_t t = 0; t < seg.len && j < visible; ++t, ++j) {
          const int64_t off = t * seg.token_stride + kv * seg.head_stride;
          rows[j] = {seg.k + off, seg.v + off};
        }
      }
      float* orow = o + (i * h + head) * d;
      if (visible == 0) {
        std::fill_n(orow, d, 0.0f);
        lse[i * h + head] = kNegInf;
        continue;
      }
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t jj = 0; jj < visible; ++jj) {
        double dot = 0.0;
        for (int64_t x = 0; x < d; ++x) dot += static_cast<double>(qr[x]) * rows[jj].first[x];
        scores[jj] = scale * dot;
        mx = std::max(mx, scores[jj]);
      }
      double sum = 0.0;
      std::fill(out.begin(), out.end(), 0.0);
      for (int64_t jj = 0; jj < visible; ++jj) {
        const double p = std::exp(scores[jj] - mx);
        sum += p;
        for (int64_t x = 0; x < d; ++x) out[x] += p * rows[jj].second[x];
      }
      for (int64_t x = 0; x < d; ++x) orow[x] = static_cast<float>(out[x] / sum);
      lse[i * h + head] = static_cast<float>(mx + std::log(sum));
    }
  }
  return Status::Ok();
}

}  // namespace tessera::kernels
