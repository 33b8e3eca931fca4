#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "core/infinity.h"
#include "kernels/gemm.h"
#include "kernels/softmax_tiles.h"

namespace tessera::kernels {
namespace {

using core::InvalidArgument;
using core::Status;
using internal::Dot;
using internal::ExpMinusRowTile;
using internal::OnlineSoftmaxTile;
using internal::ScaleRowsTile;
using internal::SoftmaxGradTile;

using core::kNegInf;
constexpr int64_t kMaxBlock = 1 << 14;

// Score of a causally masked entry: finite, as OnlineSoftmaxTile requires, and the lowest
// float. exp(kMaskedScore - m) is exactly 0 for any running max m above lowest() + 87 (the
// difference is below -87, or -inf when m is huge, and FastExp returns 0 for both), and m is a
// real score: key tile 0 runs first for every row and key 0 is always visible (causal needs
// lq <= lk). So a masked key gets zero weight, also in a later tile where its row sees no key.
constexpr float kMaskedScore = std::numeric_limits<float>::lowest();

Status ValidateTiling(const AttentionTiling& tiling) {
  for (auto [name, value] : {std::pair{"block_q", tiling.block_q}, {"block_k", tiling.block_k}}) {
    if (value < 1 || value > kMaxBlock) {
      return InvalidArgument(std::string("attention.tiling.") + name + ": got " +
                             std::to_string(value) + ", must be in [1, " +
                             std::to_string(kMaxBlock) + "]");
    }
  }
  return Status::Ok();
}

// Views of one (sequence, head): base pointers of its first token and the token stride.
struct HeadView {
  int64_t lq, lk;  // tokens
  int64_t ld;      // H * D floats between consecutive tokens
  int64_t q_off;   // element offset of [first query token, h, 0] in q-side tensors
  int64_t k_off;   // element offset of [first key token, h, 0] in k-side tensors
};

// Tile extents actually used by a call: the tiling clipped to the longest sequence, so a call
// whose sequences are all short does not allocate (and fault in) full-size tiles.
struct CallTiles {
  int64_t bq, bk;
};

CallTiles ClipTiles(const AttentionShape& shape, const AttentionTiling& tiling) {
  int64_t max_lq = 0, max_lk = 0;
  for (int64_t seq = 0; seq < shape.num_seqs(); ++seq) {
    max_lq = std::max(max_lq, shape.seqlen_q(seq));
    max_lk = std::max(max_lk, shape.seqlen_k(seq));
  }
  return {std::max<int64_t>(1, std::min(tiling.block_q, max_lq)),
          std::max<int64_t>(1, std::min(tiling.block_k, max_lk))};
}

// Uninitialised scratch: every element is written before it is read (GEMMs with beta = 0,
// explicit fills), so the zero-fill of a std::vector would be wasted work.
std::unique_ptr<float[]> Scratch(int64_t n) { return std::make_unique_for_overwrite<float[]>(n); }

HeadView MakeView(const AttentionShape& shape, int64_t seq, int64_t h) {
  const int64_t ld = shape.num_heads * shape.head_dim;
  return {shape.seqlen_q(seq), shape.seqlen_k(seq), ld,
          shape.cu_seqlens_q[seq] * ld + h * shape.head_dim,
          shape.cu_seqlens_k[seq] * ld + h * shape.head_dim};
}

// End (exclusive) of the keys that query rows [i0, i0 + rows) see: all lk keys, or with the
// causal mask those up to the last row's diagonal, j <= i0 + rows - 1 + (lk - lq).
int64_t VisibleKeyEnd(bool causal, const HeadView& hv, int64_t i0, int64_t rows) {
  return causal ? std::min(hv.lk, i0 + rows + (hv.lk - hv.lq)) : hv.lk;
}

// Causal mask of the (rows, cols) score tile of query rows i0.. and keys j0.. (leading
// dimension ls): entries with key j > row i + off get kMaskedScore. Each row sees one more key
// than the row above, so the scan stops at the first row that sees the whole tile.
void MaskAboveDiagonal(float* s, int64_t rows, int64_t cols, int64_t ls, int64_t i0, int64_t j0,
                       int64_t off) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t first_masked = std::max<int64_t>(0, i0 + r + off + 1 - j0);
    if (first_masked >= cols) break;
    std::fill(s + r * ls + first_masked, s + r * ls + cols, kMaskedScore);
  }
}

}  // namespace

Status AttentionForward(const AttentionShape& shape, const float* q, const float* k, const float* v,
                        float* o, float* lse, const AttentionTiling& tiling) {
  RETURN_IF_ERROR(ValidateAttentionShape(shape));
  RETURN_IF_ERROR(ValidateTiling(tiling));
  const int64_t h_count = shape.num_heads, d = shape.head_dim;
  const int64_t q_elems = shape.total_q() * h_count * d, k_elems = shape.total_k() * h_count * d;
  RETURN_IF_ERROR(CheckTensorPointer("q", q, q_elems));
  RETURN_IF_ERROR(CheckTensorPointer("k", k, k_elems));
  RETURN_IF_ERROR(CheckTensorPointer("v", v, k_elems));
  RETURN_IF_ERROR(CheckTensorPointer("o", o, q_elems));
  RETURN_IF_ERROR(CheckTensorPointer("lse", lse, shape.total_q() * h_count));

  const auto [bq, bk] = ClipTiles(shape, tiling);
  const float scale = shape.EffectiveScale();
  const auto s_tile = Scratch(bq * bk), o_acc = Scratch(bq * d), row_max = Scratch(bq),
             row_sum = Scratch(bq), row_corr = Scratch(bq);

  for (int64_t seq = 0; seq < shape.num_seqs(); ++seq) {
    for (int64_t h = 0; h < h_count; ++h) {
      const HeadView hv = MakeView(shape, seq, h);
      const int64_t ld = hv.ld;
      const float* qh = q + hv.q_off;
      const float* kh = k + hv.k_off;
      const float* vh = v + hv.k_off;
      float* oh = o + hv.q_off;
      float* lse_h = lse + shape.cu_seqlens_q[seq] * h_count + h;  // stride h_count
      // Score tiles of this sequence are packed with leading dimension min(bk, lk), so a short
      // sequence in a call with long ones touches a compact tile.
      const int64_t ls = std::max<int64_t>(1, std::min(bk, hv.lk));
      for (int64_t i0 = 0; i0 < hv.lq; i0 += bq) {
        const int64_t rows = std::min(bq, hv.lq - i0);
        std::fill_n(row_max.get(), rows, kNegInf);
        std::fill_n(row_sum.get(), rows, 0.0f);
        // Causal: key tiles from j_end on are wholly masked for these rows and are skipped; the
        // last tile is clipped at j_end. Key tile 0 always runs (j_end >= 1 when lk >= 1).
        const int64_t j_end = VisibleKeyEnd(shape.causal, hv, i0, rows);
        for (int64_t j0 = 0; j0 < j_end; j0 += bk) {
          const int64_t cols = std::min(bk, j_end - j0);
          // S = scale * Q_i K_j^T : (rows, cols).
          GemmUnchecked(Transpose::kNo, Transpose::kYes, rows, cols, d, scale, qh + i0 * ld, ld,
                        kh + j0 * ld, ld, 0.0f, s_tile.get(), ls);
          if (shape.causal) {
            MaskAboveDiagonal(s_tile.get(), rows, cols, ls, i0, j0, hv.lk - hv.lq);
          }
          OnlineSoftmaxTile(s_tile.get(), rows, cols, ls, row_max.get(), row_sum.get(),
                            row_corr.get());
          if (j0 > 0) ScaleRowsTile(o_acc.get(), rows, d, d, row_corr.get());
          // O_acc (+)= P V_j : (rows, d).
          GemmUnchecked(Transpose::kNo, Transpose::kNo, rows, d, cols, 1.0f, s_tile.get(), ls,
                        vh + j0 * ld, ld, j0 == 0 ? 0.0f : 1.0f, o_acc.get(), d);
        }
        for (int64_t r = 0; r < rows; ++r) {
          float* o_row = oh + (i0 + r) * ld;
          if (hv.lk == 0) {
            std::fill_n(o_row, d, 0.0f);
            lse_h[(i0 + r) * h_count] = kNegInf;
            continue;
          }
          const float inv = 1.0f / row_sum[r];
          const float* acc_row = o_acc.get() + r * d;
          for (int64_t x = 0; x < d; ++x) o_row[x] = acc_row[x] * inv;
          lse_h[(i0 + r) * h_count] = row_max[r] + std::log(row_sum[r]);
        }
      }
    }
  }
  return Status::Ok();
}

Status AttentionBackward(const AttentionShape& shape, const float* q, const float* k,
                         const float* v, const float* o, const float* d_o, const float* lse,
                         float* dq, float* dk, float* dv, const AttentionBackwardOptions& options) {
  RETURN_IF_ERROR(ValidateAttentionShape(shape));
  RETURN_IF_ERROR(ValidateTiling(options.tiling));
  const int64_t h_count = shape.num_heads, d = shape.head_dim;
  const int64_t q_elems = shape.total_q() * h_count * d, k_elems = shape.total_k() * h_count * d;
  RETURN_IF_ERROR(CheckTensorPointer("q", q, q_elems));
  RETURN_IF_ERROR(CheckTensorPointer("k", k, k_elems));
  RETURN_IF_ERROR(CheckTensorPointer("v", v, k_elems));
  RETURN_IF_ERROR(CheckTensorPointer("o", o, q_elems));
  RETURN_IF_ERROR(CheckTensorPointer("d_o", d_o, q_elems));
  RETURN_IF_ERROR(CheckTensorPointer("lse", lse, shape.total_q() * h_count));
  RETURN_IF_ERROR(CheckTensorPointer("dq", dq, q_elems));
  RETURN_IF_ERROR(CheckTensorPointer("dk", dk, k_elems));
  RETURN_IF_ERROR(CheckTensorPointer("dv", dv, k_elems));

  const auto [bq, bk] = ClipTiles(shape, options.tiling);
  const float scale = shape.EffectiveScale();
  int64_t max_lq = 1;
  for (int64_t seq = 0; seq < shape.num_seqs(); ++seq) {
    max_lq = std::max(max_lq, shape.seqlen_q(seq));
  }
  const auto p_tile = Scratch(bq * bk), dp_tile = Scratch(bq * bk), lse_h = Scratch(max_lq),
             delta_h = Scratch(max_lq);
  const int64_t row = h_count * d;

  for (int64_t seq = 0; seq < shape.num_seqs(); ++seq) {
    // Written (not accumulated) gradients are zeroed per sequence, just before its tiles
    // accumulate into them, so they are still in cache (the sequences' rows cover all rows).
    if (!options.accumulate_dq) {
      std::fill_n(dq + shape.cu_seqlens_q[seq] * row, shape.seqlen_q(seq) * row, 0.0f);
    }
    if (!options.accumulate_dkv) {
      std::fill_n(dk + shape.cu_seqlens_k[seq] * row, shape.seqlen_k(seq) * row, 0.0f);
      std::fill_n(dv + shape.cu_seqlens_k[seq] * row, shape.seqlen_k(seq) * row, 0.0f);
    }
    for (int64_t h = 0; h < h_count; ++h) {
      const HeadView hv = MakeView(shape, seq, h);
      if (hv.lq == 0 || hv.lk == 0) continue;  // no score entries: gradients stay as set above
      const int64_t ld = hv.ld;
      const float* qh = q + hv.q_off;
      const float* kh = k + hv.k_off;
      const float* vh = v + hv.k_off;
      const float* doh = d_o + hv.q_off;
      float* dqh = dq + hv.q_off;
      float* dkh = dk + hv.k_off;
      float* dvh = dv + hv.k_off;
      // Contiguous per-row LSE and Delta = rowsum(dO * O) for this (sequence, head).
      for (int64_t i = 0; i < hv.lq; ++i) {
        lse_h[i] = lse[(shape.cu_seqlens_q[seq] + i) * h_count + h];
        delta_h[i] = Dot(doh + i * ld, o + hv.q_off + i * ld, d);
      }
      const int64_t ls = std::min(bk, hv.lk);  // tile leading dimension, as in the forward
      const int64_t off = hv.lk - hv.lq;       // causal diagonal: row i sees keys j <= i + off
      for (int64_t j0 = 0; j0 < hv.lk; j0 += bk) {
        const float* k_j = kh + j0 * ld;
        const float* v_j = vh + j0 * ld;
        // Causal: query tiles before the one holding row j0 - off (the first row that sees key
        // j0) see none of this key tile and are skipped.
        const int64_t i_begin = shape.causal ? std::max<int64_t>(0, j0 - off) / bq * bq : 0;
        for (int64_t i0 = i_begin; i0 < hv.lq; i0 += bq) {
          const int64_t rows = std::min(bq, hv.lq - i0);
          // Keys of this tile that the rows see (causal: clipped at the last row's diagonal).
          const int64_t cols = std::min(bk, VisibleKeyEnd(shape.causal, hv, i0, rows) - j0);
          const float* q_i = qh + i0 * ld;
          const float* do_i = doh + i0 * ld;
          // P = exp(scale * Q_i K_j^T - lse) : (rows, cols), 0 where causally masked.
          GemmUnchecked(Transpose::kNo, Transpose::kYes, rows, cols, d, scale, q_i, ld, k_j, ld,
                        0.0f, p_tile.get(), ls);
          if (shape.causal) MaskAboveDiagonal(p_tile.get(), rows, cols, ls, i0, j0, off);
          ExpMinusRowTile(p_tile.get(), rows, cols, ls, lse_h.get() + i0);
          // dV_j += P^T dO_i : (cols, d).
          GemmUnchecked(Transpose::kYes, Transpose::kNo, cols, d, rows, 1.0f, p_tile.get(), ls,
                        do_i, ld, 1.0f, dvh + j0 * ld, ld);
          // dP = dO_i V_j^T, then dS = P * (dP - Delta) in place : (rows, cols).
          GemmUnchecked(Transpose::kNo, Transpose::kYes, rows, cols, d, 1.0f, do_i, ld, v_j, ld,
                        0.0f, dp_tile.get(), ls);
          SoftmaxGradTile(p_tile.get(), dp_tile.get(), rows, cols, ls, delta_h.get() + i0);
          // dQ_i += scale * dS K_j : (rows, d);  dK_j += scale * dS^T Q_i : (cols, d).
          GemmUnchecked(Transpose::kNo, Transpose::kNo, rows, d, cols, scale, dp_tile.get(), ls,
                        k_j, ld, 1.0f, dqh + i0 * ld, ld);
          GemmUnchecked(Transpose::kYes, Transpose::kNo, cols, d, rows, scale, dp_tile.get(), ls,
                        q_i, ld, 1.0f, dkh + j0 * ld, ld);
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace tessera::kernels
