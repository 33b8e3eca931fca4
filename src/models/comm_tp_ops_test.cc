// CommTpOps on in-process ranks: each operator against the single-process computation on the
// gathered / summed operands, and SmallGpt at tp = 2 over it against its t = 1 twin (LocalTpOps)
// within the tolerance of fp32 rounding, every rank getting the same loss and replicated
// gradients.
#include "models/comm_tp_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "comm/in_process_communicator.h"
#include "core/rng.h"
#include "models/models_test_util.h"
#include "models/small_gpt.h"

namespace tessera::models {
namespace {

using testing::MaxRelErr;
using testing::RandomNormal;

// Rank r's seeded operands.
std::vector<float> Operand(uint64_t tensor, int rank, int64_t n) {
  core::Rng rng = core::Rng(77).Keyed({tensor, static_cast<uint64_t>(rank)});
  return RandomNormal(rng, n);
}

TEST(CommTpOps, OperatorsMatchTheSingleProcessComputation) {
  for (int tp : {2, 3}) {
    const TpGemmDims d{.m = 6 * tp, .n = 5, .k = 7};
    const int64_t mr = d.m / tp;
    // References: the gathered x (all ranks' rows in order) and the sum of the ranks' products.
    std::vector<float> xg, w = Operand(1, 0, d.k * d.n), dy = Operand(2, 0, d.m * d.n);
    for (int r = 0; r < tp; ++r) {
      const std::vector<float> x = Operand(0, r, mr * d.k);
      xg.insert(xg.end(), x.begin(), x.end());
    }
    LocalTpOps local;
    std::vector<float> ag(d.m * d.n), wg(d.k * d.n), rs_full(d.m * d.n, 0.0f);
    ASSERT_TRUE(local.AllGatherGemm("qkv", d, xg.data(), w.data(), ag.data()).ok());
    ASSERT_TRUE(local.AllGatherWgrad("qkv-wgrad", d, xg.data(), dy.data(), wg.data()).ok());
    for (int r = 0; r < tp; ++r) {
      const std::vector<float> xr = Operand(3, r, d.m * d.k), wr = Operand(4, r, d.k * d.n);
      std::vector<float> part(d.m * d.n);
      ASSERT_TRUE(local.GemmReduceScatter("proj", d, xr.data(), wr.data(), part.data()).ok());
      for (size_t i = 0; i < part.size(); ++i) rs_full[i] += part[i];
    }
    std::vector<std::vector<float>> got_ag(tp), got_wg(tp), got_rs(tp);
    std::vector<std::string> errors(tp);
    comm::RunInProcessRanks(tp, [&](comm::Communicator& world) {
      const int r = world.rank();
      CommTpOps ops(world);
      auto& e = errors[r];
      if (ops.tp() != tp || ops.rank() != r) e = "tp or rank";
      const std::vector<float> x = Operand(0, r, mr * d.k);
      got_ag[r].resize(d.m * d.n), got_wg[r].resize(d.k * d.n), got_rs[r].resize(mr * d.n);
      core::Status s = ops.AllGatherGemm("qkv", d, x.data(), w.data(), got_ag[r].data());
      if (s.ok()) s = ops.AllGatherWgrad("qkv-wgrad", d, x.data(), dy.data(), got_wg[r].data());
      const std::vector<float> xr = Operand(3, r, d.m * d.k), wr = Operand(4, r, d.k * d.n);
      if (s.ok()) s = ops.GemmReduceScatter("proj", d, xr.data(), wr.data(), got_rs[r].data());
      if (!s.ok()) e = s.ToString();
    });
    for (int r = 0; r < tp; ++r) {
      ASSERT_EQ(errors[r], "") << "rank " << r;
      EXPECT_EQ(got_ag[r], ag) << "tp " << tp << " rank " << r;  // the same GEMM: same bits
      EXPECT_EQ(got_wg[r], wg) << "tp " << tp << " rank " << r;
      const std::vector<float> want(rs_full.begin() + r * mr * d.n,
                                    rs_full.begin() + (r + 1) * mr * d.n);
      EXPECT_LT(MaxRelErr(got_rs[r], want), 1e-6) << "tp " << tp << " rank " << r;
    }
  }
}

TEST(CommTpOps, RefusesTokensNotDivisibleByTp) {
  std::vector<std::string> messages(2);
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    CommTpOps ops(world);
    std::vector<float> x(15), w(3), y(15);
    messages[world.rank()] =
        ops.AllGatherGemm("fc1", {.m = 5, .n = 3, .k = 1}, x.data(), w.data(), y.data()).message();
  });
  for (const std::string& m : messages) {
    EXPECT_NE(m.find("tp operator fc1: M 5"), std::string::npos) << m;
    EXPECT_NE(m.find("multiple of tp 2"), std::string::npos) << m;
  }
}

// Rank r's slice of a whole-model tensor (SmallGpt's layout: w_qkv columns of the rank's heads
// in each of q, k, v; w_proj and w_fc2 rows; w_fc1 columns; replicated tensors whole).
std::vector<float> ShardOf(const std::string& name, const std::vector<float>& whole,
                           const SmallGptConfig& c, int tp, int r) {
  const int64_t h = c.hidden, hl = h / tp, f = c.ffn_hidden, fl = f / tp;
  const auto ends = [&](const char* suffix) { return name.ends_with(suffix); };
  std::vector<float> out;
  if (ends("w_qkv")) {
    for (int64_t i = 0; i < h; ++i)
      for (int part = 0; part < 3; ++part)
        for (int64_t j = 0; j < hl; ++j) out.push_back(whole[i * 3 * h + part * h + r * hl + j]);
  } else if (ends("w_proj")) {
    out.assign(whole.begin() + r * hl * h, whole.begin() + (r + 1) * hl * h);
  } else if (ends("w_fc1")) {
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < fl; ++j) out.push_back(whole[i * f + r * fl + j]);
  } else if (ends("w_fc2")) {
    out.assign(whole.begin() + r * fl * h, whole.begin() + (r + 1) * fl * h);
  } else {
    out = whole;
  }
  return out;
}

std::vector<float> TensorOf(std::span<const float> flat, const ParameterTensor& t) {
  const auto s = flat.subspan(t.offset, t.size());
  return {s.begin(), s.end()};
}

// SmallGpt at tp = 2 over CommTpOps: three AdamW steps whose losses and gradients are those of
// the t = 1 twin within fp32 rounding (losses 1e-5 relative, as the Compass GPT runs check
// theirs; gradients 1e-4 relative per tensor), with and without dropout.
TEST(CommTpOps, SmallGptAtTp2MatchesTheT1Twin) {
  for (float dropout : {0.0f, 0.1f}) {
    SmallGptConfig c;
    c.vocab = 32;
    c.hidden = 16;
    c.num_heads = 4;
    c.num_layers = 2;
    c.ffn_hidden = 32;
    c.max_seq = 8;
    c.init_seed = 9;
    c.dropout = dropout;
    const int steps = 3;
    std::vector<GptBatch> batches;
    for (int s = 0; s < steps; ++s) batches.push_back(*MakeSyntheticGptBatch(c.vocab, 3, 8, 4, s));
    // The twin.
    auto twin = SmallGpt::Create(c, 1, 0);
    ASSERT_TRUE(twin.ok());
    auto twin_opt = AdamW::Create(twin->NumParameters(), {.learning_rate = 1e-2f});
    ASSERT_TRUE(twin_opt.ok());
    LocalTpOps local;
    std::vector<double> twin_loss;
    std::vector<std::vector<float>> twin_grads;
    for (const GptBatch& b : batches) {
      auto l = twin->ForwardBackward(b, local);
      ASSERT_TRUE(l.ok());
      twin_loss.push_back(*l);
      twin_grads.emplace_back(twin->Gradients().begin(), twin->Gradients().end());
      ASSERT_TRUE(twin->TrainStep(b, local, *twin_opt).ok());
    }
    struct Rank {
      std::vector<double> loss;
      std::vector<std::vector<float>> grads;
      std::string error;
    };
    std::vector<Rank> ranks(2);
    std::vector<ParameterTensor> tensors;
    comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
      Rank& me = ranks[world.rank()];
      CommTpOps ops(world);
      auto model = SmallGpt::Create(c, 2, world.rank());
      auto opt = AdamW::Create(model->NumParameters(), {.learning_rate = 1e-2f});
      if (!model.ok() || !opt.ok()) {
        me.error = "create";
        return;
      }
      if (world.rank() == 0) tensors = model->ParameterTensors();
      for (const GptBatch& b : batches) {
        auto l = model->ForwardBackward(b, ops);
        if (!l.ok()) {
          me.error = l.status().ToString();
          return;
        }
        me.loss.push_back(*l);
        me.grads.emplace_back(model->Gradients().begin(), model->Gradients().end());
        auto t = model->TrainStep(b, ops, *opt);
        if (!t.ok() || *t != *l) {
          me.error = "TrainStep differs from ForwardBackward";
          return;
        }
      }
    });
    for (int r = 0; r < 2; ++r) ASSERT_EQ(ranks[r].error, "") << "rank " << r;
    for (int s = 0; s < steps; ++s) {
      EXPECT_EQ(ranks[0].loss[s], ranks[1].loss[s]) << "step " << s;
      EXPECT_NEAR(ranks[0].loss[s], twin_loss[s], 1e-5 * twin_loss[s])
          << "step " << s << " dropout " << dropout;
      for (const ParameterTensor& t : twin->ParameterTensors()) {
        const std::vector<float> whole = TensorOf(twin_grads[s], t);
        for (int r = 0; r < 2; ++r) {
          const ParameterTensor* mine = nullptr;
          for (const ParameterTensor& u : tensors)
            if (u.name == t.name) mine = &u;
          ASSERT_NE(mine, nullptr) << t.name;
          const std::vector<float> got = TensorOf(ranks[r].grads[s], *mine);
          EXPECT_LT(MaxRelErr(got, ShardOf(t.name, whole, c, 2, r)), 1e-4)
              << "step " << s << " rank " << r << " " << t.name << " dropout " << dropout;
        }
      }
      for (int64_t i = 0; i < twin->NumReplicatedParameters(); ++i) {
        ASSERT_EQ(ranks[0].grads[s][i], ranks[1].grads[s][i]) << "step " << s << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::models
