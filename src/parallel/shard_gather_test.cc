// AllGatherShards / ReduceScatterShards on the fake communicator against a plain single-
// process reference, on seeded random shards (empty ones, q = 1).
#include "parallel/shard_gather.h"

#include <gtest/gtest.h>

#include <vector>

#include "comm/in_process_communicator.h"
#include "core/rng.h"
#include "parallel/test_util.h"

namespace tessera::parallel {
namespace {

using testing::ConstPtrs;
using testing::Ptrs;
using Tensors = std::vector<std::vector<float>>;  // [tensor] -> floats

// Member m's own rows of the concatenated tensors `concat`, packed (sequence order).
Tensors OwnRows(const SequenceShards& sh, int m, int64_t rf, const Tensors& concat) {
  Tensors own;
  for (const auto& c : concat) {
    std::vector<float> v;
    for (int s = 0; s < sh.sequences(); ++s) {
      const float* p = c.data() + sh.ConcatRow(m, s) * rf;
      v.insert(v.end(), p, p + sh.rows[m][s] * rf);
    }
    own.push_back(std::move(v));
  }
  return own;
}

struct Case {
  ShardGatherLayout base;
  int num_tensors = 1;
  Tensors concat;                 // [tensor] (TotalRows, rf): the gathered reference
  std::vector<Tensors> partials;  // [member][tensor] (TotalRows, rf)
  std::vector<Tensors> reduced;   // [member][tensor] (MemberRows(m), rf): sums in member order
};

Case MakeCase(uint64_t seed) {
  core::Rng rng(seed);
  Case c;
  c.base.shards = testing::RandomShards(rng);
  c.base.row_floats = testing::RandomInt(rng, 1, 5);
  c.num_tensors = static_cast<int>(testing::RandomInt(rng, 1, 3));
  const int q = c.base.group_size();
  const int64_t n = c.base.shards.TotalRows() * c.base.row_floats;
  for (int t = 0; t < c.num_tensors; ++t) c.concat.push_back(testing::RandomFloats(rng, n));
  c.partials.resize(q);
  for (int m = 0; m < q; ++m)
    for (int t = 0; t < c.num_tensors; ++t) c.partials[m].push_back(testing::RandomFloats(rng, n));
  Tensors sum(c.num_tensors, std::vector<float>(n, 0.0f));
  for (int m = 0; m < q; ++m)
    for (int t = 0; t < c.num_tensors; ++t)
      for (int64_t e = 0; e < n; ++e) sum[t][e] += c.partials[m][t][e];
  for (int m = 0; m < q; ++m)
    c.reduced.push_back(OwnRows(c.base.shards, m, c.base.row_floats, sum));
  return c;
}

TEST(ShardGather, AllGatherAndReduceScatterMatchReferenceOnRandomShards) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const Case c = MakeCase(seed);
    const int q = c.base.group_size();
    const SequenceShards& sh = c.base.shards;
    const int64_t rf = c.base.row_floats, n = sh.TotalRows() * rf;
    comm::RunInProcessRanks(q, [&](comm::Communicator& world) {
      const int m = world.rank();
      ShardGatherLayout layout = c.base;
      layout.member = m;
      comm::Communicator* group = (q == 1 && seed % 2 == 0) ? nullptr : &world;
      runtime::HeapDeviceAllocator mem(0, sizeof(float));
      const Tensors own = OwnRows(sh, m, rf, c.concat);
      Tensors gathered(c.num_tensors, std::vector<float>(n, 0.0f));
      ASSERT_TRUE(AllGatherShards(group, layout, ConstPtrs(own), Ptrs(gathered), &mem).ok());
      EXPECT_EQ(gathered, c.concat) << "all-gather, seed " << seed << " member " << m;
      Tensors reduced(c.num_tensors, std::vector<float>(sh.MemberRows(m) * rf, 0.0f));
      ASSERT_TRUE(
          ReduceScatterShards(group, layout, ConstPtrs(c.partials[m]), Ptrs(reduced), &mem).ok());
      EXPECT_EQ(reduced, c.reduced[m]) << "reduce-scatter, seed " << seed << " member " << m;
      // Gather then reduce-scatter with member 0 contributing the gathered rows and the others
      // zeros (0 + x + 0 ... == x exactly) returns every member its own rows.
      if (m != 0) gathered.assign(c.num_tensors, std::vector<float>(n, 0.0f));
      Tensors back(c.num_tensors, std::vector<float>(sh.MemberRows(m) * rf, 1.0f));
      ASSERT_TRUE(ReduceScatterShards(group, layout, ConstPtrs(gathered), Ptrs(back), &mem).ok());
      EXPECT_EQ(back, own) << "round trip, seed " << seed << " member " << m;
      EXPECT_EQ(mem.live_bytes(), 0);
    });
  }
}

TEST(ShardGather, RejectsWrongGroupBeforeCommunicating) {
  ShardGatherLayout l;
  l.shards.rows = {{1}, {2}, {0}};
  l.row_floats = 2;
  std::vector<float> in(6), out(6);
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    ShardGatherLayout mine = l;
    mine.member = world.rank();
    const core::Status st = AllGatherShards(&world, mine, {in.data()}, {out.data()}, nullptr);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.ToString().find("need a group communicator of 3 ranks"), std::string::npos);
  });
}

}  // namespace
}  // namespace tessera::parallel
