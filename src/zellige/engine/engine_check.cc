// Reference and checks for the AttentionEngine; see engine_check.h.
#include "zellige/engine/engine_check.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/check.h"
#include "kernels/attention.h"

namespace tessera::zellige::engine {

using core::Status;
using core::StatusOr;

void FillTokens(uint64_t seed, TestTensor which, int seq, int64_t t0, int64_t t1, int heads,
                int head_dim, float* out) {
  const core::Rng base = core::Rng(seed).Fork(static_cast<uint64_t>(which) + 17);
  const core::Rng per_seq = base.Fork(static_cast<uint64_t>(seq));
  const int64_t row = static_cast<int64_t>(heads) * head_dim;
  for (int64_t t = t0; t < t1; ++t) {
    core::Rng r = per_seq.Fork(static_cast<uint64_t>(t));
    float* p = out + (t - t0) * row;
    for (int64_t e = 0; e < row; ++e) p[e] = static_cast<float>(r.Uniform(-1.0, 1.0));
  }
}

LocalData MakeLocalData(const AttentionEngine& engine, uint64_t seed) {
  const int H = engine.heads(), D = engine.head_dim();
  const int64_t n = engine.local_tokens() * H * D;
  LocalData d{std::vector<float>(n), std::vector<float>(n), std::vector<float>(n),
              std::vector<float>(n)};
  for (const auto& lp : engine.local_placements()) {
    const int64_t off = lp.offset * H * D;
    FillTokens(seed, TestTensor::kQ, lp.seq, lp.token_begin, lp.token_end, H, D, d.q.data() + off);
    FillTokens(seed, TestTensor::kK, lp.seq, lp.token_begin, lp.token_end, H, D, d.k.data() + off);
    FillTokens(seed, TestTensor::kV, lp.seq, lp.token_begin, lp.token_end, H, D, d.v.data() + off);
    FillTokens(seed, TestTensor::kDo, lp.seq, lp.token_begin, lp.token_end, H, D,
               d.d_o.data() + off);
  }
  return d;
}

StatusOr<ErrorStats> CompareWithReference(const AttentionEngine& engine,
                                          const workload::Batch& batch, uint64_t seed,
                                          const std::vector<float>& o, const std::vector<float>& dq,
                                          const std::vector<float>& dk,
                                          const std::vector<float>& dv) {
  const int H = engine.heads(), D = engine.head_dim();
  const int64_t row = static_cast<int64_t>(H) * D;
  const std::vector<float>* got[4] = {&o, &dq, &dk, &dv};
  TensorError err[4];
  for (const auto& lp : engine.local_placements()) {
    const int64_t L = batch.sequences[lp.seq].tokens;
    std::vector<float> q(L * row), k(L * row), v(L * row), d_o(L * row);
    FillTokens(seed, TestTensor::kQ, lp.seq, 0, L, H, D, q.data());
    FillTokens(seed, TestTensor::kK, lp.seq, 0, L, H, D, k.data());
    FillTokens(seed, TestTensor::kV, lp.seq, 0, L, H, D, v.data());
    FillTokens(seed, TestTensor::kDo, lp.seq, 0, L, H, D, d_o.data());
    std::vector<float> ro(L * row), lse(L * H), rdq(L * row), rdk(L * row), rdv(L * row);
    const int64_t cu[2] = {0, L};
    kernels::AttentionShape shape{.num_heads = H,
                                  .head_dim = D,
                                  .cu_seqlens_q = cu,
                                  .cu_seqlens_k = cu,
                                  .scale = std::nullopt};
    RETURN_IF_ERROR(
        kernels::AttentionForward(shape, q.data(), k.data(), v.data(), ro.data(), lse.data()));
    RETURN_IF_ERROR(kernels::AttentionBackward(shape, q.data(), k.data(), v.data(), ro.data(),
                                               d_o.data(), lse.data(), rdq.data(), rdk.data(),
                                               rdv.data()));
    const std::vector<float>* ref[4] = {&ro, &rdq, &rdk, &rdv};
    for (int t = 0; t < 4; ++t) {
      for (int64_t r = 0; r < lp.size(); ++r)
        for (int64_t e = 0; e < row; ++e) {
          err[t].Add((*got[t])[(lp.offset + r) * row + e],
                     (*ref[t])[(lp.token_begin + r) * row + e]);
        }
    }
  }
  ErrorStats s;
  for (int t = 0; t < 4; ++t) s = WorstOf(s, err[t].Stats());
  return s;
}

StatusOr<ErrorStats> RunEngineCheck(const zellige::Plan& plan, const workload::Batch& batch,
                                    int heads, int head_dim, uint64_t seed,
                                    comm::Communicator* world) {
  ASSIGN_OR_RETURN(auto engine, AttentionEngine::Create(plan, batch, heads, head_dim, world));
  LocalData d = MakeLocalData(*engine, seed);
  const size_t n = d.q.size();
  std::vector<float> o(n), dq(n), dk(n), dv(n);
  ForwardState state;
  RETURN_IF_ERROR(engine->Forward(d.q, d.k, d.v, o, &state));
  RETURN_IF_ERROR(engine->Backward(state, d.q, d.k, d.v, o, d.d_o, dq, dk, dv));
  return CompareWithReference(*engine, batch, seed, o, dq, dk, dv);
}

RandomCase RandomPlan(core::Rng& rng, int num_ranks, int heads, int max_seqs, int64_t min_tokens,
                      int64_t max_tokens) {
  RandomCase c;
  c.plan.planner = "random";
  c.plan.num_ranks = num_ranks;
  const std::vector<zellige::RankBlock> blocks = zellige::AlignedBlocks(num_ranks);
  const int nseq = 1 + static_cast<int>(rng.Below(max_seqs));
  std::vector<int64_t> tokens;
  for (int i = 0; i < nseq; ++i) {
    const zellige::RankBlock& b = blocks[rng.Below(blocks.size())];
    const auto configs = zellige::ConfigsOfDegree(b.size, heads);
    zellige::Placement p;
    p.seq = i;
    p.config = configs[rng.Below(configs.size())];
    p.ranks = b.Ranks();
    const int64_t lo = std::max<int64_t>(min_tokens, b.size);
    tokens.push_back(lo +
                     static_cast<int64_t>(rng.Below(std::max<int64_t>(1, max_tokens - lo + 1))));
    c.plan.placements.push_back(p);
  }
  c.batch = MakeBatch(tokens);
  return c;
}

workload::Batch MakeBatch(const std::vector<int64_t>& tokens) {
  workload::Batch b;
  b.name = "test";
  for (size_t i = 0; i < tokens.size(); ++i) {
    workload::Sequence s;
    s.id = static_cast<int>(i);
    s.tokens = tokens[i];
    b.sequences.push_back(s);
  }
  return b;
}

zellige::Placement MakePlacement(int seq, int q, int h, int k, std::vector<int> ranks) {
  zellige::Placement p;
  p.seq = seq;
  p.config = zellige::ParallelConfig{q, h, k};
  p.ranks = std::move(ranks);
  return p;
}

}  // namespace tessera::zellige::engine
