// The Megatron TP-operator table: its dimensions for a gated, grouped-query layer, the two
// wgrads that can reuse their dgrad's gather, and SmallGpt calling exactly the table's
// operators (names, kinds, dimensions) in the table's order on every layer.
#include "models/tp_layer_ops.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "models/small_gpt.h"

namespace tessera::models {
namespace {

struct Row {
  const char* name;
  TpOpKind kind;
  int64_t n, k;
  bool reuses;
};

void ExpectTable(const std::vector<TpLayerOp>& ops, int64_t m, const std::vector<Row>& want) {
  ASSERT_EQ(ops.size(), want.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i].name, want[i].name) << i;
    EXPECT_EQ(ops[i].kind, want[i].kind) << ops[i].name;
    EXPECT_EQ(ops[i].dims.m, m) << ops[i].name;
    EXPECT_EQ(ops[i].dims.n, want[i].n) << ops[i].name;
    EXPECT_EQ(ops[i].dims.k, want[i].k) << ops[i].name;
    EXPECT_EQ(ops[i].reuses_dgrad_gather, want[i].reuses) << ops[i].name;
    EXPECT_EQ(ops[i].needs_collective(), !want[i].reuses) << ops[i].name;
  }
}

using K = TpOpKind;

TEST(TpLayerOps, GatedGroupedQueryLayer) {
  // h 4096, f 14336, 32 heads, 8 KV heads (head_dim 128), gated, TP 8, 2048 tokens.
  const auto ops = MegatronTpLayerOps({4096, 14336, 32, 8, true, 8, 2048});
  const int64_t qkv = (4096 + 2 * 8 * 128) / 8, hl = 512, fl = 1792, gl = 3584;
  ExpectTable(ops, 2048,
              {{"qkv", K::kAllGatherGemm, qkv, 4096, false},
               {"proj", K::kGemmReduceScatter, 4096, hl, false},
               {"fc1", K::kAllGatherGemm, gl, 4096, false},
               {"fc2", K::kGemmReduceScatter, 4096, fl, false},
               {"fc2-dgrad", K::kAllGatherGemm, fl, 4096, false},
               {"fc2-wgrad", K::kAllGatherWgrad, fl, 4096, true},
               {"fc1-dgrad", K::kGemmReduceScatter, 4096, gl, false},
               {"fc1-wgrad", K::kAllGatherWgrad, gl, 4096, false},
               {"proj-dgrad", K::kAllGatherGemm, hl, 4096, false},
               {"proj-wgrad", K::kAllGatherWgrad, hl, 4096, true},
               {"qkv-dgrad", K::kGemmReduceScatter, 4096, qkv, false},
               {"qkv-wgrad", K::kAllGatherWgrad, qkv, 4096, false}});
  // The GEMM-only form of a reused gather: dW = X^T dY, N and K swapped.
  const TpGemmDims d = GemmOnlyDims(ops[9]);
  EXPECT_EQ(d.m, 2048);
  EXPECT_EQ(d.n, 4096);
  EXPECT_EQ(d.k, hl);
}

// A TensorParallelOps that records every call and writes zeros (rank 0 of `tp`).
class RecordingOps final : public TensorParallelOps {
 public:
  explicit RecordingOps(int tp) : tp_(tp) {}
  int tp() const override { return tp_; }
  int rank() const override { return 0; }
  core::Status AllGatherGemm(const std::string& name, const TpGemmDims& d, const float*,
                             const float*, float* y) override {
    return Record(name, K::kAllGatherGemm, d, y, d.m * d.n);
  }
  core::Status GemmReduceScatter(const std::string& name, const TpGemmDims& d, const float*,
                                 const float*, float* y) override {
    return Record(name, K::kGemmReduceScatter, d, y, d.m / tp_ * d.n);
  }
  core::Status AllGatherWgrad(const std::string& name, const TpGemmDims& d, const float*,
                              const float*, float* dw) override {
    return Record(name, K::kAllGatherWgrad, d, dw, d.k * d.n);
  }
  core::Status AllReduceSum(std::span<float>) override { return core::Status::Ok(); }
  core::Status AllReduceSum(std::span<double>) override { return core::Status::Ok(); }

  std::vector<TpLayerOp> calls;

 private:
  core::Status Record(const std::string& name, K kind, const TpGemmDims& d, float* out,
                      int64_t count) {
    calls.push_back(TpLayerOp{name, kind, d, false});
    std::fill(out, out + count, 0.0f);
    return core::Status::Ok();
  }
  int tp_;
};

TEST(TpLayerOps, SmallGptCallsTheTableOnEveryLayer) {
  SmallGptConfig c;
  c.vocab = 16;
  c.hidden = 16;
  c.num_heads = 4;
  c.num_layers = 2;
  c.ffn_hidden = 32;
  c.max_seq = 8;
  const int tp = 2;
  auto model = SmallGpt::Create(c, tp, 0);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto batch = MakeSyntheticGptBatch(16, 2, 8, 1, 0);
  ASSERT_TRUE(batch.ok());
  RecordingOps ops(tp);
  ASSERT_TRUE(model->ForwardBackward(*batch, ops).ok());
  const std::vector<TpLayerOp> layer = model->LayerTpCalls(batch->num_tokens());
  ASSERT_EQ(ops.calls.size(), layer.size() * c.num_layers);
  // The forward runs layers 0..L-1, the backward L-1..0: each half repeats the table's half.
  const size_t forward = 4;
  for (size_t i = 0; i < ops.calls.size(); ++i) {
    const size_t half = i < forward * c.num_layers ? 0 : 1;
    const size_t j =
        half == 0 ? i % forward : forward + (i - forward * c.num_layers) % (layer.size() - forward);
    EXPECT_EQ(ops.calls[i].name, layer[j].name) << i;
    EXPECT_EQ(ops.calls[i].kind, layer[j].kind) << i;
    EXPECT_EQ(ops.calls[i].dims.m, layer[j].dims.m) << i;
    EXPECT_EQ(ops.calls[i].dims.n, layer[j].dims.n) << i;
    EXPECT_EQ(ops.calls[i].dims.k, layer[j].dims.k) << i;
  }
  // SmallGpt's layer: as many KV heads as heads, an ungated MLP: qkv N = 3h/t.
  EXPECT_EQ(layer[0].dims.n, 3 * c.hidden / tp);
  EXPECT_EQ(layer[2].dims.n, c.ffn_hidden / tp);
}

}  // namespace
}  // namespace tessera::models
