// SequenceParallelForward (sp_dit.h) on RunInProcessRanks(d) threads, one
// runtime::HeapDeviceAllocator and one models::TinyDit per member, against models::TinyDit::Forward
// on one allocator: outputs on seeded random configs, the per-member activation peak, op names, and
// failures (bad input, out of memory on one member, a member that never calls) that must reach
// every member without a hang.
#include "xema/pipeline/sp_dit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "comm/in_process_communicator.h"
#include "core/rng.h"
#include "kernels/gemm.h"
#include "xema/pipeline/pipeline_test_util.h"

namespace tessera::xema {
namespace {

constexpr double kOpTimeoutS = 60;  // a hang fails the test instead of blocking it

struct SpCase {
  models::SmallDitConfig config;
  int64_t text_hidden = 16, tokens = 1, text_tokens = 0, batch = 1;
  uint64_t seed = 1;
  std::vector<float> latent, text, pooled;
};

std::vector<float> RandomFloats(core::Rng& rng, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.Normal());
  return v;
}

SpCase MakeCase(uint64_t seed, int64_t heads, int64_t head_dim, int64_t layers, int64_t ffn,
                int64_t tokens, int64_t text_tokens, int64_t batch) {
  SpCase c;
  c.seed = seed;
  c.config.num_heads = heads;
  c.config.hidden = heads * head_dim;
  c.config.in_channels = 8;
  c.config.num_layers = layers;
  c.config.ffn_hidden = ffn;
  c.config.timestep_freq_dim = 16;
  c.config.modulation_init_std = 0.5f;  // modulation visibly active
  c.config.init_seed = seed + 100;
  c.tokens = tokens;
  c.text_tokens = text_tokens;
  c.batch = batch;
  core::Rng rng(seed);
  c.latent = RandomFloats(rng, tokens * c.config.in_channels);
  c.text = RandomFloats(rng, batch * text_tokens * c.text_hidden);
  c.pooled = RandomFloats(rng, batch * c.text_hidden);
  return c;
}

// The DiT and its text context on `allocator`; *in points at them.
models::TinyDit Prepare(const SpCase& c, runtime::DeviceAllocator& allocator,
                        runtime::DeviceTensor* ctx, runtime::DeviceTensor* pool,
                        models::TinyDit::Input* in) {
  auto dit = models::TinyDit::Create(c.config, c.text_hidden, c.seed, allocator);
  CHECK(dit.ok()) << dit.status().ToString();
  in->latent = c.latent.data();
  in->image_tokens = c.tokens;
  in->t = 0.45f;
  in->batch = c.batch;
  if (c.text_tokens > 0) {
    std::vector<const float*> text, pooled;
    for (int64_t b = 0; b < c.batch; ++b) {
      text.push_back(c.text.data() + b * c.text_tokens * c.text_hidden);
      pooled.push_back(c.pooled.data() + b * c.text_hidden);
    }
    double flops = 0;
    CHECK(dit->ProjectText(allocator, text, pooled, c.text_tokens, ctx, pool, &flops).ok());
    in->text_ctx = ctx;
    in->text_tokens = c.text_tokens;
    in->pool_ctx = pool;
  }
  return std::move(dit).value();
}

struct MemberRun {
  core::Status status;
  std::vector<float> out;
  int64_t activation_peak = 0;  // the allocator's peak during the call minus live bytes before
  bool clean = false;           // afterwards: no op open, live bytes as before the call
  std::vector<std::string> ops;
  std::map<std::string, int64_t> block0_allocs;  // tensor name -> aligned bytes in dit.block0
};

using Runner = std::function<core::StatusOr<runtime::DeviceTensor>(
    const models::TinyDit&, runtime::DeviceAllocator&, const models::TinyDit::Input&)>;

MemberRun RunMember(const SpCase& c, int64_t budget_over_inputs, const Runner& run) {
  MemberRun r;
  int64_t inputs = 0;  // weights and text context
  {
    runtime::HeapDeviceAllocator probe;
    runtime::DeviceTensor ctx, pool;
    models::TinyDit::Input in;
    const models::TinyDit dit = Prepare(c, probe, &ctx, &pool, &in);
    inputs = probe.live_bytes();
  }
  runtime::HeapDeviceAllocator allocator(budget_over_inputs > 0 ? inputs + budget_over_inputs : 0);
  runtime::DeviceTensor ctx, pool;
  models::TinyDit::Input in;
  const models::TinyDit dit = Prepare(c, allocator, &ctx, &pool, &in);
  const int64_t before = allocator.live_bytes();
  allocator.ResetPeak();
  {
    testing::OpPeakObserver observer(allocator);
    auto out = run(dit, allocator, in);
    r.status = out.ok() ? core::Status::Ok() : out.status();
    if (out.ok()) r.out.assign(out->f32_span().begin(), out->f32_span().end());
    for (const auto& op : observer.ops()) r.ops.push_back(op.name);
    if (const auto* op = observer.Find("dit.block0")) r.block0_allocs = op->allocs;
  }
  r.activation_peak = allocator.peak_bytes() - before;
  r.clean = !allocator.in_op() && allocator.live_bytes() == before;
  return r;
}

MemberRun RunSingle(const SpCase& c, const models::DitExecution& e) {
  return RunMember(c, 0,
                   [&](const models::TinyDit& dit, runtime::DeviceAllocator& a,
                       const models::TinyDit::Input& in) {
                     return dit.Forward(a, in, e, {PhaseName(Phase::kDenoise), Section::kBody, 0});
                   });
}

// budget(m): bytes over the member's weights and text context (0: unbounded); tweak(m, e)
// may change a member's execution.
std::vector<MemberRun> RunSp(
    const SpCase& c, const models::DitExecution& e, int d,
    const std::function<int64_t(int)>& budget = nullptr,
    const std::function<void(int, models::DitExecution*)>& tweak = nullptr) {
  std::vector<MemberRun> runs(static_cast<size_t>(d));
  comm::RunInProcessRanks(d, [&](comm::Communicator& world) {
    CHECK(kernels::SetBlasNumThreads(1).ok());
    world.set_op_timeout_s(kOpTimeoutS);
    const int m = world.rank();
    models::DitExecution mine = e;
    if (tweak) tweak(m, &mine);
    runs[m] =
        RunMember(c, budget ? budget(m) : 0,
                  [&](const models::TinyDit& dit, runtime::DeviceAllocator& a,
                      const models::TinyDit::Input& in) {
                    return SequenceParallelForward(dit, a, &world, m, in, mine,
                                                   {PhaseName(Phase::kDenoise), Section::kBody, 0});
                  });
  });
  return runs;
}

double MaxAbs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::abs(static_cast<double>(x)));
  return m;
}

TEST(SpDitTest, RowsAreContiguousBalancedAndCoverEverySequence) {
  for (int d = 1; d <= 5; ++d) {
    for (int64_t l_n = d; l_n <= 23; ++l_n) {
      int64_t next = 0;
      for (int m = 0; m < d; ++m) {
        const models::DitRows r = SpRowsOf(2, 3, l_n - 3, d, m);
        EXPECT_EQ(r.begin, next);
        EXPECT_TRUE(r.per_seq() == l_n / d || r.per_seq() == l_n / d + 1) << d << " " << l_n;
        EXPECT_EQ(r.local(), 2 * r.per_seq());
        next = r.end;
      }
      EXPECT_EQ(next, l_n);
    }
  }
}

// Seeded random small configs: H in {2, 4}, every d dividing H, B in {1, 2}, with and without
// text, fused and chunked attention, 1 and 3 FFN chunks, L divisible by d or not. Returns the
// largest |SP - single| / max(1, max |single|) over the d > 1 cases.
double SpDiffsOnRandomConfigs(const std::string& backend) {
  double worst_rel = 0;
  int cases = 0, ragged = 0, with_text = 0, batched = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    core::Rng rng(seed * 7919);
    const int64_t heads = seed % 2 == 0 ? 4 : 2;
    const int64_t head_dim = 8 * (1 + static_cast<int64_t>(rng.Below(2)));
    const int64_t text_tokens = seed % 4 < 2 ? 0 : 1 + static_cast<int64_t>(rng.Below(6));
    const int64_t batch = 1 + static_cast<int64_t>((seed / 2) % 2);
    const int64_t tokens = 3 + static_cast<int64_t>(rng.Below(28));
    const SpCase c =
        MakeCase(seed, heads, head_dim, 1 + static_cast<int64_t>(rng.Below(2)),
                 16 * (1 + static_cast<int64_t>(rng.Below(6))), tokens, text_tokens, batch);
    const int64_t l_n = tokens + text_tokens;
    for (const models::DitExecution e :
         {models::DitExecution{models::AttentionMode::kFused, 1, 1},
          models::DitExecution{models::AttentionMode::kChunked, 3, 3},
          models::DitExecution{models::AttentionMode::kFused, 1, 3},
          models::DitExecution{models::AttentionMode::kChunked, 1, 1}}) {
      const MemberRun ref = RunSingle(c, e);
      EXPECT_TRUE(ref.status.ok()) << ref.status.ToString();
      const double scale = std::max(1.0, MaxAbs(ref.out));
      for (int d = 1; d <= heads; d *= 2) {
        const std::vector<MemberRun> runs = RunSp(c, e, d);
        const std::string where = backend + " seed " + std::to_string(seed) + " d " +
                                  std::to_string(d) + " L " + std::to_string(l_n) + " B " +
                                  std::to_string(batch);
        for (int m = 0; m < d; ++m) {
          EXPECT_TRUE(runs[m].status.ok()) << where << ": " << runs[m].status.ToString();
          EXPECT_TRUE(runs[m].clean) << where;
          EXPECT_EQ(runs[m].ops, ref.ops) << where << ": models::TinyDit's op names";
          // Every member returns the same bits (they all receive the same gathered rows).
          EXPECT_EQ(runs[m].out, runs[0].out) << where << " member " << m;
        }
        const double diff = testing::MaxAbsDiff(runs[0].out, ref.out);
        if (d == 1) {
          EXPECT_EQ(diff, 0.0) << where << ": d = 1 is models::TinyDit::Forward";
          continue;
        }
        // Not bitwise in general: a member's GEMMs run on its own rows only, and a GEMM
        // kernel's rounding of a row may depend on the call's row count (see tiny_dit.h);
        // everything else is the same code on the same values, and the moves are copies.
        EXPECT_LE(diff, 1e-5 * scale) << where;
        worst_rel = std::max(worst_rel, diff / scale);
        ++cases;
        ragged += l_n % d != 0;
        with_text += text_tokens > 0;
        batched += batch > 1;
      }
    }
  }
  EXPECT_GT(ragged, 0);
  EXPECT_GT(with_text, 0);
  EXPECT_GT(batched, 0);
  EXPECT_LT(with_text, cases);
  std::printf(
      "SequenceParallelForward vs models::TinyDit::Forward (%s): %d cases, max |diff| / max(1, "
      "|ref|) = %.3g\n",
      backend.c_str(), cases, worst_rel);
  return worst_rel;
}

TEST(SpDitTest, MatchesSingleDeviceOnRandomConfigs) {
  testing::ForEachGemmBackend([&](kernels::GemmBackend backend) {
    const std::string name = kernels::GemmBackendName(backend);
    RecordProperty("sp_max_rel_diff_" + name, std::to_string(SpDiffsOnRandomConfigs(name)));
  });
}

TEST(SpDitTest, MembersWithoutImageRowsStillMatch) {
  // L = 8 text + 4 image rows over 4 members: members 0 and 1 hold text rows only, so they
  // contribute no rows to "dit.out" and allocate no final-layer rows.
  const SpCase c = MakeCase(9, 4, 8, 2, 64, 4, 8, 2);
  for (const models::DitExecution e :
       {models::DitExecution{models::AttentionMode::kFused, 1, 1},
        models::DitExecution{models::AttentionMode::kChunked, 2, 2}}) {
    const MemberRun ref = RunSingle(c, e);
    ASSERT_TRUE(ref.status.ok());
    const std::vector<MemberRun> runs = RunSp(c, e, 4);
    for (const MemberRun& r : runs) {
      ASSERT_TRUE(r.status.ok()) << r.status.ToString();
      EXPECT_TRUE(r.clean);
      EXPECT_LE(testing::MaxAbsDiff(r.out, ref.out), 1e-5 * std::max(1.0, MaxAbs(ref.out)));
    }
  }
}

TEST(SpDitTest, MemberActivationPeakShrinksWithTheDegree) {
  // Activations dominate: 2 x 72 rows of hidden 64, F = 256, fused attention, one FFN chunk.
  const SpCase c = MakeCase(5, 4, 16, 2, 256, 64, 8, 2);
  const models::DitExecution e{models::AttentionMode::kFused, 1, 1};
  const MemberRun single = RunSingle(c, e);
  ASSERT_TRUE(single.status.ok());
  int64_t peak_by_degree[5] = {};
  for (const int d : {2, 4}) {
    const std::vector<MemberRun> runs = RunSp(c, e, d);
    const int64_t l_n = 72, hd = 64;
    for (int m = 0; m < d; ++m) {
      ASSERT_TRUE(runs[m].status.ok()) << runs[m].status.ToString();
      peak_by_degree[d] = std::max(peak_by_degree[d], runs[m].activation_peak);
      // The head-split tensors are device workspaces of B L Hd / d floats.
      EXPECT_EQ(runs[m].block0_allocs.at("dit.block0.q_heads"), AlignBytes(4 * 2 * l_n * hd / d));
      EXPECT_EQ(runs[m].block0_allocs.count("dit.block0.attn"), 0u);
    }
  }
  std::printf("activation peak per member: d=1 %lld B, d=2 %lld B (%.3fx), d=4 %lld B (%.3fx)\n",
              static_cast<long long>(single.activation_peak),
              static_cast<long long>(peak_by_degree[2]),
              static_cast<double>(peak_by_degree[2]) / static_cast<double>(single.activation_peak),
              static_cast<long long>(peak_by_degree[4]),
              static_cast<double>(peak_by_degree[4]) / static_cast<double>(single.activation_peak));
  RecordProperty("activation_peak_d1", std::to_string(single.activation_peak));
  RecordProperty("activation_peak_d2", std::to_string(peak_by_degree[2]));
  RecordProperty("activation_peak_d4", std::to_string(peak_by_degree[4]));
  EXPECT_LT(static_cast<double>(peak_by_degree[2]), 0.75 * single.activation_peak);
  EXPECT_LT(static_cast<double>(peak_by_degree[4]), 0.75 * peak_by_degree[2]);
}

TEST(SpDitTest, BadInputIsInvalidArgumentOnEveryMember) {
  const models::DitExecution e{models::AttentionMode::kFused, 1, 1};
  {  // H = 2 over d = 4 members
    const std::vector<MemberRun> runs = RunSp(MakeCase(1, 2, 8, 1, 32, 9, 0, 1), e, 4);
    for (const MemberRun& r : runs) {
      EXPECT_EQ(r.status.code(), core::StatusCode::kInvalidArgument) << r.status.ToString();
      EXPECT_NE(r.status.message().find("sp_degree = 4"), std::string::npos);
      EXPECT_NE(r.status.message().find("num_heads = 2"), std::string::npos);
      EXPECT_TRUE(r.clean);
      EXPECT_TRUE(r.ops.empty());
    }
  }
  {  // L = 3 rows over d = 4 members
    const std::vector<MemberRun> runs = RunSp(MakeCase(2, 4, 8, 1, 32, 3, 0, 1), e, 4);
    for (const MemberRun& r : runs) {
      EXPECT_EQ(r.status.code(), core::StatusCode::kInvalidArgument) << r.status.ToString();
      EXPECT_NE(r.status.message().find("exceeds the joint sequence length L = 3"),
                std::string::npos);
    }
  }
  {  // member 1 alone passes a bad chunk count; member 2 another FFN chunk count
    const SpCase c = MakeCase(3, 4, 8, 1, 32, 9, 2, 1);
    std::vector<MemberRun> runs = RunSp(c, e, 2, nullptr, [](int m, models::DitExecution* x) {
      if (m == 1) x->attention_chunks = 0;
    });
    for (const MemberRun& r : runs) {
      EXPECT_EQ(r.status.code(), core::StatusCode::kInvalidArgument) << r.status.ToString();
      EXPECT_NE(r.status.message().find("sp member 1 of 2"), std::string::npos);
      EXPECT_NE(r.status.message().find("attention chunks"), std::string::npos);
    }
    runs = RunSp(c, e, 4, nullptr, [](int m, models::DitExecution* x) {
      if (m == 2) x->ffn_chunks = 2;
    });
    for (const MemberRun& r : runs) {
      EXPECT_EQ(r.status.code(), core::StatusCode::kInvalidArgument) << r.status.ToString();
      EXPECT_NE(r.status.message().find("sp member 2 of 4 passed another input"),
                std::string::npos);
      EXPECT_TRUE(r.clean);
    }
  }
}

TEST(SpDitTest, OutOfMemoryOnOneMemberIsInfeasibleOnEveryMember) {
  const SpCase c = MakeCase(4, 4, 16, 2, 128, 40, 5, 2);
  const models::DitExecution e{models::AttentionMode::kChunked, 2, 2};
  const std::vector<MemberRun> free_run = RunSp(c, e, 2);
  ASSERT_TRUE(free_run[1].status.ok());
  const int64_t peak = free_run[1].activation_peak;
  // Budgets from nothing to just below member 1's peak fail in different ops (embed, blocks,
  // final); member 0 is unbounded.
  for (const double fraction : {0.0, 0.2, 0.5, 0.8, 0.99}) {
    const int64_t budget = std::max<int64_t>(1, static_cast<int64_t>(fraction * peak));
    const std::vector<MemberRun> runs =
        RunSp(c, e, 2, [&](int m) { return m == 1 ? budget : int64_t{0}; });
    for (int m = 0; m < 2; ++m) {
      const MemberRun& r = runs[m];
      EXPECT_EQ(r.status.code(), core::StatusCode::kInfeasible)
          << "fraction " << fraction << " member " << m << ": " << r.status.ToString();
      EXPECT_NE(r.status.message().find("sp member 1 of 2"), std::string::npos);
      EXPECT_NE(r.status.message().find("out of device memory"), std::string::npos);
      EXPECT_TRUE(r.clean) << "fraction " << fraction << " member " << m;
    }
    EXPECT_EQ(runs[0].ops, runs[1].ops) << "both stop in the same op";
  }
}

TEST(SpDitTest, AMemberThatNeverCallsGivesUnavailableInsteadOfAHang) {
  const SpCase c = MakeCase(6, 2, 8, 1, 32, 12, 0, 1);
  MemberRun caller;
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    if (world.rank() == 1) return;  // gone: RunInProcessRanks marks it exited
    world.set_op_timeout_s(kOpTimeoutS);
    caller =
        RunMember(c, 0,
                  [&](const models::TinyDit& dit, runtime::DeviceAllocator& a,
                      const models::TinyDit::Input& in) {
                    return SequenceParallelForward(dit, a, &world, 0, in, {},
                                                   {PhaseName(Phase::kDenoise), Section::kBody, 0});
                  });
  });
  EXPECT_EQ(caller.status.code(), core::StatusCode::kUnavailable) << caller.status.ToString();
  EXPECT_TRUE(caller.clean);
}

}  // namespace
}  // namespace tessera::xema
