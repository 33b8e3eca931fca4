#include "models/tp_layer_ops.h"

namespace tessera::models {

std::vector<TpLayerOp> MegatronTpLayerOps(const TpLayerShape& s) {
  const int64_t m = s.tokens, t = s.tp, h = s.hidden;
  const int64_t head_dim = s.heads > 0 ? h / s.heads : 0;
  const int64_t qkv = (h + 2 * s.kv_heads * head_dim) / t;  // q, k and v columns of a rank
  const int64_t hl = h / t, fl = s.ffn / t;
  const int64_t gl = (s.gated_mlp ? 2 : 1) * s.ffn / t;  // fc1's output columns of a rank
  using K = TpOpKind;
  auto op = [&](const char* name, K kind, int64_t n, int64_t k, bool reuses = false) {
    return TpLayerOp{name, kind, TpGemmDims{m, n, k}, reuses};
  };
  return {
      op("qkv", K::kAllGatherGemm, qkv, h),
      op("proj", K::kGemmReduceScatter, h, hl),
      op("fc1", K::kAllGatherGemm, gl, h),
      op("fc2", K::kGemmReduceScatter, h, fl),
      op("fc2-dgrad", K::kAllGatherGemm, fl, h),
      op("fc2-wgrad", K::kAllGatherWgrad, fl, h, /*reuses=*/true),
      op("fc1-dgrad", K::kGemmReduceScatter, h, gl),
      op("fc1-wgrad", K::kAllGatherWgrad, gl, h),
      op("proj-dgrad", K::kAllGatherGemm, hl, h),
      op("proj-wgrad", K::kAllGatherWgrad, hl, h, /*reuses=*/true),
      op("qkv-dgrad", K::kGemmReduceScatter, h, qkv),
      op("qkv-wgrad", K::kAllGatherWgrad, qkv, h),
  };
}

TpGemmDims GemmOnlyDims(const TpLayerOp& op) { return TpGemmDims{op.dims.m, op.dims.k, op.dims.n}; }

}  // namespace tessera::models
