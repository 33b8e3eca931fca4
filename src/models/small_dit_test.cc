#include "models/small_dit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/rng.h"
#include "models/flow_matching.h"
#include "models/models_test_util.h"

namespace tessera::models {
namespace {

using testing::MaxRelErr;
using testing::RandomNormal;

SmallDitConfig TinyConfig(int64_t layers = 2) {
  SmallDitConfig c;
  c.in_channels = 4;
  c.hidden = 16;
  c.num_heads = 2;
  c.num_layers = layers;
  c.ffn_hidden = 32;
  c.timestep_freq_dim = 8;
  c.modulation_init_std = 0.3f;  // large enough that every adaLN path matters in the checks
  c.init_seed = 5;
  return c;
}

struct Inputs {
  std::vector<int64_t> cu;
  std::vector<float> x, t;
  DitBatch View() const { return {x, cu, t}; }
};

Inputs RandomInputs(const SmallDitConfig& c, std::vector<int64_t> lengths, uint64_t seed) {
  core::Rng rng(seed);
  Inputs in;
  in.cu = {0};
  for (int64_t l : lengths) in.cu.push_back(in.cu.back() + l);
  in.x = RandomNormal(rng, in.cu.back() * c.in_channels);
  for (size_t i = 0; i < lengths.size(); ++i) in.t.push_back(static_cast<float>(rng.Uniform()));
  return in;
}

TEST(SmallDitTest, BadConfigsReturnInvalidArgument) {
  EXPECT_TRUE(ValidateSmallDitConfig(SmallDitConfig{}).ok());
  auto expect_bad = [](SmallDitConfig c, const char* field) {
    auto m = SmallDit::Create(c);
    ASSERT_FALSE(m.ok()) << field;
    EXPECT_EQ(m.status().code(), core::StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find(field), std::string::npos) << m.status().message();
  };
  SmallDitConfig c = TinyConfig();
  c.num_heads = 3;  // 16 % 3 != 0
  expect_bad(c, "num_heads");
  c = TinyConfig();
  c.hidden = 0;
  expect_bad(c, "hidden");
  c = TinyConfig();
  c.num_layers = 0;
  expect_bad(c, "num_layers");
  c = TinyConfig();
  c.in_channels = 0;
  expect_bad(c, "in_channels");
  c = TinyConfig();
  c.ffn_hidden = -1;
  expect_bad(c, "ffn_hidden");
  c = TinyConfig();
  c.timestep_freq_dim = 7;
  expect_bad(c, "timestep_freq_dim");
  c = TinyConfig();
  c.layer_norm_eps = 0.0f;
  expect_bad(c, "layer_norm_eps");
}

TEST(SmallDitTest, BadBatchesReturnInvalidArgument) {
  auto m = SmallDit::Create(TinyConfig());
  ASSERT_TRUE(m.ok());
  LocalAttentionBackend backend;
  SmallDitActivations acts;
  Inputs in = RandomInputs(m->config(), {3, 2}, 1);
  ASSERT_TRUE(m->Forward(in.View(), backend, &acts).ok());
  Inputs bad = in;
  bad.t.pop_back();
  EXPECT_EQ(m->Forward(bad.View(), backend, &acts).code(), core::StatusCode::kInvalidArgument);
  bad = in;
  bad.x.pop_back();
  EXPECT_EQ(m->Forward(bad.View(), backend, &acts).code(), core::StatusCode::kInvalidArgument);
  bad = in;
  bad.cu = {0, 3, 3};
  EXPECT_EQ(m->Forward(bad.View(), backend, &acts).code(), core::StatusCode::kInvalidArgument);
  bad.cu = {0};
  EXPECT_EQ(m->Forward(bad.View(), backend, &acts).code(), core::StatusCode::kInvalidArgument);
  std::vector<float> short_grad(3);
  EXPECT_EQ(m->Backward(acts, short_grad, backend).code(), core::StatusCode::kInvalidArgument);
}

TEST(SmallDitTest, ParameterLayoutIsContiguousAndSeeded) {
  const SmallDitConfig c = TinyConfig();
  auto m = SmallDit::Create(c);
  ASSERT_TRUE(m.ok());
  const int64_t hd = c.hidden, f = c.ffn_hidden, cin = c.in_channels;
  const int64_t per_block =
      hd * 6 * hd + 6 * hd + hd * 3 * hd + 3 * hd + hd * hd + hd + hd * f + f + f * hd + hd;
  const int64_t want = cin * hd + hd + c.timestep_freq_dim * hd + hd + hd * hd + hd +
                       c.num_layers * per_block + hd * 2 * hd + 2 * hd + hd * cin + cin;
  EXPECT_EQ(m->NumParameters(), want);
  EXPECT_EQ(static_cast<int64_t>(m->Gradients().size()), want);
  int64_t next = 0;
  for (const ParameterTensor& t : m->ParameterTensors()) {
    EXPECT_EQ(t.offset, next) << t.name;
    next += t.size();
  }
  EXPECT_EQ(next, want);
  auto m2 = SmallDit::Create(c);
  ASSERT_TRUE(m2.ok());
  EXPECT_TRUE(std::equal(m->Parameters().begin(), m->Parameters().end(), m2->Parameters().begin()));
  // The decay mask covers the weight matrices, not the biases.
  const std::vector<uint8_t> mask = m->DecayMask();
  ASSERT_EQ(static_cast<int64_t>(mask.size()), want);
  for (const ParameterTensor& t : m->ParameterTensors()) {
    EXPECT_EQ(t.is_bias, t.rows == 1) << t.name;
    EXPECT_EQ(mask[t.offset], t.is_bias ? 0 : 1) << t.name;
    EXPECT_EQ(mask[t.offset + t.size() - 1], t.is_bias ? 0 : 1) << t.name;
  }
  // Weights are non-zero, biases zero.
  const ParameterTensor& w_o = m->ParameterTensors()[10];
  ASSERT_EQ(w_o.name, "block0.w_o");
  EXPECT_NE(m->Parameters()[w_o.offset], 0.0f);
  EXPECT_EQ(m->Parameters()[m->ParameterTensors()[11].offset], 0.0f);
}

TEST(SmallDitTest, SingleChannelInputWeightIsNotABias) {
  SmallDitConfig c = TinyConfig(1);
  c.in_channels = 1;  // w_in is (1, Hd): one row, but a weight
  auto m = SmallDit::Create(c);
  ASSERT_TRUE(m.ok());
  const ParameterTensor& w_in = m->ParameterTensors()[0];
  ASSERT_EQ(w_in.name, "w_in");
  EXPECT_EQ(w_in.rows, 1);
  EXPECT_FALSE(w_in.is_bias);
  EXPECT_NE(m->Parameters()[w_in.offset], 0.0f);
  EXPECT_EQ(m->DecayMask()[w_in.offset], 1);
}

TEST(SmallDitTest, ActivationBytesMatchesBuffers) {
  const SmallDitConfig c = TinyConfig(3);
  auto m = SmallDit::Create(c);
  ASSERT_TRUE(m.ok());
  LocalAttentionBackend backend;
  SmallDitActivations acts;
  Inputs in = RandomInputs(c, {5, 1, 7}, 2);
  ASSERT_TRUE(m->Forward(in.View(), backend, &acts).ok());
  EXPECT_EQ(acts.Bytes(), SmallDit::ActivationBytes(c, 13, 3));
  EXPECT_EQ(m->ScratchBytes(), 0);
  std::vector<float> d_out(acts.output.size(), 1.0f);
  ASSERT_TRUE(m->Backward(acts, d_out, backend).ok());
  EXPECT_EQ(m->ScratchBytes(), SmallDit::BackwardScratchBytes(c, 13, 3));
  // The default config at 4096 tokens in 16 sequences: a documented figure.
  const SmallDitConfig d;
  const int64_t bytes = SmallDit::ActivationBytes(d, 4096, 16);
  const int64_t per_block = 6 * 16 * 256 + 4096 * (10 * 256 + 2 + 4 + 2 * 1024);
  EXPECT_EQ(bytes, 4 * (4096 * 16 + 16 * 256 + 4 * 16 * 256 + 4 * per_block + 2 * 16 * 256 +
                        4096 * (2 * 256 + 1) + 4096 * 16) +
                       17 * 8);
}

TEST(SmallDitTest, FlopCounts) {
  SmallDitConfig c;
  c.in_channels = 2;
  c.hidden = 4;
  c.num_heads = 2;
  c.num_layers = 1;
  c.ffn_hidden = 8;
  c.timestep_freq_dim = 6;
  const std::vector<int64_t> lens = {3, 1};
  // By hand, T = 4, S = 2: per token in 2*4 + qkv 4*12 + o 4*4 + ffn 4*8 + 8*4 + out 4*2
  // = 144 MACs; per sequence t1 6*4 + t2 4*4 + mod 4*24 + fmod 4*8 = 168 MACs; attention
  // 4 * (9 + 1) * 4 = 160 FLOPs.
  const int64_t linear = 2 * (4 * 144 + 2 * 168);
  EXPECT_EQ(SmallDit::ForwardFlops(c, lens), linear + 160);
  EXPECT_EQ(SmallDit::TrainingStepFlops(c, lens), 3 * linear + 160 + 400);
}

TEST(SmallDitTest, LocalBackendMatchesReferenceBackend) {
  const SmallDitConfig c = TinyConfig();
  auto m = SmallDit::Create(c);
  ASSERT_TRUE(m.ok());
  Inputs in = RandomInputs(c, {6, 3, 9}, 3);
  LocalAttentionBackend local;
  ReferenceAttentionBackend reference;
  SmallDitActivations a_local, a_ref;
  ASSERT_TRUE(m->Forward(in.View(), local, &a_local).ok());
  ASSERT_TRUE(m->Forward(in.View(), reference, &a_ref).ok());
  EXPECT_LT(MaxRelErr(a_local.output, a_ref.output), 1e-5);
  core::Rng rng(4);
  auto d_out = RandomNormal(rng, static_cast<int64_t>(a_local.output.size()));
  ASSERT_TRUE(m->Backward(a_local, d_out, local).ok());
  std::vector<float> g_local(m->Gradients().begin(), m->Gradients().end());
  m->ZeroGradients();
  ASSERT_TRUE(m->Backward(a_ref, d_out, reference).ok());
  std::vector<float> g_ref(m->Gradients().begin(), m->Gradients().end());
  EXPECT_LT(MaxRelErr(g_local, g_ref), 1e-4);
}

TEST(SmallDitTest, DefaultConfigHeadDim64MatchesReferenceBackend) {
  const SmallDitConfig c;  // hidden 256, 4 heads of 64, 4 layers, FFN 1024, 16 channels
  auto m = SmallDit::Create(c);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->NumParameters(), 5005584);
  Inputs in = RandomInputs(c, {5, 9}, 13);
  LocalAttentionBackend local;
  ReferenceAttentionBackend reference;
  SmallDitActivations a_local, a_ref;
  ASSERT_TRUE(m->Forward(in.View(), local, &a_local).ok());
  ASSERT_TRUE(m->Forward(in.View(), reference, &a_ref).ok());
  EXPECT_LT(MaxRelErr(a_local.output, a_ref.output), 1e-5);
  double sum_sq = 0.0;
  for (float v : a_local.output) sum_sq += static_cast<double>(v) * v;
  const double rms = std::sqrt(sum_sq / static_cast<double>(a_local.output.size()));
  EXPECT_GT(rms, 0.1);  // a live network at init: outputs of order one, not 0 or huge
  EXPECT_LT(rms, 10.0);
}

TEST(SmallDitTest, VarlenBatchEqualsEachSequenceAlone) {
  const SmallDitConfig c = TinyConfig();
  auto m = SmallDit::Create(c);
  ASSERT_TRUE(m.ok());
  const std::vector<int64_t> lengths = {4, 1, 7, 3};
  Inputs in = RandomInputs(c, lengths, 6);
  LocalAttentionBackend backend;
  SmallDitActivations packed;
  ASSERT_TRUE(m->Forward(in.View(), backend, &packed).ok());
  for (size_t s = 0; s < lengths.size(); ++s) {
    Inputs one;
    one.cu = {0, lengths[s]};
    one.x.assign(in.x.begin() + in.cu[s] * c.in_channels,
                 in.x.begin() + in.cu[s + 1] * c.in_channels);
    one.t = {in.t[s]};
    SmallDitActivations alone;
    ASSERT_TRUE(m->Forward(one.View(), backend, &alone).ok());
    std::vector<float> slice(packed.output.begin() + in.cu[s] * c.in_channels,
                             packed.output.begin() + in.cu[s + 1] * c.in_channels);
    EXPECT_LT(MaxRelErr(slice, alone.output), 1e-5) << "sequence " << s;
  }
  // And the sequences do interact within themselves: changing one token of sequence 2 changes
  // sequence 2's other outputs but no other sequence's.
  Inputs changed = in;
  changed.x[(in.cu[2] + 1) * c.in_channels] += 1.0f;
  SmallDitActivations after;
  ASSERT_TRUE(m->Forward(changed.View(), backend, &after).ok());
  for (int64_t t = 0; t < in.cu.back(); ++t) {
    const bool in_seq2 = t >= in.cu[2] && t < in.cu[3];
    double diff = 0.0;
    for (int64_t ch = 0; ch < c.in_channels; ++ch) {
      diff +=
          std::abs(after.output[t * c.in_channels + ch] - packed.output[t * c.in_channels + ch]);
    }
    if (in_seq2) {
      EXPECT_GT(diff, 1e-4) << "token " << t;
    } else {
      EXPECT_EQ(diff, 0.0) << "token " << t;
    }
  }
}

// The loss used by the gradient checks: flow-matching MSE against a fixed target.
double Loss(const SmallDit& m, const Inputs& in, const std::vector<float>& target,
            AttentionBackend& backend, SmallDitActivations* acts, std::vector<float>* d_out) {
  CHECK(m.Forward(in.View(), backend, acts).ok());
  std::vector<float> unused;
  return FlowMatchingLoss(acts->output, target, d_out ? std::span<float>(*d_out) : unused);
}

TEST(SmallDitTest, ParameterGradientsMatchCentralFiniteDifferences) {
  const SmallDitConfig c = TinyConfig(2);
  auto m = SmallDit::Create(c);
  ASSERT_TRUE(m.ok());
  Inputs in = RandomInputs(c, {3, 5, 2}, 7);
  core::Rng rng(8);
  const auto target = RandomNormal(rng, in.cu.back() * c.in_channels);
  LocalAttentionBackend backend;
  SmallDitActivations acts;
  std::vector<float> d_out(target.size());
  Loss(*m, in, target, backend, &acts, &d_out);
  m->ZeroGradients();
  ASSERT_TRUE(m->Backward(acts, d_out, backend).ok());
  const std::vector<float> grad(m->Gradients().begin(), m->Gradients().end());

  // Eight random parameters of every tensor, plus the largest-gradient entry of each.
  const float eps = 2e-3f;
  int checked = 0;
  double worst = 0.0;
  for (const ParameterTensor& t : m->ParameterTensors()) {
    std::vector<int64_t> idx;
    for (int k = 0; k < 8; ++k) idx.push_back(t.offset + static_cast<int64_t>(rng.Below(t.size())));
    int64_t arg = t.offset;
    for (int64_t j = t.offset; j < t.offset + t.size(); ++j) {
      if (std::abs(grad[j]) > std::abs(grad[arg])) arg = j;
    }
    idx.push_back(arg);
    double tensor_max = 0.0;
    for (int64_t j = t.offset; j < t.offset + t.size(); ++j) {
      tensor_max = std::max(tensor_max, static_cast<double>(std::abs(grad[j])));
    }
    EXPECT_GT(tensor_max, 1e-6) << t.name << " has an all-zero gradient";
    for (int64_t j : idx) {
      float& p = m->Parameters()[j];
      const float saved = p;
      p = saved + eps;
      const double plus = Loss(*m, in, target, backend, &acts, nullptr);
      p = saved - eps;
      const double minus = Loss(*m, in, target, backend, &acts, nullptr);
      p = saved;
      const double fd = (plus - minus) / (2.0 * eps);
      // fp32 forward: allow 1% of the tensor's gradient scale plus a small absolute floor.
      const double err = std::abs(fd - grad[j]) / (tensor_max + 1e-3);
      worst = std::max(worst, err);
      EXPECT_LT(err, 1e-2) << t.name << "[" << j - t.offset << "]: analytic " << grad[j]
                           << " finite difference " << fd;
      ++checked;
    }
  }
  EXPECT_GE(checked, 9 * static_cast<int>(m->ParameterTensors().size()));
  RecordProperty("worst_relative_error", std::to_string(worst));
  std::printf("checked %d parameters, worst error %.2e\n", checked, worst);
}

// Wraps the local backend and records every call, to check the model's use of the interface.
class RecordingBackend final : public AttentionBackend {
 public:
  core::Status Forward(const kernels::AttentionShape& shape, const float* q, const float* k,
                       const float* v, float* o, float* lse) override {
    forward_shapes.push_back({shape.num_seqs(), shape.total_q(), shape.num_heads, shape.head_dim});
    return local.Forward(shape, q, k, v, o, lse);
  }
  core::Status Backward(const kernels::AttentionShape& shape, const float* q, const float* k,
                        const float* v, const float* o, const float* d_o, const float* lse,
                        float* dq, float* dk, float* dv) override {
    backward_shapes.push_back({shape.num_seqs(), shape.total_q(), shape.num_heads, shape.head_dim});
    if (fail_backward) return core::Unavailable("peer went away");
    return local.Backward(shape, q, k, v, o, d_o, lse, dq, dk, dv);
  }
  LocalAttentionBackend local;
  std::vector<std::vector<int64_t>> forward_shapes, backward_shapes;
  bool fail_backward = false;
};

TEST(SmallDitTest, OneBackendCallPerLayerForTheWholeBatch) {
  const SmallDitConfig c = TinyConfig(3);
  auto m = SmallDit::Create(c);
  ASSERT_TRUE(m.ok());
  Inputs in = RandomInputs(c, {4, 6, 2, 5}, 12);
  RecordingBackend rec;
  SmallDitActivations acts;
  ASSERT_TRUE(m->Forward(in.View(), rec, &acts).ok());
  std::vector<float> d_out(acts.output.size(), 0.1f);
  ASSERT_TRUE(m->Backward(acts, d_out, rec).ok());
  const std::vector<int64_t> want = {4, 17, 2, 8};  // seqs, tokens, heads, head_dim
  ASSERT_EQ(rec.forward_shapes.size(), 3u);
  ASSERT_EQ(rec.backward_shapes.size(), 3u);
  for (const auto& s : rec.forward_shapes) EXPECT_EQ(s, want);
  for (const auto& s : rec.backward_shapes) EXPECT_EQ(s, want);
  // A backend error passes through with the layer named.
  rec.fail_backward = true;
  const core::Status st = m->Backward(acts, d_out, rec);
  EXPECT_EQ(st.code(), core::StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("block 2 attention backward"), std::string::npos) << st.message();
}

// Attends over fixed true sequence boundaries whatever segments the model passes: a stand-in
// for a distributed engine that knows that several local segments are chunks of one sequence.
class JoiningBackend final : public AttentionBackend {
 public:
  explicit JoiningBackend(std::vector<int64_t> true_cu) : cu_(std::move(true_cu)) {}
  core::Status Forward(const kernels::AttentionShape& shape, const float* q, const float* k,
                       const float* v, float* o, float* lse) override {
    return local_.Forward(Joined(shape), q, k, v, o, lse);
  }
  core::Status Backward(const kernels::AttentionShape& shape, const float* q, const float* k,
                        const float* v, const float* o, const float* d_o, const float* lse,
                        float* dq, float* dk, float* dv) override {
    return local_.Backward(Joined(shape), q, k, v, o, d_o, lse, dq, dk, dv);
  }

 private:
  kernels::AttentionShape Joined(kernels::AttentionShape shape) const {
    shape.cu_seqlens_q = cu_;
    shape.cu_seqlens_k = cu_;
    return shape;
  }
  std::vector<int64_t> cu_;
  LocalAttentionBackend local_;
};

TEST(SmallDitTest, ChunkedSequenceWithPositionOffsetsEqualsWholeSequence) {
  const SmallDitConfig c = TinyConfig(2);
  auto m = SmallDit::Create(c);
  ASSERT_TRUE(m.ok());
  Inputs whole = RandomInputs(c, {7, 4}, 15);
  // Sequence 0 as two segments [0, 3) and [3, 7) with the same timestep and offsets 0 and 3.
  Inputs chunked = whole;
  chunked.cu = {0, 3, 7, 11};
  chunked.t = {whole.t[0], whole.t[0], whole.t[1]};
  const std::vector<int64_t> offsets = {0, 3, 0};
  DitBatch chunked_batch = chunked.View();
  chunked_batch.position_offsets = offsets;
  LocalAttentionBackend local;
  JoiningBackend joining(whole.cu);
  SmallDitActivations a_whole, a_chunked;
  ASSERT_TRUE(m->Forward(whole.View(), local, &a_whole).ok());
  ASSERT_TRUE(m->Forward(chunked_batch, joining, &a_chunked).ok());
  EXPECT_LT(MaxRelErr(a_chunked.output, a_whole.output), 1e-5);
  core::Rng rng(16);
  const auto d_out = RandomNormal(rng, static_cast<int64_t>(a_whole.output.size()));
  m->ZeroGradients();
  ASSERT_TRUE(m->Backward(a_whole, d_out, local).ok());
  const std::vector<float> g_whole(m->Gradients().begin(), m->Gradients().end());
  m->ZeroGradients();
  ASSERT_TRUE(m->Backward(a_chunked, d_out, joining).ok());
  const std::vector<float> g_chunked(m->Gradients().begin(), m->Gradients().end());
  EXPECT_LT(MaxRelErr(g_chunked, g_whole), 1e-5);
  // Without the offsets the second chunk's positions restart at 0: a different result.
  SmallDitActivations a_no_offsets;
  ASSERT_TRUE(m->Forward(chunked.View(), joining, &a_no_offsets).ok());
  EXPECT_GT(MaxRelErr(a_no_offsets.output, a_whole.output), 1e-3);
  // Offsets must be one per segment and non-negative.
  const std::vector<int64_t> bad = {0, -1, 0};
  chunked_batch.position_offsets = bad;
  EXPECT_EQ(m->Forward(chunked_batch, joining, &a_chunked).code(),
            core::StatusCode::kInvalidArgument);
}

TEST(SmallDitTest, AdaLnZeroInitStartsBlocksAsIdentity) {
  SmallDitConfig c = TinyConfig(2);
  c.modulation_init_std = 0.0f;
  auto m = SmallDit::Create(c);
  ASSERT_TRUE(m.ok());
  Inputs in = RandomInputs(c, {5, 3}, 14);
  LocalAttentionBackend backend;
  SmallDitActivations before, after;
  ASSERT_TRUE(m->Forward(in.View(), backend, &before).ok());
  // Perturbing a block's weights changes nothing while its gates are 0...
  for (const ParameterTensor& t : m->ParameterTensors()) {
    if (t.name.rfind("block", 0) == 0 && t.name.find("mod") == std::string::npos) {
      for (int64_t j = 0; j < t.size(); ++j) m->Parameters()[t.offset + j] += 0.5f;
    }
  }
  ASSERT_TRUE(m->Forward(in.View(), backend, &after).ok());
  EXPECT_EQ(before.output, after.output);
  // ...but the gates themselves get a gradient, so training can open them.
  std::vector<float> d_out(after.output.size(), 1.0f);
  ASSERT_TRUE(m->Backward(after, d_out, backend).ok());
  for (const ParameterTensor& t : m->ParameterTensors()) {
    if (t.name != "block0.w_mod") continue;
    double norm = 0.0;
    for (int64_t j = 0; j < t.size(); ++j) norm += std::abs(m->Gradients()[t.offset + j]);
    EXPECT_GT(norm, 1e-3);
  }
}

TEST(SmallDitTest, BackwardAccumulatesIntoGradients) {
  const SmallDitConfig c = TinyConfig(1);
  auto m = SmallDit::Create(c);
  ASSERT_TRUE(m.ok());
  Inputs in = RandomInputs(c, {4, 4}, 9);
  LocalAttentionBackend backend;
  SmallDitActivations acts;
  ASSERT_TRUE(m->Forward(in.View(), backend, &acts).ok());
  core::Rng rng(10);
  auto d_out = RandomNormal(rng, static_cast<int64_t>(acts.output.size()));
  m->ZeroGradients();
  ASSERT_TRUE(m->Backward(acts, d_out, backend).ok());
  std::vector<float> once(m->Gradients().begin(), m->Gradients().end());
  ASSERT_TRUE(m->Backward(acts, d_out, backend).ok());
  for (size_t i = 0; i < once.size(); i += 17) {
    EXPECT_NEAR(m->Gradients()[i], 2.0f * once[i], 1e-5f * (1.0f + std::abs(once[i])));
  }
}

}  // namespace
}  // namespace tessera::models

namespace tessera::models {
namespace {

TEST(SmallDitTest, ParameterCountMatchesTheAllocatedModelAndBoundsHugeConfigs) {
  for (SmallDitConfig c : {SmallDitConfig{}, SmallDitConfig{4, 32, 2, 1, 64, 16},
                           SmallDitConfig{3, 48, 3, 5, 100, 8}}) {
    auto m = SmallDit::Create(c);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(SmallDitParameterCount(c), static_cast<double>(m->NumParameters()));
  }
  SmallDitConfig huge;
  huge.hidden = 1 << 20;
  huge.ffn_hidden = 1 << 22;
  EXPECT_NE(ValidateSmallDitConfig(huge).message().find("parameters, must be <="),
            std::string::npos);
  huge.hidden = int64_t{1} << 40;
  EXPECT_NE(ValidateSmallDitConfig(huge).message().find("hidden: got"), std::string::npos);
}

}  // namespace
}  // namespace tessera::models
