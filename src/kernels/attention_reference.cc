#include "kernels/attention_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace tessera::kernels {
namespace {

using core::InvalidArgument;
using core::Status;

constexpr double kNegInfD = -std::numeric_limits<double>::infinity();

// Scores s[j] = scale * <q_row, k[j]> for the keys of one sequence and head.
template <typename T>
void Scores(const T* q_row, const T* k_seq, int64_t lk, int64_t hd, int64_t d, double scale,
            std::vector<double>& s) {
  s.assign(lk, 0.0);
  for (int64_t j = 0; j < lk; ++j) {
    const T* k_row = k_seq + j * hd;
    double dot = 0.0;
    for (int64_t x = 0; x < d; ++x) dot += static_cast<double>(q_row[x]) * k_row[x];
    s[j] = scale * dot;
  }
}

// Number of keys that query row i (0-based within its sequence) sees: all lk, or with the causal
// mask keys 0..i + (lk - lq).
int64_t VisibleKeys(const AttentionShape& shape, int64_t i, int64_t lq, int64_t lk) {
  return shape.causal ? std::min(lk, i + (lk - lq) + 1) : lk;
}

Status ValidatePointers(const AttentionShape& shape, std::initializer_list<const void*> q_side,
                        std::initializer_list<const void*> k_side, const void* lse) {
  const int64_t q_elems = shape.total_q() * shape.num_heads * shape.head_dim;
  const int64_t k_elems = shape.total_k() * shape.num_heads * shape.head_dim;
  for (const void* p : q_side) RETURN_IF_ERROR(CheckTensorPointer("q-side tensor", p, q_elems));
  for (const void* p : k_side) RETURN_IF_ERROR(CheckTensorPointer("k-side tensor", p, k_elems));
  return CheckTensorPointer("lse", lse, shape.total_q() * shape.num_heads);
}

}  // namespace

template <typename T>
Status AttentionForwardReference(const AttentionShape& shape, const T* q, const T* k, const T* v,
                                 T* o, T* lse) {
  RETURN_IF_ERROR(ValidateAttentionShape(shape));
  RETURN_IF_ERROR(ValidatePointers(shape, {q, o}, {k, v}, lse));
  const int64_t h_count = shape.num_heads, d = shape.head_dim, hd = h_count * d;
  const double scale = shape.EffectiveScale();
  std::vector<double> s, acc(d);
  for (int64_t seq = 0; seq < shape.num_seqs(); ++seq) {
    const int64_t q0 = shape.cu_seqlens_q[seq], k0 = shape.cu_seqlens_k[seq];
    const int64_t lq = shape.seqlen_q(seq), lk = shape.seqlen_k(seq);
    for (int64_t h = 0; h < h_count; ++h) {
      for (int64_t t = q0; t < q0 + lq; ++t) {
        const int64_t nk = VisibleKeys(shape, t - q0, lq, lk);
        Scores(q + t * hd + h * d, k + k0 * hd + h * d, nk, hd, d, scale, s);
        double mx = kNegInfD;
        for (double x : s) mx = std::max(mx, x);
        double sum = 0.0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < nk; ++j) {
          const double p = std::exp(s[j] - mx);
          sum += p;
          const T* v_row = v + (k0 + j) * hd + h * d;
          for (int64_t x = 0; x < d; ++x) acc[x] += p * v_row[x];
        }
        T* o_row = o + t * hd + h * d;
        for (int64_t x = 0; x < d; ++x) o_row[x] = nk > 0 ? static_cast<T>(acc[x] / sum) : T(0);
        lse[t * h_count + h] = static_cast<T>(nk > 0 ? mx + std::log(sum) : kNegInfD);
      }
    }
  }
  return Status::Ok();
}

template <typename T>
Status AttentionBackwardReference(const AttentionShape& shape, const T* q, const T* k, const T* v,
                                  const T* o, const T* d_o, const T* lse, T* dq, T* dk, T* dv,
                                  bool accumulate_dq, bool accumulate_dkv) {
  RETURN_IF_ERROR(ValidateAttentionShape(shape));
  RETURN_IF_ERROR(ValidatePointers(shape, {q, o, d_o, dq}, {k, v, dk, dv}, lse));
  const int64_t h_count = shape.num_heads, d = shape.head_dim, hd = h_count * d;
  const double scale = shape.EffectiveScale();
  std::vector<double> dq_acc(shape.total_q() * hd, 0.0), dk_acc(shape.total_k() * hd, 0.0);
  std::vector<double> dv_acc(shape.total_k() * hd, 0.0), s;
  for (int64_t seq = 0; seq < shape.num_seqs(); ++seq) {
    const int64_t q0 = shape.cu_seqlens_q[seq], k0 = shape.cu_seqlens_k[seq];
    const int64_t lq = shape.seqlen_q(seq), lk = shape.seqlen_k(seq);
    for (int64_t h = 0; h < h_count; ++h) {
      for (int64_t t = q0; t < q0 + lq; ++t) {
        const T* q_row = q + t * hd + h * d;
        const T* o_row = o + t * hd + h * d;
        const T* do_row = d_o + t * hd + h * d;
        const double row_lse = lse[t * h_count + h];
        double delta = 0.0;
        for (int64_t x = 0; x < d; ++x) delta += static_cast<double>(do_row[x]) * o_row[x];
        const int64_t nk = VisibleKeys(shape, t - q0, lq, lk);  // masked keys get P = 0
        Scores(q_row, k + k0 * hd + h * d, nk, hd, d, scale, s);
        for (int64_t j = 0; j < nk; ++j) {
          const int64_t kv = (k0 + j) * hd + h * d;
          const double p = row_lse == kNegInfD ? 0.0 : std::exp(s[j] - row_lse);
          double dp = 0.0;
          for (int64_t x = 0; x < d; ++x) {
            dv_acc[kv + x] += p * do_row[x];
            dp += static_cast<double>(do_row[x]) * v[kv + x];
          }
          const double ds = p * (dp - delta) * scale;
          for (int64_t x = 0; x < d; ++x) {
            dq_acc[t * hd + h * d + x] += ds * k[kv + x];
            dk_acc[kv + x] += ds * q_row[x];
          }
        }
      }
    }
  }
  for (size_t i = 0; i < dq_acc.size(); ++i) {
    dq[i] = static_cast<T>(accumulate_dq ? dq[i] + dq_acc[i] : dq_acc[i]);
  }
  for (size_t i = 0; i < dk_acc.size(); ++i) {
    dk[i] = static_cast<T>(accumulate_dkv ? dk[i] + dk_acc[i] : dk_acc[i]);
    dv[i] = static_cast<T>(accumulate_dkv ? dv[i] + dv_acc[i] : dv_acc[i]);
  }
  return Status::Ok();
}

template <typename T>
Status MergeAttentionReference(int64_t num_tokens, int64_t num_heads, int64_t head_dim,
                               const T* o_a, const T* lse_a, const T* o_b, const T* lse_b, T* o,
                               T* lse) {
  if (num_tokens < 0 || num_heads < 1 || head_dim < 1) {
    return InvalidArgument("merge: got num_tokens " + std::to_string(num_tokens) + ", num_heads " +
                           std::to_string(num_heads) + ", head_dim " + std::to_string(head_dim) +
                           "; must be >= 0, >= 1, >= 1");
  }
  const int64_t rows = num_tokens * num_heads;
  for (const void* p : {static_cast<const void*>(o_a), static_cast<const void*>(lse_a),
                        static_cast<const void*>(o_b), static_cast<const void*>(lse_b),
                        static_cast<const void*>(o), static_cast<const void*>(lse)}) {
    RETURN_IF_ERROR(CheckTensorPointer("merge tensor", p, rows));
  }
  for (int64_t r = 0; r < rows; ++r) {
    const double la = lse_a[r], lb = lse_b[r];
    const double mx = std::max(la, lb);
    double wa = 0.0, wb = 0.0, out_lse = kNegInfD;
    if (mx != kNegInfD) {
      const double sum = std::exp(la - mx) + std::exp(lb - mx);
      out_lse = mx + std::log(sum);
      wa = std::exp(la - out_lse);
      wb = std::exp(lb - out_lse);
    }
    for (int64_t x = 0; x < head_dim; ++x) {
      const int64_t i = r * head_dim + x;
      o[i] = static_cast<T>(wa * o_a[i] + wb * o_b[i]);
    }
    lse[r] = static_cast<T>(out_lse);
  }
  return Status::Ok();
}

#define TESSERA_INSTANTIATE_REFERENCE(T)                                                        \
  template Status AttentionForwardReference<T>(const AttentionShape&, const T*, const T*,       \
                                               const T*, T*, T*);                               \
  template Status AttentionBackwardReference<T>(const AttentionShape&, const T*, const T*,      \
                                                const T*, const T*, const T*, const T*, T*, T*, \
                                                T*, bool, bool);                                \
  template Status MergeAttentionReference<T>(int64_t, int64_t, int64_t, const T*, const T*,     \
                                             const T*, const T*, T*, T*);
TESSERA_INSTANTIATE_REFERENCE(float)
TESSERA_INSTANTIATE_REFERENCE(double)
#undef TESSERA_INSTANTIATE_REFERENCE

}  // namespace tessera::kernels
