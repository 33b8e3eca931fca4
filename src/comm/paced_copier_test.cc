#include "comm/paced_copier.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "comm/futex.h"

namespace tessera::comm {
namespace {

std::unique_ptr<PacedCopier> MakeCopier(double bytes_per_s, int64_t latency_ns = 0) {
  auto c = PacedCopier::Create(bytes_per_s, latency_ns);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(*c) : nullptr;
}

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 31 + (i >> 11));
  return v;
}

double SecondsSince(int64_t t0_ns) { return static_cast<double>(NowNs() - t0_ns) * 1e-9; }

TEST(PacedCopierTest, RefusesBadParameters) {
  for (double bw : {0.0, -1.0, std::numeric_limits<double>::infinity(),
                    std::numeric_limits<double>::quiet_NaN()}) {
    auto c = PacedCopier::Create(bw);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), core::StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find("bandwidth"), std::string::npos);
  }
  auto c = PacedCopier::Create(1e9, -1);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("latency"), std::string::npos);
}

// 8 MiB at 200 MB/s is 41.9 ms: the copy is never done earlier than that, and the bytes arrive.
TEST(PacedCopierTest, PacesOneCopyAtItsBandwidth) {
  auto copier = MakeCopier(200e6);
  ASSERT_TRUE(copier);
  const size_t n = size_t{8} << 20;
  const std::vector<uint8_t> src = Pattern(n, 7);
  std::vector<uint8_t> dst(n, 0);
  const double ideal_s = copier->JobSeconds(static_cast<int64_t>(n));
  EXPECT_NEAR(ideal_s, 8.0 * 1048576 / 200e6, 1e-12);
  const int64_t t0 = NowNs();
  const PacedCopier::Ticket t = copier->Submit(dst.data(), src.data(), static_cast<int64_t>(n));
  EXPECT_EQ(t, 1u);
  copier->Wait(t);
  const double took = SecondsSince(t0);
  EXPECT_GE(took, 0.9 * ideal_s);  // how much later it is done: bench_link_timing
  EXPECT_TRUE(copier->Done(t));
  EXPECT_EQ(dst, src);
  const PacedCopier::Stats s = copier->stats();
  EXPECT_EQ(s.jobs, 1);
  EXPECT_EQ(s.bytes, static_cast<int64_t>(n));
  EXPECT_NEAR(s.busy_s, ideal_s, 1e-9);
  EXPECT_GE(s.late_ns, 0);
}

// Back-to-back jobs queue on the one resource: the second finishes after both jobs' bytes.
TEST(PacedCopierTest, QueuedJobsShareTheResource) {
  auto copier = MakeCopier(100e6);
  ASSERT_TRUE(copier);
  const size_t n = size_t{2} << 20;
  const std::vector<uint8_t> a = Pattern(n, 1), b = Pattern(n, 2);
  std::vector<uint8_t> da(n), db(n);
  const int64_t t0 = NowNs();
  copier->Submit(da.data(), a.data(), static_cast<int64_t>(n));
  const PacedCopier::Ticket tb = copier->Submit(db.data(), b.data(), static_cast<int64_t>(n));
  copier->Wait(tb);
  EXPECT_GE(SecondsSince(t0), 0.9 * 2 * copier->JobSeconds(static_cast<int64_t>(n)));
  EXPECT_EQ(da, a);
  EXPECT_EQ(db, b);
}

TEST(PacedCopierTest, LatencyIsPerJobAndOverlaps) {
  auto copier = MakeCopier(1e12, 30'000'000);  // 30 ms, bandwidth negligible
  ASSERT_TRUE(copier);
  uint8_t src[4] = {1, 2, 3, 4}, dst[4][4] = {};
  const int64_t t0 = NowNs();
  PacedCopier::Ticket last = 0;
  for (auto& d : dst) last = copier->Submit(d, src, 4);
  copier->Wait(last);
  const double took = SecondsSince(t0);
  EXPECT_GE(took, 0.9 * 0.030);
  // That the four latencies overlap (done after ~30 ms, not 120) is a wall-clock figure, which a
  // loaded machine can stretch: bench_link_timing measures it; the reservation rule itself
  // (latency does not hold the resource) is checked exactly in the LinkFabric tests.
  for (auto& d : dst) EXPECT_EQ(std::vector<uint8_t>(d, d + 4), std::vector<uint8_t>(src, src + 4));
}

// Jobs complete in submission order: a later job's bytes win on overlapping destinations, and a
// small job behind a large one is not done before it.
TEST(PacedCopierTest, CompletesInSubmissionOrder) {
  auto copier = MakeCopier(400e6);
  ASSERT_TRUE(copier);
  const size_t n = size_t{1} << 20;
  const std::vector<uint8_t> first = Pattern(n, 3), second = Pattern(n, 9);
  std::vector<uint8_t> shared(n), small_src(64, 5), small_dst(64, 0);
  const PacedCopier::Ticket t1 = copier->Submit(shared.data(), first.data(), n);
  const PacedCopier::Ticket t2 = copier->Submit(shared.data(), second.data(), n);
  const PacedCopier::Ticket t3 = copier->Submit(small_dst.data(), small_src.data(), 64);
  EXPECT_LT(t1, t2);
  EXPECT_LT(t2, t3);
  copier->Wait(t3);
  EXPECT_TRUE(copier->Done(t1));
  EXPECT_TRUE(copier->Done(t2));
  EXPECT_EQ(shared, second);
  EXPECT_EQ(small_dst, small_src);
  EXPECT_EQ(copier->in_flight(), 0);
}

TEST(PacedCopierTest, ConcurrentSubmittersAllArrive) {
  auto copier = MakeCopier(2e9);
  ASSERT_TRUE(copier);
  constexpr int kThreads = 4, kJobs = 50;
  constexpr size_t kBytes = 4096;
  std::vector<std::vector<uint8_t>> src(kThreads * kJobs), dst(kThreads * kJobs);
  for (size_t i = 0; i < src.size(); ++i) {
    src[i] = Pattern(kBytes, static_cast<uint8_t>(i));
    dst[i].assign(kBytes, 0);
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      PacedCopier::Ticket last = 0;
      for (int j = 0; j < kJobs; ++j) {
        const size_t k = static_cast<size_t>(t * kJobs + j);
        const PacedCopier::Ticket ticket = copier->Submit(dst[k].data(), src[k].data(), kBytes);
        EXPECT_GT(ticket, last);  // this thread's tickets increase
        last = ticket;
      }
      copier->Wait(last);
    });
  }
  for (std::thread& t : threads) t.join();
  copier->WaitAll();
  EXPECT_EQ(dst, src);
  const PacedCopier::Stats s = copier->stats();
  EXPECT_EQ(s.jobs, kThreads * kJobs);
  EXPECT_EQ(s.bytes, static_cast<int64_t>(kThreads * kJobs * kBytes));
}

TEST(PacedCopierTest, DestructorDrains) {
  const std::vector<uint8_t> src = Pattern(1 << 16, 4);
  std::vector<uint8_t> dst(src.size(), 0);
  const int64_t t0 = NowNs();
  {
    auto copier = MakeCopier(10e6);  // 6.5 ms
    ASSERT_TRUE(copier);
    copier->Submit(dst.data(), src.data(), static_cast<int64_t>(src.size()));
    copier->Submit(dst.data(), src.data(), 0);  // zero bytes: paced by latency only
  }
  EXPECT_GE(SecondsSince(t0), 0.9 * static_cast<double>(src.size()) / 10e6);
  EXPECT_EQ(dst, src);
}

}  // namespace
}  // namespace tessera::comm
