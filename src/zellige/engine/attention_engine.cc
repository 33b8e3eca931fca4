// AttentionEngine implementation; see attention_engine.h for the algorithm.
#include "zellige/engine/attention_engine.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "kernels/lse_merge.h"
#include "parallel/member_mesh.h"
#include "parallel/shard_gather.h"
#include "parallel/ulysses.h"

namespace tessera::zellige::engine {

using core::Status;
using core::StatusOr;
using zellige::ParallelConfig;

// One sequence of a segment (named, not anonymous: AttentionEngine::SegmentInfo holds them).
struct AttentionSegSeq {
  int placement = 0;
  int64_t tokens = 0;
  int64_t local_offset = 0;  // row of this rank's chunk in the packed local buffers
};
using SegSeq = AttentionSegSeq;

namespace {

// Posts one ring step: receive `recv_floats` from `prev` into `recv` and send `send_floats`
// from `send` to `next`, both with `tag`; the requests are appended to `reqs`.
core::Status PostRingExchange(comm::Communicator* world, int prev, int next, float* recv,
                              size_t recv_floats, const float* send, size_t send_floats, int tag,
                              std::vector<comm::Request>* reqs) {
  ASSIGN_OR_RETURN(comm::Request rr, world->IRecv({recv, recv_floats}, prev, tag));
  reqs->push_back(std::move(rr));
  ASSIGN_OR_RETURN(comm::Request sr, world->ISend({send, send_floats}, next, tag));
  reqs->push_back(std::move(sr));
  return core::Status::Ok();
}

}  // namespace

struct AttentionEngine::SegmentInfo {
  ParallelConfig cfg;
  std::vector<int> ranks;
  int member = 0, hi = 0, qi = 0, ki = 0;
  std::vector<SegSeq> seqs;
  // Config (1,1,1): the rank's whole sequences, contiguous in the local buffers from row
  // seqs[0].local_offset; attention runs on the caller's buffers.
  bool whole() const { return cfg.degree() == 1; }
  comm::Communicator* ulysses = nullptr;  // size h, rank hi (null when h == 1)
  comm::Communicator* gather = nullptr;   // size q, rank qi (null when q == 1)
  int ring_next = 0, ring_prev = 0;       // world ranks (k > 1)
  // Data layouts of this member's Ulysses and gather groups (built in Create when mine).
  parallel::UlyssesLayout ulysses_layout;     // rows: member chunks of super-chunk g()
  parallel::ShardGatherLayout gather_layout;  // rows: super-chunks of ring chunk ki

  int lambda() const { return cfg.degree(); }
  int64_t Begin(int s, int member_index) const {
    return ChunkBegin(seqs[s].tokens, lambda(), member_index);
  }
  int64_t MemberRows(int s, int m) const { return Begin(s, m + 1) - Begin(s, m); }
  // Super-chunk g covers members g*h .. g*h+h-1.
  int64_t SuperBegin(int s, int g) const { return Begin(s, g * cfg.h); }
  int64_t SuperRows(int s, int g) const { return Begin(s, (g + 1) * cfg.h) - SuperBegin(s, g); }
  // Ring chunk c covers super-chunks c*q .. c*q+q-1.
  int64_t RingBegin(int s, int c) const { return Begin(s, c * cfg.q * cfg.h); }
  int64_t RingRows(int s, int c) const {
    return Begin(s, (c + 1) * cfg.q * cfg.h) - RingBegin(s, c);
  }
  int g() const { return ki * cfg.q + qi; }
  std::vector<int64_t> CuSuper(int gg) const {
    std::vector<int64_t> cu{0};
    for (int s = 0; s < static_cast<int>(seqs.size()); ++s)
      cu.push_back(cu.back() + SuperRows(s, gg));
    return cu;
  }
  std::vector<int64_t> CuRing(int c) const {
    std::vector<int64_t> cu{0};
    for (int s = 0; s < static_cast<int>(seqs.size()); ++s)
      cu.push_back(cu.back() + RingRows(s, c));
    return cu;
  }
};

namespace {

using Seg = AttentionEngine::SegmentInfo;

// The Ulysses layout (members g*h + 0..h-1 of super-chunk g) and the gather layout (super-
// chunks ki*q + 0..q-1 of ring chunk ki) of this member.
void BuildLayouts(int64_t heads, int64_t head_dim, Seg* s) {
  const int nseq = static_cast<int>(s->seqs.size());
  const int h = s->cfg.h, q = s->cfg.q;
  parallel::UlyssesLayout& u = s->ulysses_layout;
  u.shards.rows.assign(h, std::vector<int64_t>(nseq));
  for (int m = 0; m < h; ++m)
    for (int x = 0; x < nseq; ++x) u.shards.rows[m][x] = s->MemberRows(x, s->g() * h + m);
  u.member = s->hi;
  u.heads = heads;
  u.head_dim = head_dim;
  u.local_row_offsets.clear();
  for (const SegSeq& ss : s->seqs) u.local_row_offsets.push_back(ss.local_offset);
  parallel::ShardGatherLayout& ga = s->gather_layout;
  ga.shards.rows.assign(q, std::vector<int64_t>(nseq));
  for (int m = 0; m < q; ++m)
    for (int x = 0; x < nseq; ++x) ga.shards.rows[m][x] = s->SuperRows(x, s->ki * q + m);
  ga.member = s->qi;
  ga.row_floats = (heads / h) * head_dim;
}

int64_t MaxRingRows(const Seg& s) {
  int64_t m = 0;
  for (int c = 0; c < s.cfg.k; ++c) m = std::max(m, s.CuRing(c).back());
  return m;
}

}  // namespace

AttentionEngine::~AttentionEngine() = default;

int AttentionEngine::num_local_segments() const { return static_cast<int>(segments_.size()); }

StatusOr<std::unique_ptr<AttentionEngine>> AttentionEngine::Create(const zellige::Plan& plan,
                                                                   const workload::Batch& batch,
                                                                   int heads, int head_dim,
                                                                   comm::Communicator* world,
                                                                   Options options) {
  if (world == nullptr) return core::InvalidArgument("AttentionEngine: world is null");
  if (heads < 1) {
    return core::InvalidArgument("AttentionEngine: heads = " + std::to_string(heads) +
                                 ", must be >= 1");
  }
  if (head_dim < 1) {
    return core::InvalidArgument("AttentionEngine: head_dim = " + std::to_string(head_dim) +
                                 ", must be >= 1");
  }
  if (plan.num_ranks != world->size()) {
    return core::InvalidArgument("plan num_ranks = " + std::to_string(plan.num_ranks) +
                                 " but the job has " + std::to_string(world->size()) +
                                 " ranks; they must be equal");
  }
  RETURN_IF_ERROR(zellige::ValidatePlan(plan, batch, heads));
  auto e = std::unique_ptr<AttentionEngine>(new AttentionEngine());
  e->heads_ = heads;
  e->head_dim_ = head_dim;
  e->world_ = world;
  e->options_ = options;
  const int me = world->rank();

  // Global segment list: first appearance in issue order of each (config, ranks).
  std::vector<std::unique_ptr<SegmentInfo>> all;
  std::map<std::pair<std::vector<int>, std::vector<int>>, int> index;
  for (int p : zellige::IssueOrder(plan)) {
    const auto& pl = plan.placements[p];
    auto key = std::make_pair(std::vector<int>{pl.config.q, pl.config.h, pl.config.k}, pl.ranks);
    auto [it, inserted] = index.emplace(key, static_cast<int>(all.size()));
    if (inserted) {
      auto s = std::make_unique<SegmentInfo>();
      s->cfg = pl.config;
      s->ranks = pl.ranks;
      all.push_back(std::move(s));
    }
    SegSeq ss;
    ss.placement = p;
    ss.tokens = batch.sequences[pl.seq].tokens;
    ss.local_offset = -1;
    all[it->second]->seqs.push_back(ss);
  }

  // Local placements in execution order: segment by segment, so each segment's rows are
  // contiguous in the packed local buffers.
  for (auto& sp : all) {
    auto it = std::find(sp->ranks.begin(), sp->ranks.end(), me);
    if (it == sp->ranks.end()) continue;
    const int member = static_cast<int>(it - sp->ranks.begin());
    for (SegSeq& ss : sp->seqs) {
      const auto& pl = plan.placements[ss.placement];
      LocalPlacement lp;
      lp.placement = ss.placement;
      lp.seq = pl.seq;
      lp.member = member;
      lp.token_begin = ChunkBegin(ss.tokens, pl.config.degree(), member);
      lp.token_end = ChunkBegin(ss.tokens, pl.config.degree(), member + 1);
      lp.offset = e->local_tokens_;
      e->local_tokens_ += lp.size();
      ss.local_offset = lp.offset;
      e->local_.push_back(lp);
    }
  }

  // Sub-communicators, in the global segment order on every rank.
  for (auto& sp : all) {
    SegmentInfo& s = *sp;
    auto it = std::find(s.ranks.begin(), s.ranks.end(), me);
    const bool mine = it != s.ranks.end();
    if (mine) {
      s.member = static_cast<int>(it - s.ranks.begin());
      s.hi = s.member % s.cfg.h;
      s.qi = (s.member / s.cfg.h) % s.cfg.q;
      s.ki = s.member / (s.cfg.h * s.cfg.q);
    }
    const parallel::MemberMesh mesh{.h = s.cfg.h, .q = s.cfg.q, .k = s.cfg.k};
    if (mine && s.cfg.h > 1) {
      ASSIGN_OR_RETURN(s.ulysses, world->Sub(mesh.UlyssesRanks(s.ranks, s.qi, s.ki)));
    }
    if (mine && s.cfg.q > 1) {
      ASSIGN_OR_RETURN(s.gather, world->Sub(mesh.GatherRanks(s.ranks, s.hi, s.ki)));
    }
    if (mine) {
      s.ring_next = s.ranks[mesh.RingNext(s.member)];
      s.ring_prev = s.ranks[mesh.RingPrev(s.member)];
      if (!s.whole()) BuildLayouts(heads, head_dim, &s);
      e->segments_.push_back(std::move(sp));
    }
  }
  return e;
}

namespace {

// The varlen shape of a whole-sequence segment: all H heads, queries and keys alike.
kernels::AttentionShape WholeShape(int64_t heads, int64_t head_dim,
                                   const std::vector<int64_t>& cu) {
  return {.num_heads = heads,
          .head_dim = head_dim,
          .cu_seqlens_q = cu,
          .cu_seqlens_k = cu,
          .scale = std::nullopt};
}

Status CheckSize(const char* name, size_t got, int64_t want) {
  if (static_cast<int64_t>(got) != want) {
    return core::InvalidArgument(std::string("AttentionEngine: ") + name + " has " +
                                 std::to_string(got) +
                                 " floats, expected local_tokens*H*D = " + std::to_string(want));
  }
  return Status::Ok();
}

// An engine buffer of `floats` fp32 values from the engine's allocator (empty when 0).
core::StatusOr<runtime::DeviceTensor> Buffer(runtime::DeviceAllocator& mem, int64_t floats,
                                             const std::string& name) {
  return runtime::AllocateWorkspaceF32(mem, floats, name);
}

// One Ulysses all-to-all of segment `s`, its staging taken from the engine's allocator for the
// call.
Status Ulysses(parallel::UlyssesDirection direction, const AttentionEngine::SegmentInfo& s,
               const std::vector<const float*>& in, const std::vector<float*>& out,
               runtime::DeviceAllocator& mem) {
  ASSIGN_OR_RETURN(parallel::OwnedUlyssesStaging staging,
                   parallel::AllocateUlyssesStaging(s.ulysses, s.ulysses_layout,
                                                    static_cast<int>(in.size()), direction, mem));
  return direction == parallel::UlyssesDirection::kScatter
             ? parallel::UlyssesScatter(s.ulysses, s.ulysses_layout, in, out, staging.view())
             : parallel::UlyssesGather(s.ulysses, s.ulysses_layout, in, out, staging.view());
}

}  // namespace

Status AttentionEngine::Forward(std::span<const float> q, std::span<const float> k,
                                std::span<const float> v, std::span<float> o, ForwardState* state) {
  const int64_t H = heads_, D = head_dim_, want = local_tokens_ * H * D;
  RETURN_IF_ERROR(CheckSize("q", q.size(), want));
  RETURN_IF_ERROR(CheckSize("k", k.size(), want));
  RETURN_IF_ERROR(CheckSize("v", v.size(), want));
  RETURN_IF_ERROR(CheckSize("o", o.size(), want));
  if (state == nullptr) return core::InvalidArgument("AttentionEngine: state is null");
  state->segments.clear();
  runtime::DeviceAllocator& mem = memory_;
  for (auto& sp : segments_) {
    const SegmentInfo& s = *sp;
    const int64_t Hh = H / s.cfg.h, hd = Hh * D;
    const std::vector<int64_t> cu_q = s.CuSuper(s.g());
    const int64_t t_super = cu_q.back();
    const int64_t t_ring = s.CuRing(s.ki).back();
    ForwardState::Segment st;
    if (s.whole()) {
      ASSIGN_OR_RETURN(st.lse, Buffer(mem, t_super * H, "attn.lse"));
      const int64_t base = s.seqs.front().local_offset * H * D;
      const kernels::AttentionShape shape = WholeShape(H, D, cu_q);
      RETURN_IF_ERROR(kernels::AttentionForward(shape, q.data() + base, k.data() + base,
                                                v.data() + base, o.data() + base, st.lse.f32(),
                                                options_.tiling));
      state->segments.push_back(std::move(st));
      continue;
    }
    ASSIGN_OR_RETURN(st.q_h, Buffer(mem, t_super * hd, "attn.q_h"));
    ASSIGN_OR_RETURN(st.kv_ring, Buffer(mem, 2 * t_ring * hd, "attn.kv_ring"));
    ASSIGN_OR_RETURN(st.o_h, Buffer(mem, t_super * hd, "attn.o_h"));
    ASSIGN_OR_RETURN(st.lse, Buffer(mem, t_super * Hh, "attn.lse"));
    {
      ASSIGN_OR_RETURN(runtime::DeviceTensor k_h, Buffer(mem, t_super * hd, "attn.k_h"));
      ASSIGN_OR_RETURN(runtime::DeviceTensor v_h, Buffer(mem, t_super * hd, "attn.v_h"));
      RETURN_IF_ERROR(Ulysses(parallel::UlyssesDirection::kScatter, s,
                              {q.data(), k.data(), v.data()}, {st.q_h.f32(), k_h.f32(), v_h.f32()},
                              mem));
      // kv_ring: K then V of ring chunk ki, each (T_ring, H/h, D).
      RETURN_IF_ERROR(parallel::AllGatherShards(s.gather, s.gather_layout, {k_h.f32(), v_h.f32()},
                                                {st.kv_ring.f32(), st.kv_ring.f32() + t_ring * hd},
                                                &mem));
    }
    // Ring over k (k == 1: one local varlen call).
    const int kk = s.cfg.k;
    runtime::DeviceTensor cur, nxt, o_p, lse_p;
    if (kk > 1) {
      const int64_t max_rows = MaxRingRows(s);
      ASSIGN_OR_RETURN(cur, Buffer(mem, 2 * max_rows * hd, "attn.cur"));
      ASSIGN_OR_RETURN(nxt, Buffer(mem, 2 * max_rows * hd, "attn.nxt"));
      ASSIGN_OR_RETURN(o_p, Buffer(mem, t_super * hd, "attn.o_p"));
      ASSIGN_OR_RETURN(lse_p, Buffer(mem, t_super * Hh, "attn.lse_p"));
      std::memcpy(cur.f32(), st.kv_ring.f32(), sizeof(float) * 2 * t_ring * hd);
    }
    for (int step = 0; step < kk; ++step) {
      const int c = ((s.ki - step) % kk + kk) % kk;
      const std::vector<int64_t> cu_k = s.CuRing(c);
      const int64_t t_k = cu_k.back();
      const float* kv = kk > 1 ? cur.f32() : st.kv_ring.f32();
      std::vector<comm::Request> reqs;
      if (step + 1 < kk) {
        const int64_t n_next = s.CuRing(((c - 1) % kk + kk) % kk).back();
        RETURN_IF_ERROR(PostRingExchange(world_, s.ring_prev, s.ring_next, nxt.f32(),
                                         static_cast<size_t>(2 * n_next * hd), cur.f32(),
                                         static_cast<size_t>(2 * t_k * hd), kTagKv, &reqs));
      }
      kernels::AttentionShape shape{.num_heads = Hh,
                                    .head_dim = D,
                                    .cu_seqlens_q = cu_q,
                                    .cu_seqlens_k = cu_k,
                                    .scale = std::nullopt};
      if (step == 0) {
        RETURN_IF_ERROR(kernels::AttentionForward(shape, st.q_h.f32(), kv, kv + t_k * hd,
                                                  st.o_h.f32(), st.lse.f32(), options_.tiling));
      } else {
        RETURN_IF_ERROR(kernels::AttentionForward(shape, st.q_h.f32(), kv, kv + t_k * hd, o_p.f32(),
                                                  lse_p.f32(), options_.tiling));
        RETURN_IF_ERROR(kernels::MergeAttentionPartialsInPlace(
            t_super, Hh, D, st.o_h.f32(), st.lse.f32(), o_p.f32(), lse_p.f32()));
      }
      RETURN_IF_ERROR(comm::WaitAll(reqs));
      if (step + 1 < kk) std::swap(cur, nxt);
    }
    RETURN_IF_ERROR(
        Ulysses(parallel::UlyssesDirection::kGather, s, {st.o_h.f32()}, {o.data()}, mem));
    state->segments.push_back(std::move(st));
  }
  return Status::Ok();
}

Status AttentionEngine::Backward(const ForwardState& state, std::span<const float> q,
                                 std::span<const float> k, std::span<const float> v,
                                 std::span<const float> o, std::span<const float> d_o,
                                 std::span<float> dq, std::span<float> dk, std::span<float> dv) {
  const int64_t H = heads_, D = head_dim_, want = local_tokens_ * H * D;
  RETURN_IF_ERROR(CheckSize("q", q.size(), want));
  RETURN_IF_ERROR(CheckSize("k", k.size(), want));
  RETURN_IF_ERROR(CheckSize("v", v.size(), want));
  RETURN_IF_ERROR(CheckSize("o", o.size(), want));
  RETURN_IF_ERROR(CheckSize("d_o", d_o.size(), want));
  RETURN_IF_ERROR(CheckSize("dq", dq.size(), want));
  RETURN_IF_ERROR(CheckSize("dk", dk.size(), want));
  RETURN_IF_ERROR(CheckSize("dv", dv.size(), want));
  if (state.segments.size() != segments_.size()) {
    return core::InvalidArgument("AttentionEngine::Backward: state has " +
                                 std::to_string(state.segments.size()) + " segments, expected " +
                                 std::to_string(segments_.size()) + " (run Forward first)");
  }
  runtime::DeviceAllocator& mem = memory_;
  for (size_t si = 0; si < segments_.size(); ++si) {
    const SegmentInfo& s = *segments_[si];
    const ForwardState::Segment& st = state.segments[si];
    const int64_t Hh = H / s.cfg.h, hd = Hh * D;
    const std::vector<int64_t> cu_q = s.CuSuper(s.g());
    const int64_t t_super = cu_q.back();
    if (s.whole()) {
      const int64_t base = s.seqs.front().local_offset * H * D;
      const kernels::AttentionShape shape = WholeShape(H, D, cu_q);
      kernels::AttentionBackwardOptions bo;
      bo.tiling = options_.tiling;
      RETURN_IF_ERROR(kernels::AttentionBackward(shape, q.data() + base, k.data() + base,
                                                 v.data() + base, o.data() + base,
                                                 d_o.data() + base, st.lse.f32(), dq.data() + base,
                                                 dk.data() + base, dv.data() + base, bo));
      continue;
    }
    const int64_t t_ring = s.CuRing(s.ki).back();
    ASSIGN_OR_RETURN(runtime::DeviceTensor do_h, Buffer(mem, t_super * hd, "attn.do_h"));
    ASSIGN_OR_RETURN(runtime::DeviceTensor dq_h, Buffer(mem, t_super * hd, "attn.dq_h"));
    RETURN_IF_ERROR(
        Ulysses(parallel::UlyssesDirection::kScatter, s, {d_o.data()}, {do_h.f32()}, mem));
    const int kk = s.cfg.k;
    const int64_t max_rows = MaxRingRows(s);
    // cur: K/V held now; dcur: the dK/dV accumulating for it (travels with it).
    runtime::DeviceTensor cur, nxt, dnxt;
    ASSIGN_OR_RETURN(runtime::DeviceTensor dcur, Buffer(mem, 2 * max_rows * hd, "attn.dcur"));
    if (kk > 1) {
      ASSIGN_OR_RETURN(cur, Buffer(mem, 2 * max_rows * hd, "attn.cur"));
      ASSIGN_OR_RETURN(nxt, Buffer(mem, 2 * max_rows * hd, "attn.nxt"));
      ASSIGN_OR_RETURN(dnxt, Buffer(mem, 2 * max_rows * hd, "attn.dnxt"));
      std::memcpy(cur.f32(), st.kv_ring.f32(), sizeof(float) * 2 * t_ring * hd);
    }
    for (int step = 0; step < kk; ++step) {
      const int c = ((s.ki - step) % kk + kk) % kk;
      const int cprev = ((c - 1) % kk + kk) % kk;
      const std::vector<int64_t> cu_k = s.CuRing(c);
      const int64_t t_k = cu_k.back();
      const float* kv = kk > 1 ? cur.f32() : st.kv_ring.f32();
      std::vector<comm::Request> reqs;
      if (step + 1 < kk) {
        const int64_t n_next = s.CuRing(cprev).back();
        RETURN_IF_ERROR(PostRingExchange(world_, s.ring_prev, s.ring_next, nxt.f32(),
                                         static_cast<size_t>(2 * n_next * hd), cur.f32(),
                                         static_cast<size_t>(2 * t_k * hd), kTagKv, &reqs));
      }
      kernels::AttentionShape shape{.num_heads = Hh,
                                    .head_dim = D,
                                    .cu_seqlens_q = cu_q,
                                    .cu_seqlens_k = cu_k,
                                    .scale = std::nullopt};
      kernels::AttentionBackwardOptions bo;
      bo.tiling = options_.tiling;
      bo.accumulate_dq = step > 0;
      bo.accumulate_dkv = step > 0;  // step 0 writes this chunk's first contribution
      RETURN_IF_ERROR(kernels::AttentionBackward(shape, st.q_h.f32(), kv, kv + t_k * hd,
                                                 st.o_h.f32(), do_h.f32(), st.lse.f32(), dq_h.f32(),
                                                 dcur.f32(), dcur.f32() + t_k * hd, bo));
      if (kk > 1) {
        // dK/dV of chunk c go on to the next member (after the last step: home to owner c).
        const int64_t n_in = s.CuRing(cprev).back();
        RETURN_IF_ERROR(PostRingExchange(world_, s.ring_prev, s.ring_next, dnxt.f32(),
                                         static_cast<size_t>(2 * n_in * hd), dcur.f32(),
                                         static_cast<size_t>(2 * t_k * hd), kTagDkv, &reqs));
      }
      RETURN_IF_ERROR(comm::WaitAll(reqs));
      if (kk > 1) {
        std::swap(dcur, dnxt);
        if (step + 1 < kk) std::swap(cur, nxt);
      }
    }
    // dcur now holds the complete dK/dV of ring chunk ki: layout K part (t_ring rows) then V.
    ASSIGN_OR_RETURN(runtime::DeviceTensor dk_h, Buffer(mem, t_super * hd, "attn.dk_h"));
    ASSIGN_OR_RETURN(runtime::DeviceTensor dv_h, Buffer(mem, t_super * hd, "attn.dv_h"));
    RETURN_IF_ERROR(parallel::ReduceScatterShards(s.gather, s.gather_layout,
                                                  {dcur.f32(), dcur.f32() + t_ring * hd},
                                                  {dk_h.f32(), dv_h.f32()}, &mem));
    RETURN_IF_ERROR(Ulysses(parallel::UlyssesDirection::kGather, s,
                            {dq_h.f32(), dk_h.f32(), dv_h.f32()}, {dq.data(), dk.data(), dv.data()},
                            mem));
  }
  return Status::Ok();
}

}  // namespace tessera::zellige::engine
