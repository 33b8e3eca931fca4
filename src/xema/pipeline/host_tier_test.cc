#include "xema/pipeline/host_tier.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/op_scope.h"

namespace tessera::xema {
namespace {

std::unique_ptr<HostTier> MakeTier(double bytes_per_s, int64_t host_budget = 0) {
  auto t = HostTier::Create(bytes_per_s, 0, host_budget);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(*t) : nullptr;
}

runtime::DeviceTensor Filled(runtime::DeviceAllocator& a, int64_t floats, float seed,
                             const std::string& name) {
  auto t = a.AllocateF32(floats, name, TensorKind::kActivation);
  EXPECT_TRUE(t.ok());
  for (int64_t i = 0; i < floats; ++i) t->f32()[i] = seed + 0.25f * static_cast<float>(i);
  return std::move(*t);
}

TEST(HostTierTest, RefusesBadLinks) {
  EXPECT_FALSE(HostTier::Create(0).ok());
  EXPECT_FALSE(HostTier::Create(1e9, -1).ok());
  EXPECT_FALSE(HostTier::Create(1e9, 0, -1).ok());
  runtime::TimeScale s;
  s.scale = 1000;
  auto bad = HostTier::ForDevice(0, s);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("host_gbps: got"), std::string::npos);
  s.scale = 0;
  EXPECT_FALSE(HostTier::ForDevice(55, s).ok());
}

// bytes/s = host GB/s / s, latency = latency x s, as Compass scales its links.
TEST(HostTierTest, ForDeviceScalesTheLinkLikeCompass) {
  runtime::TimeScale s;
  s.scale = 2000;
  auto t = HostTier::ForDevice(kH100Pcie5HostGbps, s, 2e-6);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_DOUBLE_EQ((*t)->bytes_per_s(), 55e9 / 2000);
  EXPECT_EQ((*t)->latency_ns(), 4'000'000);
  EXPECT_NEAR((*t)->CopySeconds(55'000'000), 2.0 + 0.004, 1e-9);
}

TEST(HostTierTest, ParkAndPrefetchRoundTripExactly) {
  runtime::HeapDeviceAllocator device;
  auto tier = MakeTier(2e9);
  ASSERT_TRUE(tier);
  const int64_t floats = 10'000;
  std::vector<float> want(floats);
  {
    TieredTensor t = tier->Adopt(Filled(device, floats, 3.0f, "x"));
    std::memcpy(want.data(), t.device().data(), floats * 4);
    EXPECT_EQ(device.live_bytes(), AlignBytes(floats * 4));
    ASSERT_TRUE(tier->Park(t).ok());  // outside ops: the bytes are released at once
    EXPECT_FALSE(t.on_device());
    EXPECT_TRUE(t.on_host());
    EXPECT_EQ(device.live_bytes(), 0);
    EXPECT_EQ(tier->stats().host_live_bytes, floats * 4);
    ASSERT_TRUE(tier->Prefetch(t, device, "x.restored", TensorKind::kActivation).ok());
    EXPECT_TRUE(t.fetching());
    tier->Fetch(t);
    EXPECT_FALSE(t.fetching());
    EXPECT_EQ(std::memcmp(t.device().data(), want.data(), floats * 4), 0);
    // A read-only tensor is copied out once: parking it again copies nothing.
    ASSERT_TRUE(tier->Park(t).ok());
    const HostTierStats s = tier->stats();
    EXPECT_EQ(s.to_host_copies, 1);
    EXPECT_EQ(s.to_device_copies, 1);
    EXPECT_EQ(s.to_host_bytes, floats * 4);
    EXPECT_EQ(s.to_device_bytes, floats * 4);
    EXPECT_NEAR(s.to_host_busy_s, floats * 4 / 2e9, 1e-12);
  }
  EXPECT_EQ(tier->stats().host_live_bytes, 0);
  EXPECT_EQ(tier->stats().host_peak_bytes, floats * 4);
  EXPECT_EQ(device.live_bytes(), 0);
}

// Parked inside an op, the bytes are released when the op ends (the allocator's rule).
TEST(HostTierTest, ParkInsideAnOpReleasesAtItsEnd) {
  runtime::HeapDeviceAllocator device;
  auto tier = MakeTier(2e9);
  ASSERT_TRUE(tier);
  TieredTensor t = tier->Adopt(Filled(device, 4096, 1.0f, "ctx"));
  {
    runtime::OpScope op(device, "use", {});
    ASSERT_TRUE(tier->Park(t).ok());
    EXPECT_EQ(device.live_bytes(), AlignBytes(4096 * 4));
  }
  EXPECT_EQ(device.live_bytes(), 0);
}

// The exposed time is the part of a copy that compute did not hide: the time Park waits for a
// copy still in flight, and nothing for a copy already done. Checked by what the code fixes, not
// by how long this thread happened to run: a Park with nothing overlapping does not return
// before the copy's paced time and counts at most its own duration; a Park after the copy is
// done counts exactly zero.
TEST(HostTierTest, ExposedTimeIsTheCopyNotHidden) {
  runtime::HeapDeviceAllocator device;
  const double bw = 100e6;
  auto tier = MakeTier(bw);
  ASSERT_TRUE(tier);
  const int64_t floats = 1'000'000;  // 4 MB: 40 ms
  const double copy_s = tier->CopySeconds(floats * 4);
  TieredTensor a = tier->Adopt(Filled(device, floats, 0.0f, "a"));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(tier->Park(a).ok());  // nothing overlaps: exposed
  const double park_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(park_s, 0.9 * copy_s);
  EXPECT_LE(tier->stats().exposed_s, park_s);
  EXPECT_GE(tier->stats().exposed_s, 0.0);
  tier->ResetStats();
  EXPECT_EQ(tier->stats().exposed_s, 0.0);
  EXPECT_EQ(tier->stats().to_host_copies, 0);
  TieredTensor b = tier->Adopt(Filled(device, floats, 1.0f, "b"));
  ASSERT_TRUE(tier->ToHost(b).ok());
  // "Compute" until the copy is done (the deadline only ends a broken run).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (tier->copies_in_flight() > 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(tier->copies_in_flight(), 0);
  ASSERT_TRUE(tier->Park(b).ok());
  EXPECT_EQ(tier->stats().exposed_s, 0.0);  // wholly hidden
}

TEST(HostTierTest, FailuresChangeNothing) {
  runtime::HeapDeviceAllocator device(AlignBytes(4096 * 4) + 512);
  auto tier = MakeTier(2e9, /*host_budget=*/4096 * 4);
  ASSERT_TRUE(tier);
  TieredTensor t = tier->Adopt(Filled(device, 4096, 1.0f, "a"));
  TieredTensor u = tier->Adopt(Filled(device, 1, 1.0f, "b"));
  ASSERT_TRUE(tier->Park(t).ok());
  // The host budget is full: the next host copy is refused and the device copy stays.
  const core::Status host_full = tier->Park(u);
  ASSERT_FALSE(host_full.ok());
  EXPECT_EQ(host_full.code(), core::StatusCode::kInfeasible);
  EXPECT_NE(host_full.message().find("out of host memory"), std::string::npos);
  EXPECT_TRUE(u.on_device());
  EXPECT_FALSE(u.on_host());
  // The device is too small for t's copy next to a second tensor: Infeasible, t stays parked.
  auto filler = device.AllocateF32(512, "filler", TensorKind::kActivation);
  ASSERT_TRUE(filler.ok());
  const core::Status device_full = tier->Prefetch(t, device, "a.restored", TensorKind::kActivation);
  EXPECT_EQ(device_full.code(), core::StatusCode::kInfeasible);
  EXPECT_FALSE(t.on_device());
  filler->Reset();
  ASSERT_TRUE(tier->Prefetch(t, device, "a.restored", TensorKind::kActivation).ok());
}

// Destroying a tensor with copies in flight waits for them (no copy touches freed memory:
// ASan checks it) and counts the wait as exposed.
TEST(HostTierTest, ResetWaitsForCopiesInFlight) {
  runtime::HeapDeviceAllocator device;
  auto tier = MakeTier(50e6);
  ASSERT_TRUE(tier);
  {
    TieredTensor t = tier->Adopt(Filled(device, 250'000, 2.0f, "a"));  // 1 MB: 20 ms
    ASSERT_TRUE(tier->ToHost(t).ok());
    EXPECT_EQ(tier->copies_in_flight(), 1);
  }
  EXPECT_EQ(tier->copies_in_flight(), 0);
  EXPECT_GT(tier->stats().exposed_s, 0.0);
  TieredTensor m;
  {
    runtime::DeviceTensor w = Filled(device, 1000, 5.0f, "w");
    auto mirror = tier->Mirror(w);
    ASSERT_TRUE(mirror.ok());
    m = std::move(*mirror);
    EXPECT_EQ(std::memcmp(m.host().data(), w.data(), 4000), 0);
  }
  EXPECT_EQ(tier->stats().mirrored_bytes, 4000);
  ASSERT_TRUE(tier->Prefetch(m, device, "w", TensorKind::kWeight).ok());
  m.Reset();  // fetch in flight: waits
  EXPECT_EQ(tier->copies_in_flight(), 0);
  EXPECT_EQ(device.live_bytes(), 0);
  EXPECT_EQ(tier->stats().host_live_bytes, 0);
}

}  // namespace
}  // namespace tessera::xema
