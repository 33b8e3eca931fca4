// MemberMesh: coordinates, groups and ring neighbours against their definitions.
#include "parallel/member_mesh.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace tessera::parallel {
namespace {

TEST(MemberMesh, CoordinatesGroupsAndRingFollowTheFactorisation) {
  for (int h : {1, 2, 3})
    for (int q : {1, 2})
      for (int k : {1, 3}) {
        const MemberMesh mesh{.h = h, .q = q, .k = k};
        std::vector<int> ranks(mesh.size());
        std::iota(ranks.begin(), ranks.end(), 100);  // rank of member i is 100 + i
        for (int i = 0; i < mesh.size(); ++i) {
          const MeshCoord c = mesh.Coord(i);
          EXPECT_EQ(c.hi, i % h);
          EXPECT_EQ(c.qi, (i / h) % q);
          EXPECT_EQ(c.ki, i / (h * q));
          EXPECT_EQ(mesh.Member(c), i);
          const std::vector<int> u = mesh.UlyssesRanks(ranks, c.qi, c.ki);
          ASSERT_EQ(static_cast<int>(u.size()), h);
          EXPECT_EQ(u[c.hi], 100 + i);
          for (int x = 0; x < h; ++x) EXPECT_EQ(u[x], 100 + c.ki * h * q + c.qi * h + x);
          const std::vector<int> g = mesh.GatherRanks(ranks, c.hi, c.ki);
          ASSERT_EQ(static_cast<int>(g.size()), q);
          for (int x = 0; x < q; ++x) EXPECT_EQ(g[x], 100 + c.ki * h * q + x * h + c.hi);
          EXPECT_EQ(mesh.RingPrev(mesh.RingNext(i)), i);
          EXPECT_EQ(mesh.Coord(mesh.RingNext(i)).ki, (c.ki + 1) % k);
        }
      }
}

}  // namespace
}  // namespace tessera::parallel
