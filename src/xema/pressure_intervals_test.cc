#include "xema/pressure_intervals.h"

#include <gtest/gtest.h>

#include "core/units.h"

namespace tessera::xema {
namespace {

TEST(PressureIntervalsTest, HandMadeTrace) {
  auto t = ReadTraceFile(std::string(TESSERA_XEMA_TESTDATA) + "/tiny_t2i.json");
  ASSERT_TRUE(t.ok());
  auto x = Expand(*t);
  ASSERT_TRUE(x.ok());
  // Live activations by op (MiB): 3 2 12 6 3 13 5 2 13 36; weights 28 MiB. Budget 40 MiB
  // leaves 12 MiB: ops 5 (13) and 8..9 (13, 36) are over it.
  auto r = FindPressureIntervals(*t, *x, 40 * core::kMiBInt64);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->available_bytes, 12 * core::kMiBInt64);
  EXPECT_EQ(r->peak_live_bytes, 36 * core::kMiBInt64);
  ASSERT_EQ(r->intervals.size(), 2u);
  EXPECT_EQ(r->intervals[0].first_op, 5);
  EXPECT_EQ(r->intervals[0].last_op, 5);
  EXPECT_EQ(r->intervals[0].excess_bytes, 1 * core::kMiBInt64);
  EXPECT_EQ(r->intervals[0].phases, std::vector<Phase>{Phase::kDenoise});
  EXPECT_EQ(r->intervals[1].first_op, 8);
  EXPECT_EQ(r->intervals[1].last_op, 9);
  EXPECT_EQ(r->intervals[1].peak_op, 9);
  EXPECT_EQ(r->intervals[1].excess_bytes, 24 * core::kMiBInt64);
  EXPECT_EQ(r->intervals[1].phases, std::vector<Phase>{Phase::kVae});
  EXPECT_EQ(r->ops_under_pressure, 3);
  // A reserve shrinks B_a: 40 - 28 - 8 = 4 MiB; over it: ops 2..3 (12, 6), 5..6 (13, 5) and
  // 8..9 (13, 36).
  r = FindPressureIntervals(*t, *x, 40 * core::kMiBInt64, 8 * core::kMiBInt64);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->intervals.size(), 3u);
  EXPECT_EQ(r->intervals[0].first_op, 2);
  EXPECT_EQ(r->intervals[0].last_op, 3);
  EXPECT_EQ(r->intervals[0].excess_bytes, 8 * core::kMiBInt64);
  EXPECT_EQ(r->intervals[1].first_op, 5);
  EXPECT_EQ(r->intervals[1].last_op, 6);
  EXPECT_EQ(r->intervals[2].first_op, 8);
  EXPECT_EQ(r->intervals[2].excess_bytes, 32 * core::kMiBInt64);
  // Enough memory: no interval.
  r = FindPressureIntervals(*t, *x, 64 * core::kMiBInt64);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->intervals.empty());
  r = FindPressureIntervals(*t, *x, 64 * core::kMiBInt64 - 512);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->intervals.size(), 1u);
  EXPECT_EQ(r->intervals[0].excess_bytes, 512);
}

TEST(PressureIntervalsTest, BudgetBelowWeightsNamesTheNumbers) {
  auto t = ReadTraceFile(std::string(TESSERA_XEMA_TESTDATA) + "/tiny_t2i.json");
  ASSERT_TRUE(t.ok());
  auto x = Expand(*t);
  ASSERT_TRUE(x.ok());
  auto r = FindPressureIntervals(*t, *x, 20 * core::kMiBInt64);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(
                "budget: got 20 MiB (20971520 bytes), below the resident weights 28 MiB"),
            std::string::npos)
      << r.status().message();
  EXPECT_FALSE(FindPressureIntervals(*t, *x, 0).ok());
  EXPECT_FALSE(FindPressureIntervals(*t, *x, 30 * core::kMiBInt64, 4 * core::kMiBInt64).ok());
  EXPECT_TRUE(FindPressureIntervals(*t, *x, 28 * core::kMiBInt64).ok());
}

}  // namespace
}  // namespace tessera::xema
