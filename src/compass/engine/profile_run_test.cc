// Taking a profile on in-process ranks over a6000x8's emulated links (a tiny time scale, so
// links are fast): every part of the file is filled and it reads back.
#include "compass/engine/profile_run.h"

#include <gtest/gtest.h>

#include <set>

#include "comm/in_process_communicator.h"
#include "compass/engine/overlap_grid.h"

namespace tessera::compass {
namespace {

core::StatusOr<CompassProfile> ProfileOn(int ranks) {
  auto topo = hw::TopologyPreset("a6000x8");
  if (!topo.ok()) return topo.status();
  auto scale = runtime::FixedTimeScale(topo->device(), 1e-3);
  if (!scale.ok()) return scale.status();
  ProfileRunConfig config;
  auto shapes = GridShapes(OverlapGrid{{"qkv", "proj"},
                                       {48, 96},
                                       {48},
                                       4,
                                       {StrategyName::Of(StrategyFamily::kNone)},
                                       {1, 2, 4, 8}},
                           ranks);
  if (!shapes.ok()) return shapes.status();
  config.shapes = *shapes;
  config.degrees = {1, 2, 4, 8};
  config.repeats = 3;
  config.link_block_wire_bytes = {4096};
  config.contention_m = config.contention_n = config.contention_k = 64;
  config.contention_block_wire_bytes = 4096;
  config.machine = "test";
  std::vector<core::StatusOr<CompassProfile>> out(ranks, core::Internal("not run"));
  comm::RunInProcessRanks(ranks, [&](comm::Communicator& world) {
    out[world.rank()] = RunCompassProfile(world, *topo, *scale, config);
  });
  for (int r = 1; r < ranks; ++r)
    if (!out[r].ok()) return out[r].status();
  return std::move(out[0]);
}

TEST(CompassProfileRun, FillsEveryPartAndReadsBack) {
  auto p = ProfileOn(2);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->topology, "a6000x8");
  EXPECT_EQ(p->ranks, 2);
  ASSERT_EQ(p->operators.size(), 4u);
  for (const ProfiledOperator& o : p->operators) {
    // qkv splits M/t = 24 rows, proj N = h: 1, 2, 4, 8 feasible everywhere.
    EXPECT_EQ(o.t_by_d.size(), 4u) << o.label;
    for (const auto& [d, t] : o.t_by_d) EXPECT_GT(t, 0) << o.label << " d " << d;
    EXPECT_GE(o.d_star, 1);
    EXPECT_LE(o.d_star, 8);
    // The whole GEMM and the parts' GEMMs are in the table.
    const bool rs = o.op == std::string("gemm-rs");
    EXPECT_TRUE(p->GemmSeconds(false, o.m, o.n, o.k).ok()) << o.label;
    EXPECT_TRUE(
        (rs ? p->GemmSeconds(false, o.m, o.n / 8, o.k) : p->GemmSeconds(false, o.m / 8, o.n, o.k))
            .ok())
        << o.label;
  }
  EXPECT_EQ(p->classes.count("ag"), 1u);
  EXPECT_EQ(p->classes.count("rs"), 1u);
  std::set<std::string> links;
  for (const ProfiledLink& l : p->links) {
    links.insert(l.kind + " " + l.algo);
    EXPECT_GT(l.measured_s, 0);
    EXPECT_GT(l.modeled_s, 0);
  }
  EXPECT_EQ(links.size(), 6u);  // AllGather, ReduceScatter x ring1, ring2, direct
  EXPECT_GT(p->contention.alone_s, 0);
  EXPECT_GT(p->contention.overlapped_s, 0);
  auto back = ProfileFromJson(ToJson(*p), "p.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), ToJson(*p));
}

TEST(CompassProfileRun, OneRankIsRefused) {
  auto p = ProfileOn(1);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("needs at least 2 ranks"), std::string::npos)
      << p.status().message();
}

}  // namespace
}  // namespace tessera::compass
