// Compass part 2: every overlap strategy against the single-process GEMM on in-process ranks
// (fake communicator, emulated links at a tiny time scale so links are fast), the operator
// shapes and strategy names, and the grid file's validation.
#include "compass/engine/overlap_strategy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "comm/in_process_communicator.h"
#include "compass/engine/link_runtime.h"
#include "compass/engine/overlap_bench.h"
#include "compass/engine/overlap_grid.h"
#include "core/rng.h"
#include "kernels/gemm.h"

namespace tessera::compass {
namespace {

hw::Topology A6000() {
  auto t = hw::TopologyPreset("a6000x8");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

runtime::TimeScale FastScale(const hw::Topology& t) {
  auto s = runtime::FixedTimeScale(t.device(), 1e-3);
  EXPECT_TRUE(s.ok());
  return *s;
}

// Runs `fn` on n in-process ranks sharing a6000x8's emulated links; returns each rank's status.
std::vector<core::Status> OnLinkRanks(
    int n, int64_t window_bytes,
    const std::function<core::Status(comm::Communicator&, OverlapContext&)>& fn) {
  const hw::Topology topo = A6000();
  const runtime::TimeScale scale = FastScale(topo);
  std::vector<core::Status> results(n, core::Status::Ok());
  comm::RunInProcessRanks(n, [&](comm::Communicator& world) {
    auto rt = StartLinkRuntime(world, topo, scale, window_bytes, std::nullopt);
    if (!rt.ok()) {
      results[world.rank()] = rt.status();
      return;
    }
    OverlapContext ctx(world, rt->single.get(), rt->dual.get());
    results[world.rank()] = fn(world, ctx);
  });
  return results;
}

TEST(TpOp, ValidatesShapesAndDegrees) {
  TpOpShape s{TpOpKind::kAllGatherGemm, 10, 8, 8, 4, "x"};
  EXPECT_NE(ValidateTpOp(s).message().find("m: got 10, not divisible by tp 4"), std::string::npos)
      << ValidateTpOp(s).message();
  s.m = 16;
  EXPECT_TRUE(ValidateTpOp(s).ok());
  EXPECT_EQ(DecompositionLength(s), 4);
  EXPECT_TRUE(ValidateDegree(s, 2).ok());
  EXPECT_NE(ValidateDegree(s, 3).message().find("decomp:3: d must divide m/tp = 4"),
            std::string::npos);
  EXPECT_FALSE(ValidateDegree(s, 8).ok());
  s.kind = TpOpKind::kGemmReduceScatter;
  EXPECT_EQ(DecompositionLength(s), 8);
  EXPECT_TRUE(ValidateDegree(s, 8).ok());
  s.k = 0;
  EXPECT_NE(ValidateTpOp(s).message().find("k: got 0"), std::string::npos);
}

TEST(TpOp, RelativeErrorSeesNaNAndScale) {
  EXPECT_EQ(*RelativeError({1, 2}, {1, 2}), 0);
  EXPECT_NEAR(*RelativeError({1, 2.5}, {1, 2}), 0.25, 1e-12);
  EXPECT_TRUE(std::isinf(*RelativeError({NAN, 2}, {1, 2})));
  EXPECT_TRUE(std::isinf(*RelativeError({1, NAN, 2}, {1, 2, 2})));
  EXPECT_FALSE(RelativeError({1}, {1, 2}).ok());
}

TEST(OverlapStrategy, ParsesNamesAndRefusesBadOnes) {
  EXPECT_EQ(ParseStrategy("fused-ring2")->entry->name, "fused-ring2");
  auto d = ParseStrategy("decomp:4");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->degree(), 4);
  EXPECT_EQ(d->name(), "decomp:4");
  EXPECT_FALSE(ParseStrategy("mpi")->entry->timed);
  for (const char* bad : {"decomp", "decomp:0", "decomp:x", "none:2", "flux", ""}) {
    auto r = ParseStrategy(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(std::string("'") + bad + "'"), std::string::npos)
        << r.status().message();
  }
}

// Every strategy on every operator kind at TP 1..4 with seeded random shapes equals the
// single-process GEMM within 1e-5 relative.
TEST(OverlapStrategy, EveryStrategyMatchesTheSingleProcessGemm) {
  ASSERT_TRUE(kernels::SetBlasNumThreads(1).ok());
  const std::vector<std::string> names = {"none",     "fused-ring1", "fused-ring2", "fused-direct",
                                          "decomp:1", "decomp:2",    "te",          "mpi"};
  core::Rng rng(2026);
  for (int tp = 1; tp <= 4; ++tp) {
    for (TpOpKind kind :
         {TpOpKind::kAllGatherGemm, TpOpKind::kGemmReduceScatter, TpOpKind::kAllGatherWgrad}) {
      TpOpShape s;
      s.kind = kind;
      s.tp = tp;
      s.m = tp * 2 * static_cast<int64_t>(1 + rng.Below(5));  // rows per rank even (decomp:2)
      s.n = 2 * static_cast<int64_t>(1 + rng.Below(12));      // even (RS decomp:2)
      s.k = static_cast<int64_t>(1 + rng.Below(20));
      s.label = std::string(TpOpKindName(kind)) + " tp" + std::to_string(tp);
      const uint64_t seed = rng.NextU64() % 1000;
      auto st = OnLinkRanks(tp, 1 << 20, [&](comm::Communicator& world, OverlapContext& ctx) {
        std::vector<float> x, w;
        TpOpInputs(s, seed, world.rank(), &x, &w);
        ASSIGN_OR_RETURN(std::vector<float> ref, TpOpReference(s, seed, world.rank()));
        for (const std::string& name : names) {
          ASSIGN_OR_RETURN(StrategyChoice c, ParseStrategy(name));
          std::vector<float> y(static_cast<size_t>(s.y_count()), NAN);
          RETURN_IF_ERROR(RunStrategy(ctx, c, s, OpBuffers{x.data(), w.data(), y.data()}));
          ASSIGN_OR_RETURN(double err, RelativeError(y, ref));
          if (!(err <= 1e-5)) {
            return core::Internal(s.label + " " + name + " rank " + std::to_string(world.rank()) +
                                  ": error " + std::to_string(err));
          }
        }
        return core::Status::Ok();
      });
      for (const core::Status& r : st) EXPECT_TRUE(r.ok()) << r.ToString();
    }
  }
}

TEST(OverlapStrategy, ModeledComputeNeedsAProfiledShape) {
  auto st = OnLinkRanks(2, 1 << 20, [](comm::Communicator&, OverlapContext& ctx) {
    const TpOpShape s{TpOpKind::kAllGatherGemm, 8, 4, 4, 2, "ag"};
    std::vector<float> x(s.x_count(), 1), w(s.w_count(), 1), y(s.y_count());
    ctx.compute().set_mode(runtime::ComputeMode::kModeled);
    ASSIGN_OR_RETURN(StrategyChoice c, ParseStrategy("none"));
    return RunStrategy(ctx, c, s, OpBuffers{x.data(), w.data(), y.data()});
  });
  for (const core::Status& r : st) {
    EXPECT_NE(r.message().find("no profiled time for a GEMM of m 8 n 4 k 4"), std::string::npos)
        << r.ToString();
  }
}

TEST(OverlapBench, ChecksAndTimesEveryStrategyInProcess) {
  const hw::Topology topo = A6000();
  OverlapBenchConfig config;
  auto shapes = GridShapes(OverlapGrid{{"qkv", "proj", "qkv-wgrad"},
                                       {48},
                                       {24},
                                       4,
                                       {StrategyName::Of(StrategyFamily::kNone),
                                        StrategyName::Of(StrategyFamily::kFusedRing2)},
                                       {1, 2}},
                           3);
  ASSERT_TRUE(shapes.ok()) << shapes.status().ToString();
  config.shapes = *shapes;
  config.strategies = {StrategyName::Of(StrategyFamily::kNone),
                       StrategyName::Of(StrategyFamily::kFusedRing2),
                       StrategyName::Of(StrategyFamily::kMpi)};
  config.degrees = {1, 2, 4};
  config.check = true;
  config.repeats = 2;
  std::vector<core::StatusOr<OverlapBench>> out(3, core::Internal("not run"));
  comm::RunInProcessRanks(3, [&](comm::Communicator& world) {
    out[world.rank()] = RunOverlapBench(world, topo, FastScale(topo), config);
  });
  ASSERT_TRUE(out[0].ok()) << out[0].status().ToString();
  const OverlapBench& b = *out[0];
  ASSERT_EQ(b.configs.size(), 3u);
  for (const OverlapConfigResult& c : b.configs) {
    EXPECT_GT(c.gemm_s, 0);
    for (const OverlapRun& r : c.runs) {
      EXPECT_GE(r.rel_error, 0) << r.strategy;
      EXPECT_LE(r.rel_error, 1e-5) << r.strategy;
      EXPECT_EQ(r.timed, r.strategy != "mpi") << r.strategy;
      if (r.timed) {
        EXPECT_GT(r.median_s, 0) << r.strategy;
      }
    }
    // proj (RS) splits N = 48: decomp 1, 2, 4 feasible; qkv splits M/t = 8 rows: 1, 2, 4.
    EXPECT_NE(c.Find("decomp:4"), nullptr) << c.shape.label;
    // Every strategy's GEMMs were profiled; a decomposition's part is modeled.
    EXPECT_FALSE(c.gemms.empty());
    for (const OverlapRun& r : c.runs) {
      EXPECT_GT(r.compute_s, 0) << r.strategy;
      EXPECT_EQ(r.part_collective_s > 0, r.degree > 0) << r.strategy;
    }
  }
}

TEST(OverlapBench, RefusesAnInfeasibleDegreeNamingTheConfiguration) {
  const hw::Topology topo = A6000();
  OverlapBenchConfig config;
  config.shapes = {*LayerOpShape("qkv", 48, 4, 24, 2)};  // 12 rows per rank
  config.strategies = {StrategyName::Decomp(5)};
  std::vector<core::StatusOr<OverlapBench>> out(2, core::Internal("not run"));
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    out[world.rank()] = RunOverlapBench(world, topo, FastScale(topo), config);
  });
  EXPECT_NE(out[0].status().message().find("qkv h48 M24: decomp:5: d must divide m/tp = 12"),
            std::string::npos)
      << out[0].status().ToString();
}

TEST(OverlapGrid, LayerShapesAndTheQuickGrid) {
  auto qkv = LayerOpShape("qkv", 1024, 4, 2048, 4);
  ASSERT_TRUE(qkv.ok());
  EXPECT_EQ(qkv->kind, TpOpKind::kAllGatherGemm);
  EXPECT_EQ(qkv->k, 1024);
  EXPECT_EQ(qkv->n, 768);
  auto fc2 = LayerOpShape("fc2", 1024, 4, 2048, 4);
  EXPECT_EQ(fc2->kind, TpOpKind::kGemmReduceScatter);
  EXPECT_EQ(fc2->k, 1024);
  EXPECT_EQ(fc2->n, 1024);
  EXPECT_NE(LayerOpShape("proj", 1004, 4, 2048, 8)
                .status()
                .message()
                .find("proj: h 1004 not divisible by tp 8"),
            std::string::npos);
  EXPECT_NE(LayerOpShape("qkv", 512, 4, 1001, 2).status().message().find("m: got 1001"),
            std::string::npos);
  auto quick = GridShapes(QuickGrid(), 8);
  ASSERT_TRUE(quick.ok()) << quick.status().ToString();
  EXPECT_EQ(quick->size(), 48u);
}

TEST(OverlapGrid, RefusesBadFilesNamingFieldAndValue) {
  const core::Json good = {
      {"ops", {"qkv"}}, {"hidden", {512}}, {"tokens", {256}}, {"strategies", {"none"}}};
  EXPECT_TRUE(GridFromJson(good, "g.json").ok());
  auto with = [&](const std::string& key, core::Json v) {
    core::Json j = good;
    j[key] = std::move(v);
    return GridFromJson(j, "g.json").status().message();
  };
  EXPECT_NE(with("strategies", {"none", "flux"}).find("g.json.strategies[1]: strategy: got 'flux'"),
            std::string::npos)
      << with("strategies", {"none", "flux"});
  EXPECT_NE(with("ops", {"attn"}).find("g.json.ops[0]: got 'attn'"), std::string::npos);
  EXPECT_NE(with("hidden", {0}).find("g.json.hidden[0]: got 0"), std::string::npos);
  EXPECT_NE(with("tokns", {1}).find("unknown key 'tokns'"), std::string::npos);
  EXPECT_NE(with("kind", "cluster").find("g.json.kind: got 'cluster'"), std::string::npos);
}

}  // namespace
}  // namespace tessera::compass
