// UlyssesScatter / UlyssesGather on the fake communicator against a plain single-process
// reference of what every member must hold, on seeded random shards (empty ones, h = 1).
#include "parallel/ulysses.h"

#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "comm/in_process_communicator.h"
#include "core/rng.h"
#include "parallel/test_util.h"

namespace tessera::parallel {
namespace {

using testing::ConstPtrs;
using testing::Ptrs;
using Tensors = std::vector<std::vector<float>>;  // [tensor] -> floats

constexpr float kPad = -7.0f;  // rows of the local buffers outside this member's shards

struct UlyssesCase {
  UlyssesLayout base;  // shards, heads, head_dim (member and offsets per member below)
  int num_tensors = 1;
  std::vector<std::vector<int64_t>> offsets;  // [member][sequence]
  std::vector<int64_t> local_rows;            // [member] T_local
  std::vector<Tensors> local;                 // [member][tensor] (T_local, H, D)
  std::vector<Tensors> split;                 // [member][tensor] (T_super, H/h, D)

  UlyssesLayout Layout(int m) const {
    UlyssesLayout l = base;
    l.member = m;
    l.local_row_offsets = offsets[m];
    return l;
  }
};

// A random case and its reference: the full sequences G[t][s] (rows, H, D) cut into member
// rows (local, all heads) and into the concatenation's head slices (split).
UlyssesCase MakeUlyssesCase(uint64_t seed) {
  core::Rng rng(seed);
  UlyssesCase c;
  c.base.shards = testing::RandomShards(rng);
  const int h = c.base.group_size(), nseq = c.base.shards.sequences();
  c.base.heads = h * testing::RandomInt(rng, 1, 3);
  c.base.head_dim = testing::RandomInt(rng, 1, 3);
  c.num_tensors = static_cast<int>(testing::RandomInt(rng, 1, 3));
  const SequenceShards& sh = c.base.shards;
  const int64_t H = c.base.heads, D = c.base.head_dim, HD = H * D, Hh = H / h, hd = Hh * D;
  const std::vector<int64_t> cu = sh.CuSeqlens();
  c.offsets.resize(h);
  c.local_rows.resize(h);
  c.local.resize(h);
  c.split.resize(h);
  for (int m = 0; m < h; ++m) {
    c.offsets[m] = testing::RandomOffsets(rng, sh.rows[m], &c.local_rows[m]);
    c.local[m].assign(c.num_tensors, std::vector<float>(c.local_rows[m] * HD, kPad));
    c.split[m].assign(c.num_tensors, std::vector<float>(sh.TotalRows() * hd));
  }
  for (int t = 0; t < c.num_tensors; ++t)
    for (int s = 0; s < nseq; ++s) {
      const std::vector<float> g = testing::RandomFloats(rng, sh.SequenceRows(s) * HD);
      int64_t row = 0;  // row within sequence s
      for (int m = 0; m < h; ++m)
        for (int64_t r = 0; r < sh.rows[m][s]; ++r, ++row)
          for (int64_t e = 0; e < HD; ++e) {
            c.local[m][t][(c.offsets[m][s] + r) * HD + e] = g[row * HD + e];
            const int64_t head = e / D, j = head / Hh;
            c.split[j][t][(cu[s] + row) * hd + (head % Hh) * D + e % D] = g[row * HD + e];
          }
    }
  return c;
}

TEST(Ulysses, ScatterAndGatherMatchReferenceOnRandomShards) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const UlyssesCase c = MakeUlyssesCase(seed);
    const int h = c.base.group_size();
    comm::RunInProcessRanks(h, [&](comm::Communicator& world) {
      const int m = world.rank();
      const UlyssesLayout layout = c.Layout(m);
      comm::Communicator* group = (h == 1 && seed % 2 == 0) ? nullptr : &world;
      runtime::HeapDeviceAllocator mem(0, sizeof(float));
      const int nt = c.num_tensors;
      Tensors split(nt, std::vector<float>(c.split[m][0].size(), 0.0f));
      {
        auto staging = AllocateUlyssesStaging(group, layout, nt, UlyssesDirection::kScatter, mem);
        ASSERT_TRUE(staging.ok()) << staging.status().ToString();
        ASSERT_TRUE(
            UlyssesScatter(group, layout, ConstPtrs(c.local[m]), Ptrs(split), staging->view())
                .ok());
      }
      EXPECT_EQ(split, c.split[m]) << "scatter, seed " << seed << " member " << m;
      // The staging of one call: both sides of the all-to-all, exact float bytes (none at h 1).
      const int64_t staged =
          h == 1 ? 0 : 4 * (UlyssesLocalFloats(layout, nt) + UlyssesSplitFloats(layout, nt));
      EXPECT_EQ(mem.peak_bytes(), staged) << "seed " << seed << " member " << m;
      // Gather of the reference split tensors gives the reference local tensors (padding kept).
      Tensors local(nt, std::vector<float>(c.local[m][0].size(), kPad));
      {
        auto staging = AllocateUlyssesStaging(group, layout, nt, UlyssesDirection::kGather, mem);
        ASSERT_TRUE(staging.ok());
        ASSERT_TRUE(
            UlyssesGather(group, layout, ConstPtrs(c.split[m]), Ptrs(local), staging->view()).ok());
        EXPECT_EQ(local, c.local[m]) << "gather, seed " << seed << " member " << m;
        // Scatter then gather is the identity.
        Tensors back(nt, std::vector<float>(c.local[m][0].size(), kPad));
        ASSERT_TRUE(
            UlyssesGather(group, layout, ConstPtrs(split), Ptrs(back), staging->view()).ok());
        EXPECT_EQ(back, c.local[m]) << "round trip, seed " << seed << " member " << m;
      }
      EXPECT_EQ(mem.live_bytes(), 0);
    });
  }
}

TEST(Ulysses, CallerStagingGivesTheSameResultsAndIsSizeChecked) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const UlyssesCase c = MakeUlyssesCase(seed);
    const int h = c.base.group_size();
    comm::RunInProcessRanks(h, [&](comm::Communicator& world) {
      const int m = world.rank();
      const UlyssesLayout layout = c.Layout(m);
      const int nt = c.num_tensors;
      const int64_t local = UlyssesLocalFloats(layout, nt), split = UlyssesSplitFloats(layout, nt);
      EXPECT_EQ(local, nt * layout.shards.MemberRows(m) * layout.heads * layout.head_dim);
      // Exactly sized staging (scatter sends the local side, gather the head-split side).
      std::vector<float> a(local + 1), b(split + 1);
      const UlyssesStaging to_split{std::span<float>(a).first(local),
                                    std::span<float>(b).first(split)};
      const UlyssesStaging to_local{to_split.recv, to_split.send};
      Tensors out(nt, std::vector<float>(c.split[m][0].size(), 0.0f));
      ASSERT_TRUE(UlyssesScatter(&world, layout, ConstPtrs(c.local[m]), Ptrs(out), to_split).ok());
      EXPECT_EQ(out, c.split[m]) << "scatter, seed " << seed << " member " << m;
      Tensors back(nt, std::vector<float>(c.local[m][0].size(), kPad));
      ASSERT_TRUE(UlyssesGather(&world, layout, ConstPtrs(out), Ptrs(back), to_local).ok());
      EXPECT_EQ(back, c.local[m]) << "gather, seed " << seed << " member " << m;
      // One float short on the receive side fails before communicating (split is the same on
      // every member; h == 1 needs no staging at all).
      if (h > 1 && split > 0) {
        const UlyssesStaging short_recv{to_split.send, std::span<float>(b).first(split - 1)};
        const core::Status st =
            UlyssesScatter(&world, layout, ConstPtrs(c.local[m]), Ptrs(out), short_recv);
        EXPECT_EQ(st.code(), core::StatusCode::kInvalidArgument);
        EXPECT_NE(st.message().find("UlyssesStaging"), std::string::npos) << st.ToString();
      } else if (h == 1) {
        EXPECT_TRUE(
            UlyssesScatter(nullptr, layout, ConstPtrs(c.local[m]), Ptrs(out), UlyssesStaging{})
                .ok());
      }
    });
  }
}

TEST(Ulysses, RejectsInconsistentLayoutBeforeCommunicating) {
  UlyssesLayout l;
  l.shards.rows = {{1, 2}, {0, 3}};
  l.heads = 3;  // not a multiple of h = 2
  l.head_dim = 2;
  l.local_row_offsets = {0, 1};
  std::vector<float> in(6 * 3 * 2), out(6 * 3 * 2);
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    UlyssesLayout mine = l;
    mine.member = world.rank();
    std::vector<float> a(in.size()), b(in.size());
    const UlyssesStaging staging{a, b};
    const core::Status st = UlyssesScatter(&world, mine, {in.data()}, {out.data()}, staging);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.ToString().find("multiple of the group size"), std::string::npos);
    runtime::HeapDeviceAllocator mem;
    auto owned = AllocateUlyssesStaging(&world, mine, 1, UlyssesDirection::kScatter, mem);
    EXPECT_EQ(owned.status().code(), core::StatusCode::kInvalidArgument);
    EXPECT_EQ(mem.allocations(), 0);
    mine.heads = 4;
    EXPECT_FALSE(UlyssesScatter(nullptr, mine, {in.data()}, {out.data()}, staging).ok());
  });
}

}  // namespace
}  // namespace tessera::parallel
