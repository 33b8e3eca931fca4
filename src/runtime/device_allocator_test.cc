#include "runtime/device_allocator.h"

#include <gtest/gtest.h>

namespace tessera::runtime {
namespace {

TEST(DeviceAllocatorTest, FreesInsideAnOpTakeEffectAtItsEnd) {
  HeapDeviceAllocator a;
  auto x = a.Allocate(100, "x", TensorKind::kActivation);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(a.live_bytes(), 512);
  a.BeginOp({.name = "op0", .phase = "test"});
  x->Reset();
  EXPECT_EQ(a.live_bytes(), 512);  // still live until the op ends
  auto y = a.Allocate(1000, "y", TensorKind::kActivation);
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->id(), 1);
  EXPECT_EQ(a.live_bytes(), 512 + 1024);
  a.EndOp();
  EXPECT_EQ(a.live_bytes(), 1024);
  EXPECT_EQ(a.peak_bytes(), 1536);
  y->Reset();
  EXPECT_EQ(a.live_bytes(), 0);  // outside ops: at once
}

TEST(DeviceAllocatorTest, BudgetRefusesWithoutChangingState) {
  HeapDeviceAllocator a(2048);
  auto x = a.Allocate(1024, "x", TensorKind::kActivation);
  ASSERT_TRUE(x.ok());
  auto y = a.Allocate(1025, "big", TensorKind::kWorkspace);
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), core::StatusCode::kInfeasible);
  EXPECT_NE(y.status().message().find("tensor big needs 1536 bytes with 1024 live, budget 2048"),
            std::string::npos)
      << y.status().message();
  EXPECT_EQ(a.live_bytes(), 1024);
  EXPECT_EQ(a.allocations(), 1);
  auto bad = a.Allocate(0, "empty", TensorKind::kActivation);
  EXPECT_EQ(bad.status().code(), core::StatusCode::kInvalidArgument);
}

TEST(DeviceAllocatorTest, MoveTransfersOwnership) {
  HeapDeviceAllocator a;
  auto x = a.AllocateF32(10, "x", TensorKind::kActivation);
  ASSERT_TRUE(x.ok());
  DeviceTensor t = std::move(*x);
  EXPECT_EQ(t.f32_count(), 10);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
  DeviceTensor u;
  u = std::move(t);
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(a.live_bytes(), 512);
  u.Reset();
  EXPECT_EQ(a.live_bytes(), 0);
}

TEST(DeviceAllocatorTest, GranularityFourCountsExactFloatBytes) {
  HeapDeviceAllocator a(0, 4);
  auto x = a.AllocateF32(10, "x", TensorKind::kActivation);
  auto y = a.AllocateF32(3, "y", TensorKind::kWorkspace);
  ASSERT_TRUE(x.ok() && y.ok());
  EXPECT_EQ(a.live_bytes(), 52);
  x->Reset();
  EXPECT_EQ(a.live_bytes(), 12);
  EXPECT_EQ(a.peak_bytes(), 52);
  a.ResetPeak();
  EXPECT_EQ(a.peak_bytes(), 12);
}

TEST(DeviceAllocatorTest, AlignBytesRoundsUpToTheGranularity) {
  EXPECT_EQ(AlignBytes(0), 0);
  EXPECT_EQ(AlignBytes(1), 512);
  EXPECT_EQ(AlignBytes(512), 512);
  EXPECT_EQ(AlignBytes(513), 1024);
  EXPECT_EQ(AlignBytes(13, 4), 16);
  EXPECT_EQ(AlignBytes(12, 4), 12);
}

}  // namespace
}  // namespace tessera::runtime
