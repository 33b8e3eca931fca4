// SmallGptStage: a chain of stages over any split of the layer slots, with several micro-batches
// in flight in sequential, GPipe or 1F1B order, gives the same bits (loss and gradients) as the
// one-stage model run on the same micro-batches, at tp = 1 and tp = 2 (in-process ranks over
// CommTpOps), with and without dropout; SmallGpt is that one-stage model on one micro-batch
// (bitwise), and the chain over several micro-batches matches SmallGpt on their concatenation
// within fp32 rounding (the GEMMs and reductions see other shapes). Also: the slots' parameters
// are the whole model's, gradients with dropout match finite differences, and bad input is
// refused naming the field.
#include "models/small_gpt_stage.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "comm/in_process_communicator.h"
#include "core/rng.h"
#include "models/comm_tp_ops.h"
#include "models/models_test_util.h"
#include "models/small_gpt.h"

namespace tessera::models {
namespace {

using Grads = std::map<std::string, std::vector<float>>;

// A step's outcome: the sum of the micro-batches' loss sums and every tensor's gradient.
struct StepResult {
  double loss = 0;
  Grads grads;
};

enum class Order { kSequential, kGPipe, k1F1B };

// The random trial: a config, micro-batches and a split of the slots into stages.
struct Trial {
  SmallGptConfig config;
  std::vector<GptBatch> micro_batches;
  std::vector<int64_t> cuts;  // stage s owns slots [cuts[s], cuts[s + 1])
};

Trial RandomTrial(uint64_t seed, int tp, float dropout) {
  core::Rng rng(seed);
  Trial t;
  SmallGptConfig& c = t.config;
  c.num_heads = 2 * static_cast<int64_t>(1 + rng.Below(2));
  c.hidden = c.num_heads * 2 * static_cast<int64_t>(1 + rng.Below(2));
  c.ffn_hidden = c.hidden * static_cast<int64_t>(1 + rng.Below(2));
  c.vocab = 8 + static_cast<int64_t>(rng.Below(24));
  c.num_layers = 1 + static_cast<int64_t>(rng.Below(4));
  c.max_seq = 8;
  c.init_seed = rng.NextU64();
  c.dropout = dropout;
  c.dropout_seed = rng.NextU64();
  const int64_t seq = 2 * static_cast<int64_t>(1 + rng.Below(4));
  const int k = 1 + static_cast<int>(rng.Below(4));
  for (int i = 0; i < k; ++i) {
    auto b = MakeSyntheticGptBatch(c.vocab, 1 + static_cast<int64_t>(rng.Below(3)), seq, seed, i);
    EXPECT_TRUE(b.ok());
    t.micro_batches.push_back(*b);
  }
  const int64_t slots = SmallGptStage::NumSlots(c);
  const int stages = 1 + static_cast<int>(rng.Below(std::min<uint64_t>(4, slots)));
  // stages - 1 distinct cut points in [1, slots).
  std::vector<int64_t> inner;
  for (int64_t s = 1; s < slots; ++s) inner.push_back(s);
  for (size_t i = 0; i + 1 < inner.size(); ++i) {
    std::swap(inner[i], inner[i + rng.Below(inner.size() - i)]);
  }
  inner.resize(static_cast<size_t>(stages - 1));
  std::sort(inner.begin(), inner.end());
  t.cuts.push_back(0);
  t.cuts.insert(t.cuts.end(), inner.begin(), inner.end());
  t.cuts.push_back(slots);
  (void)tp;
  return t;
}

int64_t TotalTokens(const std::vector<GptBatch>& mbs) {
  int64_t n = 0;
  for (const GptBatch& b : mbs) n += b.num_tokens();
  return n;
}

std::vector<SmallGptStage> MakeStages(const SmallGptConfig& c, int tp, int rank,
                                      const std::vector<int64_t>& cuts) {
  std::vector<SmallGptStage> stages;
  for (size_t s = 0; s + 1 < cuts.size(); ++s) {
    auto st = SmallGptStage::Create(c, tp, rank, cuts[s], cuts[s + 1]);
    EXPECT_TRUE(st.ok()) << st.status().ToString();
    stages.push_back(std::move(*st));
  }
  return stages;
}

// The per-stage op lists of an order: (forward?, micro-batch).
std::vector<std::deque<std::pair<bool, int>>> Schedule(Order order, int stages, int k) {
  std::vector<std::deque<std::pair<bool, int>>> ops(static_cast<size_t>(stages));
  for (int s = 0; s < stages; ++s) {
    auto& q = ops[s];
    if (order == Order::kSequential) {
      for (int i = 0; i < k; ++i) q.push_back({true, i}), q.push_back({false, i});
    } else if (order == Order::kGPipe) {
      for (int i = 0; i < k; ++i) q.push_back({true, i});
      for (int i = 0; i < k; ++i) q.push_back({false, i});
    } else {
      const int warmup = std::min(stages - s - 1, k);
      for (int i = 0; i < warmup; ++i) q.push_back({true, i});
      for (int i = 0; i < k - warmup; ++i) q.push_back({true, warmup + i}), q.push_back({false, i});
      for (int i = k - warmup; i < k; ++i) q.push_back({false, i});
    }
  }
  return ops;
}

// One step of the chain in `order`: every stage's head op runs as soon as its input is there
// (stages swept in order, as one thread plays every stage). Each TP rank runs the same sweep,
// so the ranks call their collectives in the same order.
core::StatusOr<StepResult> RunStep(std::vector<SmallGptStage>& stages,
                                   const std::vector<GptBatch>& mbs, int64_t step, Order order,
                                   TensorParallelOps& ops) {
  const int ns = static_cast<int>(stages.size()), k = static_cast<int>(mbs.size());
  const float scale = 1.0f / static_cast<float>(TotalTokens(mbs));
  for (SmallGptStage& st : stages) st.ZeroGradients();
  // act[s][i]: stage s's output for micro-batch i; grad[s][i]: stage s's grad_input.
  std::vector<std::vector<std::vector<float>>> act(ns), grad(ns);
  std::vector<std::vector<bool>> fdone(ns, std::vector<bool>(k)), bdone(ns, std::vector<bool>(k));
  for (int s = 0; s < ns; ++s) act[s].resize(k), grad[s].resize(k);
  auto queues = Schedule(order, ns, k);
  StepResult r;
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < ns; ++s) {
      if (queues[s].empty()) continue;
      const auto [fwd, i] = queues[s].front();
      SmallGptStage& st = stages[s];
      const MicroBatchKey key{.step = step, .micro_batch = i};
      const int64_t n = st.ActivationSize(mbs[i].num_tokens());
      if (fwd) {
        if (s > 0 && !fdone[s - 1][i]) continue;
        std::span<const float> in;
        if (s > 0) in = act[s - 1][i];
        if (!st.is_last()) act[s][i].assign(static_cast<size_t>(n), 0.0f);
        ASSIGN_OR_RETURN(const double loss, st.Forward(key, mbs[i], in, act[s][i], ops));
        if (st.is_last()) r.loss += loss;
        fdone[s][i] = true;
      } else {
        if (s + 1 < ns && !bdone[s + 1][i]) continue;
        std::span<const float> gout;
        if (s + 1 < ns) gout = grad[s + 1][i];
        if (!st.is_first()) grad[s][i].assign(static_cast<size_t>(n), 0.0f);
        RETURN_IF_ERROR(st.Backward(key, gout, grad[s][i], scale, ops));
        bdone[s][i] = true;
      }
      queues[s].pop_front();
      progress = true;
    }
  }
  for (int s = 0; s < ns; ++s) {
    if (!queues[s].empty())
      return core::Internal("schedule deadlocked at stage " + std::to_string(s));
    RETURN_IF_ERROR(stages[s].ReduceReplicatedGradients(ops));
    if (stages[s].NumInFlight() != 0) return core::Internal("activations left in flight");
    for (const ParameterTensor& t : stages[s].ParameterTensors()) {
      const auto g = stages[s].Gradients().subspan(t.offset, t.size());
      r.grads[t.name].assign(g.begin(), g.end());
    }
  }
  return r;
}

// Bitwise equality of two step results.
void ExpectSameBits(const StepResult& a, const StepResult& b, const std::string& what) {
  EXPECT_EQ(std::memcmp(&a.loss, &b.loss, sizeof(double)), 0)
      << what << ": loss " << a.loss << " vs " << b.loss;
  ASSERT_EQ(a.grads.size(), b.grads.size()) << what;
  for (const auto& [name, g] : a.grads) {
    const auto it = b.grads.find(name);
    ASSERT_NE(it, b.grads.end()) << what << ": " << name;
    ASSERT_EQ(g.size(), it->second.size()) << what << ": " << name;
    EXPECT_EQ(std::memcmp(g.data(), it->second.data(), g.size() * sizeof(float)), 0)
        << what << ": gradient of " << name;
  }
}

// The trials of one rank: for each, the chain in three orders against the one-stage model.
struct RankOutcome {
  std::vector<StepResult> whole, chain[3];
  std::vector<std::string> errors;
};

RankOutcome RunTrials(int tp, int rank, TensorParallelOps& ops, float dropout, int trials) {
  RankOutcome out;
  for (int trial = 0; trial < trials; ++trial) {
    const Trial t = RandomTrial(1000 + trial, tp, dropout);
    const int64_t step = trial;
    auto whole = MakeStages(t.config, tp, rank, {0, SmallGptStage::NumSlots(t.config)});
    auto w = RunStep(whole, t.micro_batches, step, Order::kSequential, ops);
    if (!w.ok()) {
      out.errors.push_back(w.status().ToString());
      return out;
    }
    out.whole.push_back(*w);
    for (Order order : {Order::kSequential, Order::kGPipe, Order::k1F1B}) {
      auto chain = MakeStages(t.config, tp, rank, t.cuts);
      auto c = RunStep(chain, t.micro_batches, step, order, ops);
      if (!c.ok()) {
        out.errors.push_back(c.status().ToString());
        return out;
      }
      out.chain[static_cast<int>(order)].push_back(*c);
    }
  }
  return out;
}

void ExpectChainsMatchWhole(const RankOutcome& o, const std::string& what) {
  ASSERT_TRUE(o.errors.empty()) << what << ": " << o.errors.front();
  for (size_t trial = 0; trial < o.whole.size(); ++trial) {
    for (int order = 0; order < 3; ++order) {
      ExpectSameBits(o.chain[order][trial], o.whole[trial],
                     what + " trial " + std::to_string(trial) + " order " + std::to_string(order));
    }
  }
}

constexpr int kTrials = 24;

TEST(SmallGptStage, ChainEqualsTheWholeModelBitwiseAtTp1) {
  for (float dropout : {0.0f, 0.2f}) {
    LocalTpOps ops;
    ExpectChainsMatchWhole(RunTrials(1, 0, ops, dropout, kTrials),
                           "tp 1 dropout " + std::to_string(dropout));
  }
}

TEST(SmallGptStage, ChainEqualsTheWholeModelBitwiseAtTp2) {
  for (float dropout : {0.0f, 0.2f}) {
    std::vector<RankOutcome> outcomes(2);
    comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
      CommTpOps ops(world);
      outcomes[world.rank()] = RunTrials(2, world.rank(), ops, dropout, kTrials);
    });
    for (int r = 0; r < 2; ++r) {
      ExpectChainsMatchWhole(
          outcomes[r], "tp 2 rank " + std::to_string(r) + " dropout " + std::to_string(dropout));
    }
    // Every rank returns the same loss and the same replicated gradients; the masks are the
    // same as tp 1's (the loss and the head's gradient match within fp32 rounding).
    LocalTpOps local;
    const RankOutcome one = RunTrials(1, 0, local, dropout, kTrials);
    ASSERT_TRUE(one.errors.empty());
    for (size_t t = 0; t < outcomes[0].whole.size(); ++t) {
      const StepResult& a = outcomes[0].whole[t];
      const StepResult& b = outcomes[1].whole[t];
      EXPECT_EQ(a.loss, b.loss) << t;
      for (const char* name : {"tok_emb", "pos_emb", "w_head"}) {
        EXPECT_EQ(a.grads.at(name), b.grads.at(name)) << t << " " << name;
        EXPECT_LT(testing::MaxRelErr(a.grads.at(name), one.whole[t].grads.at(name)), 1e-4)
            << "trial " << t << " " << name << " dropout " << dropout;
      }
      EXPECT_NEAR(a.loss, one.whole[t].loss, 1e-5 * std::abs(one.whole[t].loss)) << t;
    }
  }
}

GptBatch Concatenate(const std::vector<GptBatch>& mbs) {
  GptBatch all;
  all.seq = mbs.front().seq;
  for (const GptBatch& b : mbs) {
    all.batch += b.batch;
    all.tokens.insert(all.tokens.end(), b.tokens.begin(), b.tokens.end());
    all.targets.insert(all.targets.end(), b.targets.begin(), b.targets.end());
  }
  return all;
}

// SmallGpt is the one-stage model on one micro-batch (step 0, micro-batch 0): a chain on that
// one micro-batch gives its bits; on several micro-batches, the mean loss and the gradients of
// their concatenation within fp32 rounding.
TEST(SmallGptStage, MatchesSmallGpt) {
  for (float dropout : {0.0f, 0.2f}) {
    for (int trial = 0; trial < 6; ++trial) {
      const Trial t = RandomTrial(2000 + trial, 1, dropout);
      LocalTpOps ops;
      auto gpt = SmallGpt::Create(t.config, 1, 0);
      ASSERT_TRUE(gpt.ok());
      const GptBatch all = Concatenate(t.micro_batches);
      auto mean = gpt->ForwardBackward(all, ops);
      ASSERT_TRUE(mean.ok()) << mean.status().ToString();
      StepResult ref{*mean, {}};
      for (const ParameterTensor& p : gpt->ParameterTensors()) {
        const auto g = gpt->Gradients().subspan(p.offset, p.size());
        ref.grads[p.name].assign(g.begin(), g.end());
      }
      auto one = MakeStages(t.config, 1, 0, t.cuts);
      auto single = RunStep(one, {all}, 0, Order::k1F1B, ops);
      ASSERT_TRUE(single.ok()) << single.status().ToString();
      single->loss /= static_cast<double>(all.num_tokens());
      ExpectSameBits(*single, ref, "one micro-batch, trial " + std::to_string(trial));
      if (dropout > 0) continue;  // the masks of several micro-batches are other masks
      auto chain = MakeStages(t.config, 1, 0, t.cuts);
      auto split = RunStep(chain, t.micro_batches, 0, Order::k1F1B, ops);
      ASSERT_TRUE(split.ok());
      EXPECT_NEAR(split->loss / all.num_tokens(), *mean, 1e-6 * *mean) << trial;
      for (const auto& [name, g] : ref.grads) {
        EXPECT_LT(testing::MaxRelErr(split->grads.at(name), g), 1e-4) << trial << " " << name;
      }
    }
  }
}

// The gradients with dropout are those of the loss with the same masks (Backward applies the
// Forward's mask): central differences of SmallGpt's loss at a fixed step.
TEST(SmallGptStage, DropoutGradientsMatchFiniteDifferences) {
  SmallGptConfig c = testing::TinyGptConfig();
  c.dropout = 0.3f;
  auto model = SmallGpt::Create(c, 1, 0);
  ASSERT_TRUE(model.ok());
  auto batch = MakeSyntheticGptBatch(16, 2, 6, 3, 0);
  ASSERT_TRUE(batch.ok());
  LocalTpOps ops;
  auto loss = model->ForwardBackward(*batch, ops);
  ASSERT_TRUE(loss.ok());
  const std::vector<float> grads(model->Gradients().begin(), model->Gradients().end());
  core::Rng rng(12);
  for (const ParameterTensor& t : model->ParameterTensors()) {
    for (int probe = 0; probe < 6; ++probe) {
      const int64_t i = t.offset + static_cast<int64_t>(rng.Below(t.size()));
      const float saved = model->Parameters()[i];
      const float step = 2e-3f;
      model->Parameters()[i] = saved + step;
      auto up = model->ForwardBackward(*batch, ops);
      model->Parameters()[i] = saved - step;
      auto down = model->ForwardBackward(*batch, ops);
      model->Parameters()[i] = saved;
      ASSERT_TRUE(up.ok() && down.ok());
      const double fd = (*up - *down) / (2.0 * step);
      EXPECT_NEAR(grads[i], fd, 0.03 * std::abs(fd) + 5e-4) << t.name << " element " << i;
    }
  }
  // Dropout is on: a model without it has another loss.
  c.dropout = 0;
  auto plain = SmallGpt::Create(c, 1, 0);
  ASSERT_TRUE(plain.ok());
  auto plain_loss = plain->ForwardBackward(*batch, ops);
  ASSERT_TRUE(plain_loss.ok());
  EXPECT_GT(std::abs(*plain_loss - *loss), 1e-3);
}

// A stage holds exactly the whole model's tensors of its slots, under their global names, and
// a slot's span is those tensors, contiguous.
TEST(SmallGptStage, SlotsHoldTheWholeModelsTensors) {
  SmallGptConfig c;
  c.vocab = 12;
  c.hidden = 8;
  c.num_heads = 2;
  c.num_layers = 3;
  c.ffn_hidden = 16;
  c.max_seq = 6;
  for (int tp : {1, 2}) {
    for (int rank = 0; rank < tp; ++rank) {
      auto whole = SmallGptStage::Create(c, tp, rank, 0, 5);
      ASSERT_TRUE(whole.ok());
      std::map<std::string, std::vector<float>> by_name;
      for (const ParameterTensor& t : whole->ParameterTensors()) {
        const auto v = whole->Parameters().subspan(t.offset, t.size());
        by_name[t.name].assign(v.begin(), v.end());
      }
      int64_t total = 0;
      for (int64_t b = 0; b < 5; ++b) {
        for (int64_t e = b + 1; e <= 5; ++e) {
          auto st = SmallGptStage::Create(c, tp, rank, b, e);
          ASSERT_TRUE(st.ok());
          int64_t slot_sum = 0;
          for (int64_t s = b; s < e; ++s) {
            auto span = st->SlotParameters(s);
            ASSERT_TRUE(span.ok());
            auto wspan = whole->SlotParameters(s);
            ASSERT_TRUE(wspan.ok());
            ASSERT_EQ(span->size(), wspan->size()) << "slot " << s;
            EXPECT_TRUE(std::equal(span->begin(), span->end(), wspan->begin())) << "slot " << s;
            slot_sum += static_cast<int64_t>(span->size());
            EXPECT_EQ(st->SlotGradients(s)->size(), span->size());
          }
          EXPECT_EQ(slot_sum, st->NumParameters());
          for (const ParameterTensor& t : st->ParameterTensors()) {
            const auto v = st->Parameters().subspan(t.offset, t.size());
            ASSERT_TRUE(by_name.contains(t.name)) << t.name;
            EXPECT_TRUE(std::equal(v.begin(), v.end(), by_name[t.name].begin())) << t.name;
          }
          if (b == 2 && e == 3) {
            ASSERT_EQ(st->ParameterTensors().size(), 4u);
            EXPECT_EQ(st->ParameterTensors()[0].name, "layer1.w_qkv");
            EXPECT_EQ(st->NumReplicatedParameters(), 0);
          }
          total += (e == b + 1) ? st->NumParameters() : 0;
        }
      }
      EXPECT_EQ(total, whole->NumParameters());  // the one-slot stages partition the model
    }
  }
  // The span is a view: writing it changes the stage's parameters.
  auto st = SmallGptStage::Create(c, 1, 0, 4, 5);
  ASSERT_TRUE(st.ok());
  auto head = st->SlotParameters(4);
  ASSERT_TRUE(head.ok());
  (*head)[0] = 42.0f;
  EXPECT_EQ(st->Parameters()[0], 42.0f);
}

TEST(SmallGptStage, BadInputIsRefusedNamingTheField) {
  SmallGptConfig c = testing::TinyGptConfig();
  auto has = [](const core::Status& s, const std::string& text) {
    return !s.ok() && s.message().find(text) != std::string::npos;
  };
  EXPECT_TRUE(has(SmallGptStage::Create(c, 1, 0, 3, 2).status(), "slots [3, 2)"));
  EXPECT_TRUE(has(SmallGptStage::Create(c, 1, 0, 0, 5).status(), "<= 4 (num_layers + 2)"));
  EXPECT_TRUE(has(SmallGptStage::Create(c, 1, 0, -1, 2).status(), "slots [-1, 2)"));
  EXPECT_TRUE(has(SmallGptStage::Create(c, 2, 2, 0, 2).status(), "rank 2 outside [0, 2)"));
  SmallGptConfig bad = c;
  bad.dropout = 1.0f;
  EXPECT_TRUE(has(SmallGptStage::Create(bad, 1, 0, 0, 4).status(), "dropout: got 1.0"));

  auto first = SmallGptStage::Create(c, 1, 0, 0, 2);
  auto last = SmallGptStage::Create(c, 1, 0, 2, 4);
  ASSERT_TRUE(first.ok() && last.ok());
  EXPECT_TRUE(has(first->SlotParameters(2).status(), "slot 2 outside this stage's [0, 2)"));
  EXPECT_TRUE(has(last->SlotGradients(1).status(), "slot 1 outside"));
  auto batch = MakeSyntheticGptBatch(16, 2, 4, 1, 0);
  ASSERT_TRUE(batch.ok());
  LocalTpOps ops;
  std::vector<float> act(static_cast<size_t>(first->ActivationSize(8)));
  std::vector<float> short_act(5);
  const MicroBatchKey k0{.step = 1, .micro_batch = 0};
  EXPECT_TRUE(has(first->Forward(k0, *batch, act, act, ops).status(), "input_act: got 64"));
  EXPECT_TRUE(has(first->Forward(k0, *batch, {}, short_act, ops).status(),
                  "output_act: got 5 elements, want 64"));
  EXPECT_TRUE(has(last->Forward(k0, *batch, act, act, ops).status(), "output_act: got 64"));
  auto long_batch = MakeSyntheticGptBatch(16, 1, 9, 1, 0);
  EXPECT_TRUE(has(first->Forward(k0, *long_batch, {}, act, ops).status(), "max_seq"));
  ASSERT_TRUE(first->Forward(k0, *batch, {}, act, ops).ok());
  const core::Status again = first->Forward(k0, *batch, {}, act, ops).status();
  EXPECT_EQ(again.code(), core::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(has(again, "(step 1, micro_batch 0) is already in flight"));
  EXPECT_EQ(first->NumInFlight(), 1);
  const core::Status unknown = first->Backward({1, 7}, act, {}, 1.0f, ops);
  EXPECT_EQ(unknown.code(), core::StatusCode::kNotFound);
  EXPECT_TRUE(has(unknown, "(step 1, micro_batch 7) is not in flight"));
  EXPECT_TRUE(has(first->Backward(k0, short_act, {}, 1.0f, ops), "grad_output: got 5"));
  EXPECT_TRUE(has(first->Backward(k0, act, act, 1.0f, ops), "grad_input: got 64"));
  ASSERT_TRUE(first->Backward(k0, act, {}, 1.0f, ops).ok());
  EXPECT_EQ(first->NumInFlight(), 0);
  ASSERT_TRUE(last->Forward(k0, *batch, act, {}, ops).ok());
  EXPECT_TRUE(has(last->Backward(k0, {}, act, NAN, ops), "loss_scale: got nan"));
  last->DiscardInFlight();
  EXPECT_EQ(last->NumInFlight(), 0);
  auto tp2 = SmallGptStage::Create(c, 2, 0, 0, 4);
  ASSERT_TRUE(tp2.ok());
  EXPECT_TRUE(has(tp2->Forward(k0, *batch, {}, {}, ops).status(), "rank 0 of 2"));
}

}  // namespace
}  // namespace tessera::models
