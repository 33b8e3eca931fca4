// Sequence-parallel (Ulysses) models::TinyDit forward; see sp_dit.h.
#include "xema/pipeline/sp_dit.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "comm/broadcast_result.h"
#include "core/fnv64.h"
#include "parallel/sequence_shards.h"
#include "parallel/ulysses.h"

namespace tessera::xema {
namespace {

// FNV-1a over what every member must pass alike: shapes (latents too), execution, the model's
// sizes and t.
int64_t SpInputFingerprint(const models::TinyDit& dit, const models::TinyDit::Input& in,
                           const models::DitRows& all, const models::DitExecution& execution) {
  const models::SmallDitConfig& c = dit.config();
  const bool has_pool = in.pool_ctx != nullptr && !in.pool_ctx->empty();
  const std::array<int64_t, 14> values = {all.batch,
                                          in.latents,
                                          all.text_tokens,
                                          all.image_tokens,
                                          has_pool ? 1 : 0,
                                          static_cast<int64_t>(execution.attention),
                                          execution.attention_chunks,
                                          execution.ffn_chunks,
                                          c.hidden,
                                          c.num_heads,
                                          c.num_layers,
                                          c.ffn_hidden,
                                          c.in_channels,
                                          std::bit_cast<int32_t>(in.t)};
  core::Fnv64 hash;
  for (const int64_t v : values) hash.I64(v);
  return static_cast<int64_t>(hash.value());
}

// Collective: every member's status code (and fingerprint) goes to all. OK when every member
// is OK with the same fingerprint; else every member returns the same status: the first
// failing member's (broadcast from it, prefixed "sp member j of d"), or InvalidArgument when
// the fingerprints differ.
core::Status SpAgree(comm::Communicator& group, const core::Status& local, int64_t fingerprint) {
  const int d = group.size();
  const std::array<int64_t, 2> mine = {static_cast<int64_t>(local.code()), fingerprint};
  std::vector<int64_t> all(2 * static_cast<size_t>(d));
  RETURN_IF_ERROR(group.AllGather(std::span<const int64_t>(mine), std::span<int64_t>(all)));
  int failed = -1;
  for (int j = 0; j < d && failed < 0; ++j) {
    if (all[2 * j] != static_cast<int64_t>(core::StatusCode::kOk)) failed = j;
  }
  if (failed < 0) {
    for (int j = 1; j < d; ++j) {
      if (all[2 * j + 1] != all[1]) {
        return core::InvalidArgument(fmt::format(
            "SequenceParallelForward: sp member {} of {} passed another input or execution than "
            "member 0 (batch, latents, tokens, pooled context, attention mode and chunks, FFN "
            "chunks, model sizes, t); every member must pass the same",
            j, d));
      }
    }
    return core::Status::Ok();
  }
  const core::StatusOr<std::string> on_root =
      local.ok() ? core::StatusOr<std::string>(std::string()) : core::StatusOr<std::string>(local);
  const core::StatusOr<std::string> got = comm::BroadcastResult(group, failed, on_root);
  if (got.ok()) {
    return core::Internal(fmt::format(
        "SequenceParallelForward: sp member {} of {} reported a failure but sent none", failed, d));
  }
  return got.status().WithPrefix(fmt::format("sp member {} of {}", failed, d));
}

// Local checks of SequenceParallelForward (before the members agree).
core::Status SpValidate(const models::TinyDit& dit, const comm::Communicator* group, int member,
                        const models::TinyDit::Input& in, const models::DitExecution& execution) {
  const int d = group == nullptr ? 1 : group->size();
  if (member != (group == nullptr ? 0 : group->rank())) {
    return core::InvalidArgument(fmt::format(
        "SequenceParallelForward: member = {}, must be this rank of the sp group ({}{})", member,
        group == nullptr ? 0 : group->rank(),
        group == nullptr ? ", no group: a single member" : ""));
  }
  RETURN_IF_ERROR(
      models::DitStages::Validate(dit, in, execution).WithPrefix("SequenceParallelForward"));
  const int64_t heads = dit.config().num_heads;
  if (heads % d != 0) {
    return core::InvalidArgument(fmt::format(
        "SequenceParallelForward: sp_degree = {} does not divide the DiT's num_heads = {} "
        "(Ulysses gives each member heads / sp_degree heads); use an sp_degree dividing {}",
        d, heads, heads));
  }
  const models::DitRows all = models::DitStages::AllRows(in);
  if (all.seq_len() < d) {
    return core::InvalidArgument(fmt::format(
        "SequenceParallelForward: sp_degree = {} exceeds the joint sequence length L = {} ({} "
        "text + {} image tokens); every member needs >= 1 row of each sequence",
        d, all.seq_len(), all.text_tokens, all.image_tokens));
  }
  return core::Status::Ok();
}

// The workspaces of one block on a member (see the file comment of sp_dit.h), allocated in
// this order.
struct SpBlockBuffers {
  runtime::DeviceTensor mod, norm, rstd, modx, q, k, v, ffn, q_heads, k_heads, v_heads, o_heads,
      att;
};

struct SpSizes {
  int64_t local = 0;          // B r_m: this member's rows
  int64_t staging_rows = 0;   // B ceil(L / d): "norm" and "modx" rows
  int64_t ffn_rows = 0;       // models::FfnChunkRows(local, ffn_chunks)
  int64_t split_floats = 0;   // B L Hd / d: one head-split tensor
  int64_t att_floats = 0;     // lse or scores
  const char* att_what = "";  // "lse" or "scores"
};

core::Status SpAllocateBlock(runtime::DeviceAllocator& allocator, const std::string& name,
                             const models::SmallDitConfig& c, int64_t batch, const SpSizes& z,
                             SpBlockBuffers* b) {
  auto ws = [&](int64_t count, const char* what) {
    return allocator.AllocateF32(count, fmt::format("{}.{}", name, what), TensorKind::kWorkspace);
  };
  const int64_t hd = c.hidden;
  ASSIGN_OR_RETURN(b->mod, ws(batch * 6 * hd, "mod"));
  ASSIGN_OR_RETURN(b->norm, ws(z.staging_rows * hd, "norm"));
  ASSIGN_OR_RETURN(b->rstd, ws(z.local, "rstd"));
  ASSIGN_OR_RETURN(b->modx, ws(z.staging_rows * hd, "modx"));
  ASSIGN_OR_RETURN(b->q, ws(z.local * hd, "q"));
  ASSIGN_OR_RETURN(b->k, ws(z.local * hd, "k"));
  ASSIGN_OR_RETURN(b->v, ws(z.local * hd, "v"));
  ASSIGN_OR_RETURN(b->ffn, ws(z.ffn_rows * c.ffn_hidden, "ffn"));
  ASSIGN_OR_RETURN(b->q_heads, ws(z.split_floats, "q_heads"));
  ASSIGN_OR_RETURN(b->k_heads, ws(z.split_floats, "k_heads"));
  ASSIGN_OR_RETURN(b->v_heads, ws(z.split_floats, "v_heads"));
  ASSIGN_OR_RETURN(b->o_heads, ws(z.split_floats, "o_heads"));
  ASSIGN_OR_RETURN(b->att, ws(z.att_floats, z.att_what));
  return core::Status::Ok();
}

// One member's pass over the group (d > 1): its inputs, the rows it holds and its buffers'
// sizes, and the Ulysses layout over the members.
struct SpPass {
  SpPass(const models::TinyDit& dit_in, runtime::DeviceAllocator& allocator_in,
         comm::Communicator* group_in, const models::TinyDit::Input& input,
         const models::DitExecution& execution_in, const runtime::OpContext& context_in)
      : dit(dit_in),
        allocator(allocator_in),
        group(group_in),
        in(input),
        execution(execution_in),
        context(context_in) {}

  const models::TinyDit& dit;
  runtime::DeviceAllocator& allocator;
  comm::Communicator* group;
  const models::TinyDit::Input& in;
  const models::DitExecution& execution;
  const runtime::OpContext& context;
  int d = 1;
  models::DitRows all, mine;  // every member's rows; this member's
  SpSizes z;
  parallel::UlyssesLayout layout;
};

// Op "dit.embed": *cond := the conditioning, *h := this member's embedded rows.
core::Status SpEmbed(const SpPass& s, runtime::DeviceTensor* h, runtime::DeviceTensor* cond) {
  const models::SmallDitConfig& c = s.dit.config();
  const int64_t hd = c.hidden, ft = c.timestep_freq_dim;
  runtime::DeviceAllocator& allocator = s.allocator;
  runtime::OpScope op(allocator, "dit.embed", s.context);
  runtime::DeviceTensor temb;
  const core::Status st = [&]() -> core::Status {
    ASSIGN_OR_RETURN(temb,
                     allocator.AllocateF32(ft + 3 * hd, "dit.embed.temb", TensorKind::kWorkspace));
    ASSIGN_OR_RETURN(*cond,
                     allocator.AllocateF32(s.all.batch * hd, "dit.cond", TensorKind::kActivation));
    ASSIGN_OR_RETURN(*h, allocator.AllocateF32(s.z.local * hd, "dit.h", TensorKind::kActivation));
    models::DitStages::Condition(s.dit, s.in, temb.f32(), cond->f32());
    models::DitStages::Embed(s.dit, s.in, s.mine, temb.f32() + ft + 2 * hd, h->f32());
    return models::DitStages::FinishEmbed(s.in);
  }();
  RETURN_IF_ERROR(SpAgree(*s.group, st, 0));
  const models::DitCost cost = models::DitStages::EmbedCost(s.dit, s.mine, s.in.latents);
  op.Count(cost.flops, cost.bytes);
  return core::Status::Ok();
}

// Op "dit.block<l>": block l on this member's rows of *h, attention over the heads it holds
// after the all-to-all.
core::Status SpBlock(const SpPass& s, int64_t l, const runtime::DeviceTensor& cond,
                     runtime::DeviceTensor* h) {
  const models::SmallDitConfig& c = s.dit.config();
  const int64_t b_n = s.all.batch, l_n = s.all.seq_len(), heads_local = c.num_heads / s.d;
  const std::string name = fmt::format("dit.block{}", l);
  runtime::OpScope op(s.allocator, name, s.context);
  SpBlockBuffers b;
  RETURN_IF_ERROR(SpAgree(*s.group, SpAllocateBlock(s.allocator, name, c, b_n, s.z, &b), 0));
  models::DitStages::BlockQkv(s.dit, l, s.mine, cond.f32(), h->f32(), b.mod.f32(), b.norm.f32(),
                              b.rstd.f32(), b.modx.f32(), b.q.f32(), b.k.f32(), b.v.f32());
  // norm and modx are dead until the output projection: they hold the all-to-all staging.
  const parallel::UlyssesStaging staging{b.norm.f32_span(), b.modx.f32_span()};
  for (auto [local, split] :
       {std::pair{&b.q, &b.q_heads}, std::pair{&b.k, &b.k_heads}, std::pair{&b.v, &b.v_heads}}) {
    RETURN_IF_ERROR(
        parallel::UlyssesScatter(s.group, s.layout, {local->f32()}, {split->f32()}, staging));
  }
  RETURN_IF_ERROR(models::DitStages::Attention(s.execution, name, b_n, l_n, heads_local,
                                               c.head_dim(), b.q_heads.f32(), b.k_heads.f32(),
                                               b.v_heads.f32(), b.o_heads.f32(), b.att.f32()));
  RETURN_IF_ERROR(
      parallel::UlyssesGather(s.group, s.layout, {b.o_heads.f32()}, {b.q.f32()}, staging));
  models::DitStages::BlockOutFfn(s.dit, l, s.mine, b.mod.f32(), b.q.f32(), s.z.ffn_rows, h->f32(),
                                 b.norm.f32(), b.rstd.f32(), b.modx.f32(), b.ffn.f32());
  const models::DitCost cost = models::DitStages::BlockCost(s.dit, s.mine, heads_local);
  op.Count(cost.flops, cost.bytes);
  return core::Status::Ok();
}

// Op "dit.final": this member's image rows through the final layer, gathered from every
// member into "dit.out" (B, N, C_in); frees *h and *cond.
core::StatusOr<runtime::DeviceTensor> SpFinal(const SpPass& s, runtime::DeviceTensor* h,
                                              runtime::DeviceTensor* cond) {
  const models::SmallDitConfig& c = s.dit.config();
  const int64_t hd = c.hidden, cin = c.in_channels;
  const int64_t b_n = s.all.batch, n = s.all.image_tokens;
  const int d = s.d;
  runtime::DeviceAllocator& allocator = s.allocator;
  runtime::OpScope op(allocator, "dit.final", s.context);
  const int64_t img = s.mine.image_per_seq();
  runtime::DeviceTensor fmod, norm, rstd, modx, rows_out, out;
  const core::Status st = [&]() -> core::Status {
    auto fws = [&](int64_t count, const char* what) {
      return allocator.AllocateF32(count, fmt::format("dit.final.{}", what),
                                   TensorKind::kWorkspace);
    };
    ASSIGN_OR_RETURN(fmod, fws(b_n * 2 * hd, "mod"));
    if (img > 0) {
      ASSIGN_OR_RETURN(norm, fws(b_n * img * hd, "norm"));
      ASSIGN_OR_RETURN(rstd, fws(b_n * img, "rstd"));
      ASSIGN_OR_RETURN(modx, fws(b_n * img * hd, "modx"));
      ASSIGN_OR_RETURN(rows_out, fws(b_n * img * cin, "rows"));
    }
    ASSIGN_OR_RETURN(out, allocator.AllocateF32(b_n * n * cin, "dit.out", TensorKind::kActivation));
    return core::Status::Ok();
  }();
  RETURN_IF_ERROR(SpAgree(*s.group, st, 0));
  models::DitStages::Final(s.dit, s.mine, h->f32(), cond->f32(), fmod.f32(), norm.f32(), rstd.f32(),
                           modx.f32(), rows_out.f32());
  // Each sequence's image rows, member after member, are that sequence's rows of "dit.out".
  std::vector<int64_t> counts(static_cast<size_t>(d)), displs(static_cast<size_t>(d));
  int64_t pos = 0;
  for (int j = 0; j < d; ++j) {
    counts[j] = SpRowsOf(b_n, s.all.text_tokens, n, d, j).image_per_seq() * cin;
    displs[j] = pos;
    pos += counts[j];
  }
  float no_rows = 0.0f;  // a valid address for a member without image rows
  for (int64_t q = 0; q < b_n; ++q) {
    const float* send = img > 0 ? rows_out.f32() + q * img * cin : &no_rows;
    RETURN_IF_ERROR(s.group->AllGatherV(
        std::span<const float>(send, static_cast<size_t>(img * cin)),
        std::span<float>(out.f32() + q * n * cin, static_cast<size_t>(n * cin)), counts, displs));
  }
  h->Reset();
  cond->Reset();
  const models::DitCost cost = models::DitStages::FinalCost(s.dit, s.mine);
  op.Count(cost.flops, cost.bytes);
  return out;
}

}  // namespace

models::DitRows SpRowsOf(int64_t batch, int64_t text_tokens, int64_t image_tokens, int d,
                         int member) {
  models::DitRows rows;
  rows.batch = batch;
  rows.text_tokens = text_tokens;
  rows.image_tokens = image_tokens;
  const int64_t l_n = rows.seq_len(), base = l_n / d, extra = l_n % d;
  rows.begin = member * base + std::min<int64_t>(member, extra);
  rows.end = rows.begin + base + (member < extra ? 1 : 0);
  return rows;
}

core::StatusOr<runtime::DeviceTensor> SequenceParallelForward(const models::TinyDit& dit,
                                                              runtime::DeviceAllocator& allocator,
                                                              comm::Communicator* group, int member,
                                                              const models::TinyDit::Input& in,
                                                              const models::DitExecution& execution,
                                                              const runtime::OpContext& context) {
  const int d = group == nullptr ? 1 : group->size();
  const core::Status valid = SpValidate(dit, group, member, in, execution);
  if (d == 1) {
    RETURN_IF_ERROR(valid);
    return dit.Forward(allocator, in, execution, context);
  }
  const models::DitRows all = models::DitStages::AllRows(in);
  RETURN_IF_ERROR(
      SpAgree(*group, valid, valid.ok() ? SpInputFingerprint(dit, in, all, execution) : 0));

  const models::SmallDitConfig& c = dit.config();
  const int64_t heads = c.num_heads, heads_local = heads / d;
  const int64_t b_n = all.batch, n = all.image_tokens, l_n = all.seq_len();
  SpPass s(dit, allocator, group, in, execution, context);
  s.d = d;
  s.all = all;
  s.mine = SpRowsOf(b_n, all.text_tokens, n, d, member);
  s.z.local = s.mine.local();
  s.z.staging_rows = b_n * ((l_n + d - 1) / d);
  s.z.ffn_rows = models::FfnChunkRows(s.z.local, execution.ffn_chunks);
  s.z.split_floats = b_n * l_n * heads_local * c.head_dim();
  s.z.att_floats =
      models::DitStages::AttentionWorkspaceFloats(execution, b_n, l_n, heads_local, &s.z.att_what);

  s.layout.shards.rows.resize(static_cast<size_t>(d));
  for (int j = 0; j < d; ++j) {
    s.layout.shards.rows[j].assign(static_cast<size_t>(b_n),
                                   SpRowsOf(b_n, all.text_tokens, n, d, j).per_seq());
  }
  s.layout.member = member;
  s.layout.heads = heads;
  s.layout.head_dim = c.head_dim();
  for (int64_t q = 0; q < b_n; ++q) s.layout.local_row_offsets.push_back(q * s.mine.per_seq());

  runtime::DeviceTensor h, cond;
  RETURN_IF_ERROR(SpEmbed(s, &h, &cond));
  for (int64_t l = 0; l < c.num_layers; ++l) RETURN_IF_ERROR(SpBlock(s, l, cond, &h));
  return SpFinal(s, &h, &cond);
}

}  // namespace tessera::xema
