#include "comm/conformance.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>

#include "comm/conformance_util.h"
#include "comm/p2p_collectives.h"
#include "core/rng.h"

namespace tessera::comm::testing {

namespace {

Status AllToAllVCase(Communicator& comm, uint64_t seed, uint64_t max_count) {
  Failures f(comm);
  const int n = comm.size();
  const int r = comm.rank();
  core::Rng shared(seed);
  std::vector<std::vector<int64_t>> matrix(n, std::vector<int64_t>(n));
  for (auto& row : matrix) {
    for (int64_t& c : row) c = static_cast<int64_t>(shared.Below(max_count + 1));
  }
  std::vector<int64_t> sc(n), rc(n);
  for (int j = 0; j < n; ++j) sc[j] = matrix[r][j];
  for (int i = 0; i < n; ++i) rc[i] = matrix[i][r];
  core::Rng local = core::Rng(seed).Fork(1000 + r);
  const Layout sl = MakeLayout(sc, local);
  const Layout rl = MakeLayout(rc, local);
  std::vector<float> send(sl.total, kSentinel);
  for (int j = 0; j < n; ++j) {
    for (int64_t k = 0; k < sc[j]; ++k) send[sl.displs[j] + k] = ValueF(seed, r, j, k);
  }
  std::vector<float> expected(rl.total, kSentinel);
  for (int i = 0; i < n; ++i) {
    for (int64_t k = 0; k < rc[i]; ++k) expected[rl.displs[i] + k] = ValueF(seed, i, r, k);
  }
  std::vector<float> native(rl.total, kSentinel), pairwise(rl.total, kSentinel);
  f.ExpectOk(comm.AllToAllV(send, sl.counts, sl.displs, native, rl.counts, rl.displs), "AllToAllV");
  f.ExpectOk(PairwiseAllToAllV(comm, send, sl.counts, sl.displs, pairwise, rl.counts, rl.displs),
             "PairwiseAllToAllV");
  f.ExpectSame(C(native), C(expected), "AllToAllV vs oracle");
  f.ExpectSame(C(pairwise), C(expected), "PairwiseAllToAllV vs oracle");
  f.ExpectSame(C(pairwise), C(native), "PairwiseAllToAllV vs native AllToAllV");
  return f.Result();
}

}  // namespace

Status CheckAllToAllV(Communicator& comm, uint64_t seed) { return AllToAllVCase(comm, seed, 5); }

Status CheckAllToAllVLarge(Communicator& comm, uint64_t seed) {
  return AllToAllVCase(comm, seed, 40000);
}

Status CheckAllGatherV(Communicator& comm, uint64_t seed) {
  Failures f(comm);
  const int n = comm.size();
  const int r = comm.rank();
  core::Rng shared(seed);
  std::vector<int64_t> counts(n);
  for (int64_t& c : counts) c = static_cast<int64_t>(shared.Below(7));
  core::Rng local = core::Rng(seed).Fork(2000 + r);
  const Layout rl = MakeLayout(counts, local);
  std::vector<float> send(counts[r]);
  for (int64_t k = 0; k < counts[r]; ++k) send[k] = ValueF(seed, r, 0, k);
  std::vector<float> expected(rl.total, kSentinel);
  for (int j = 0; j < n; ++j) {
    for (int64_t k = 0; k < counts[j]; ++k) expected[rl.displs[j] + k] = ValueF(seed, j, 0, k);
  }
  std::vector<float> native(rl.total, kSentinel), ring(rl.total, kSentinel);
  f.ExpectOk(comm.AllGatherV(send, native, rl.counts, rl.displs), "AllGatherV");
  f.ExpectOk(RingAllGatherV(comm, send, ring, rl.counts, rl.displs), "RingAllGatherV");
  f.ExpectSame(C(native), C(expected), "AllGatherV vs oracle");
  f.ExpectSame(C(ring), C(expected), "RingAllGatherV vs oracle");
  f.ExpectSame(C(ring), C(native), "RingAllGatherV vs native AllGatherV");
  return f.Result();
}

Status CheckAllGather(Communicator& comm, uint64_t seed) {
  Failures f(comm);
  const int n = comm.size();
  const int r = comm.rank();
  for (int64_t len : {int64_t{0}, int64_t{1}, int64_t{13}, int64_t{5000}}) {
    std::vector<float> send(len);
    for (int64_t k = 0; k < len; ++k) send[k] = ValueF(seed, r, len, k);
    std::vector<float> expected(n * len);
    for (int j = 0; j < n; ++j) {
      for (int64_t k = 0; k < len; ++k) expected[j * len + k] = ValueF(seed, j, len, k);
    }
    std::vector<float> native(n * len, kSentinel), ring(n * len, kSentinel);
    const std::string what = fmt::format("AllGather(len {})", len);
    f.ExpectOk(comm.AllGather(send, native), what);
    f.ExpectOk(RingAllGather(comm, send, ring), "Ring" + what);
    f.ExpectSame(C(native), C(expected), what + " vs oracle");
    f.ExpectSame(C(ring), C(native), "Ring" + what + " vs native");
  }
  return f.Result();
}

Status CheckAllReduceSumFloat(Communicator& comm, uint64_t seed) {
  Failures f(comm);
  const int n = comm.size();
  const int r = comm.rank();
  for (int64_t len : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1001}}) {
    std::vector<float> mine(len);
    std::vector<double> expected(len, 0.0), scale(len, 0.0);
    for (int64_t k = 0; k < len; ++k) mine[k] = ValueF(seed, r, len, k);
    for (int i = 0; i < n; ++i) {
      for (int64_t k = 0; k < len; ++k) {
        const double v = ValueF(seed, i, len, k);
        expected[k] += v;
        scale[k] += std::abs(v);
      }
    }
    std::vector<float> native = mine, ring = mine;
    const std::string what = fmt::format("AllReduceSum(float, len {})", len);
    f.ExpectOk(comm.AllReduceSum(std::span<float>(native)), what);
    f.ExpectOk(RingAllReduceSum(comm, ring), "Ring" + what);
    f.ExpectNear(C(native), C(expected), C(scale), 1e-6, what + " vs oracle");
    f.ExpectNear(C(ring), C(expected), C(scale), 1e-6, "Ring" + what + " vs oracle");
    // Every rank must hold the same bits.
    for (const std::vector<float>* result : {&native, &ring}) {
      std::vector<float> all(n * len);
      f.ExpectOk(comm.AllGather(*result, all), what + " gather results");
      for (int i = 0; i < n; ++i) {
        f.ExpectSame(std::span<const float>(all).subspan(i * len, len), C(*result),
                     fmt::format("{} ({}) identical on rank {}", what,
                                 result == &native ? "native" : "ring", i));
      }
    }
  }
  return f.Result();
}

Status CheckAllReduceSumDouble(Communicator& comm, uint64_t seed) {
  Failures f(comm);
  const int n = comm.size();
  const int r = comm.rank();
  const int64_t len = 333;
  std::vector<double> data(len), expected(len, 0.0), scale(len, 0.0);
  for (int64_t k = 0; k < len; ++k) data[k] = Value(seed, r, 1, k) * 1e6;
  for (int i = 0; i < n; ++i) {
    for (int64_t k = 0; k < len; ++k) {
      expected[k] += Value(seed, i, 1, k) * 1e6;
      scale[k] += std::abs(Value(seed, i, 1, k) * 1e6);
    }
  }
  f.ExpectOk(comm.AllReduceSum(std::span<double>(data)), "AllReduceSum(double)");
  f.ExpectNear(C(data), C(expected), C(scale), 1e-14, "AllReduceSum(double) vs oracle");
  return f.Result();
}

Status CheckBroadcast(Communicator& comm, uint64_t seed) {
  Failures f(comm);
  const int r = comm.rank();
  for (int root = 0; root < comm.size(); ++root) {
    const int64_t len = 1 + 977 * root;
    std::vector<float> expected(len), data(len, kSentinel);
    for (int64_t k = 0; k < len; ++k) expected[k] = ValueF(seed, root, 3, k);
    if (r == root) data = expected;
    f.ExpectOk(comm.Broadcast(data, root), fmt::format("Broadcast(root {})", root));
    f.ExpectSame(C(data), C(expected), fmt::format("Broadcast(root {}) data", root));
  }
  return f.Result();
}

Status CheckBarrier(Communicator& comm, uint64_t /*seed*/) {
  Failures f(comm);
  for (int i = 0; i < 3; ++i) f.ExpectOk(comm.Barrier(), fmt::format("Barrier #{}", i));
  return f.Result();
}

Status CheckPointToPoint(Communicator& comm, uint64_t seed) {
  Failures f(comm);
  const int n = comm.size();
  const int r = comm.rank();
  const int right = (r + 1) % n;
  const int left = (r + n - 1) % n;
  auto message = [&](int src, int tag, int index) {
    std::vector<float> m((src * 7 + tag * 3 + index) % 11 + 1);
    for (size_t k = 0; k < m.size(); ++k) m[k] = ValueF(seed, src, tag * 10 + index, k);
    return m;
  };
  // 1. Ring: several tags; two messages on tag 7 must arrive in order; receives are posted in
  //    a different tag order than the sends and are larger than the messages (prefix fill).
  {
    const std::vector<float> s7a = message(r, 7, 0), s5 = message(r, 5, 0), s7b = message(r, 7, 1);
    const std::vector<float> e7a = message(left, 7, 0), e5 = message(left, 5, 0),
                             e7b = message(left, 7, 1);
    std::vector<float> r5(e5.size() + 2, kSentinel), r7a(e7a.size() + 2, kSentinel),
        r7b(e7b.size() + 2, kSentinel), r9(3, kSentinel);
    std::vector<Request> reqs;
    auto post = [&](StatusOr<Request> req, const std::string& what) {
      f.ExpectOk(req.status(), what);
      if (req.ok()) reqs.push_back(std::move(req).value());
    };
    post(comm.IRecv(r5, left, 5), "IRecv tag 5");
    post(comm.IRecv(r7a, left, 7), "IRecv tag 7 #1");
    post(comm.IRecv(r9, left, 9), "IRecv tag 9");
    post(comm.IRecv(r7b, left, 7), "IRecv tag 7 #2");
    post(comm.ISend(s7a, right, 7), "ISend tag 7 #1");
    post(comm.ISend(s5, right, 5), "ISend tag 5");
    post(comm.ISend(s7b, right, 7), "ISend tag 7 #2");
    post(comm.ISend(std::span<const float>(), right, 9), "ISend tag 9 (empty)");
    f.ExpectOk(WaitAll(reqs), "WaitAll ring");
    for (const Request& q : reqs) f.Expect(!q.pending(), "request still pending after WaitAll");
    auto expect_prefix = [&](const std::vector<float>& got, const std::vector<float>& want,
                             const std::string& what) {
      f.ExpectSame(std::span<const float>(got).first(want.size()), C(want), what);
      for (size_t k = want.size(); k < got.size(); ++k) {
        f.Expect(got[k] == kSentinel, what + ": wrote past the message");
      }
    };
    expect_prefix(r5, e5, "tag 5 message");
    expect_prefix(r7a, e7a, "tag 7 first message");
    expect_prefix(r7b, e7b, "tag 7 second message");
    expect_prefix(r9, {}, "tag 9 empty message");
  }
  // 2. Self message, received after it was sent; Test() until done.
  {
    const std::vector<float> s = message(r, 3, 0);
    std::vector<float> got(s.size(), kSentinel);
    StatusOr<Request> send = comm.ISend(s, r, 3);
    StatusOr<Request> recv = comm.IRecv(got, r, 3);
    f.ExpectOk(send.status(), "ISend to self");
    f.ExpectOk(recv.status(), "IRecv from self");
    if (send.ok() && recv.ok()) {
      bool done = false;
      for (int polls = 0; polls < 1000000 && !done; ++polls) {
        StatusOr<bool> t = recv->Test();
        f.ExpectOk(t.status(), "Test self receive");
        done = !t.ok() || *t;
      }
      f.Expect(done, "self receive never completed under Test()");
      f.Expect(!recv->pending(), "completed request still pending");
      f.ExpectOk(send->Wait(), "Wait self send");
      f.ExpectSame(C(got), C(s), "self message");
    }
  }
  // 3. A message longer than the receive buffer fails the receive (truncation).
  {
    const std::vector<float> s = message(r, 4, 0);
    std::vector<float> small(s.size() - 1, kSentinel);  // messages have >= 1 element
    StatusOr<Request> send = comm.ISend(s, r, 4);
    StatusOr<Request> recv = comm.IRecv(small, r, 4);
    if (send.ok() && recv.ok()) {
      Status rs = recv->Wait();
      f.Expect(!rs.ok(), "receiving a longer message into a shorter buffer must fail");
      f.ExpectOk(send->Wait(), "send of the truncated message");
    } else {
      f.Add("posting the truncation test failed");
    }
  }
  // 4. Blocking Send/Recv with the classic even/odd ordering around the ring.
  if (n > 1) {
    const std::vector<float> s = message(r, 6, 0);
    const std::vector<float> want = message(left, 6, 0);
    std::vector<float> got(want.size(), kSentinel);
    if (r % 2 == 0) {
      f.ExpectOk(comm.Send(s, right, 6), "Send");
      f.ExpectOk(comm.Recv(got, left, 6), "Recv");
    } else {
      f.ExpectOk(comm.Recv(got, left, 6), "Recv");
      f.ExpectOk(comm.Send(s, right, 6), "Send");
    }
    f.ExpectSame(C(got), C(want), "blocking ring message");
  }
  return f.Result();
}

Status CheckOverlap(Communicator& comm, uint64_t seed) {
  Failures f(comm);
  const int n = comm.size();
  const int r = comm.rank();
  const int right = (r + 1) % n;
  const int left = (r + n - 1) % n;
  // Ring attention's pattern: post the next K/V exchange, compute, then wait; several steps.
  const int64_t len = 50000;
  std::vector<float> current(len), next(len, kSentinel);
  for (int64_t k = 0; k < len; ++k) current[k] = ValueF(seed, r, 0, k);
  double checksum = 0;
  for (int step = 0; step + 1 < n + 1; ++step) {
    StatusOr<Request> recv = comm.IRecv(next, left, 20);
    StatusOr<Request> send = comm.ISend(current, right, 20);
    f.ExpectOk(recv.status(), "IRecv K/V");
    f.ExpectOk(send.status(), "ISend K/V");
    for (int64_t k = 0; k < len; ++k) checksum += current[k] * 0.5;  // "compute"
    if (recv.ok()) f.ExpectOk(recv->Wait(), "Wait K/V receive");
    if (send.ok()) f.ExpectOk(send->Wait(), "Wait K/V send");
    const int origin = ((r - step - 1) % n + n) % n;
    std::vector<float> want(len);
    for (int64_t k = 0; k < len; ++k) want[k] = ValueF(seed, origin, 0, k);
    f.ExpectSame(C(next), C(want), fmt::format("K/V block at step {}", step));
    std::swap(current, next);
  }
  f.Expect(std::isfinite(checksum), "compute result");
  return f.Result();
}

Status CheckSubCommunicators(Communicator& comm, uint64_t seed) {
  Failures f(comm);
  const int n = comm.size();
  const int r = comm.rank();
  // One global order of rank sets; every rank walks it and creates the sets it belongs to.
  std::vector<std::vector<int>> sets = {{0, 1}, {1, 2, 3}, {0, 2}, {2, 0}, {r}};
  struct Member {
    std::vector<int> set;
    Communicator* comm;
    uint64_t seed;  // the same on every member: derived from the set's global position
  };
  std::vector<Member> mine;
  for (size_t j = 0; j < sets.size(); ++j) {
    const std::vector<int>& set = sets[j];
    const bool valid = std::all_of(set.begin(), set.end(), [&](int x) { return x < n; });
    const bool member = std::find(set.begin(), set.end(), r) != set.end();
    if (!valid) continue;
    if (!member) {
      f.ExpectCode(comm.Sub(set).status(), core::StatusCode::kInvalidArgument,
                   fmt::format("Sub([{}]) by non-member {}", fmt::join(set, ","), r));
      continue;
    }
    StatusOr<Communicator*> sub = comm.Sub(set);
    f.ExpectOk(sub.status(), fmt::format("Sub([{}])", fmt::join(set, ",")));
    if (!sub.ok()) continue;
    Communicator* s = *sub;
    const int index = static_cast<int>(std::find(set.begin(), set.end(), r) - set.begin());
    f.Expect(s->size() == static_cast<int>(set.size()), "sub size");
    f.Expect(s->rank() == index, fmt::format("sub rank: got {}, expected {}", s->rank(), index));
    std::vector<int> world;
    for (int x : set) world.push_back(comm.world_ranks()[x]);
    f.Expect(s->world_ranks() == world, "sub world_ranks");
    mine.push_back({set, s, seed + 100 * j});
  }
  for (const auto& [set, s, unused_seed] : mine) {
    StatusOr<Communicator*> again = comm.Sub(set);
    f.Expect(again.ok() && *again == s, "Sub is not cached: a second call gave another object");
  }
  // Use every sub-communicator, in the same global order on every rank.
  for (const auto& [set, s, sub_seed] : mine) {
    std::vector<float> v = {static_cast<float>(s->world_rank() + 1), 1.0f};
    f.ExpectOk(s->AllReduceSum(v), "sub AllReduceSum");
    float want = 0;
    for (int w : s->world_ranks()) want += static_cast<float>(w + 1);
    f.Expect(v[0] == want && v[1] == static_cast<float>(set.size()),
             fmt::format("sub [{}] AllReduceSum: got {} {}, expected {} {}", fmt::join(set, ","),
                         v[0], v[1], want, set.size()));
    f.ExpectOk(CheckAllToAllV(*s, sub_seed), fmt::format("sub [{}]", fmt::join(set, ",")));
    f.ExpectOk(CheckPointToPoint(*s, sub_seed), fmt::format("sub [{}]", fmt::join(set, ",")));
  }
  // A sub-communicator of a sub-communicator: ranks {2, 0} of [1, 2, 3] are world [3, 1].
  if (n >= 4 && (r == 1 || r == 3)) {
    StatusOr<Communicator*> parent = comm.Sub({1, 2, 3});
    if (parent.ok()) {
      StatusOr<Communicator*> nested = (*parent)->Sub({2, 0});
      f.ExpectOk(nested.status(), "nested Sub");
      if (nested.ok()) {
        f.Expect((*nested)->world_ranks() == std::vector<int>{3, 1}, "nested world_ranks");
        std::vector<float> v = {static_cast<float>(r)};
        f.ExpectOk((*nested)->AllReduceSum(v), "nested AllReduceSum");
        f.Expect(v[0] == 4.0f, "nested AllReduceSum value");
      }
    } else {
      f.Add("Sub({1,2,3}) not available for the nested test");
    }
  }
  f.ExpectCode(comm.Sub({}).status(), core::StatusCode::kInvalidArgument, "Sub({})");
  f.ExpectCode(comm.Sub({r, r}).status(), core::StatusCode::kInvalidArgument, "Sub duplicates");
  f.ExpectCode(comm.Sub({r, n}).status(), core::StatusCode::kInvalidArgument, "Sub out of range");
  f.ExpectOk(comm.Barrier(), "Barrier after subs");
  return f.Result();
}

Status CheckValidation(Communicator& comm, uint64_t /*seed*/) {
  Failures f(comm);
  const int n = comm.size();
  const int r = comm.rank();
  constexpr auto kBad = core::StatusCode::kInvalidArgument;
  std::vector<float> send(10, 1.0f), recv(10 * n, 0.0f);
  std::vector<int64_t> ones(n, 1), displs(n);
  PackedDispls(ones, displs);
  std::vector<int64_t> too_many(n + 1, 0), negative = ones, beyond = displs;
  negative[0] = -1;
  beyond[n - 1] = 10 * n;  // block [10n, 10n+1) is outside recv
  f.ExpectCode(comm.AllToAllV(send, too_many, displs, recv, ones, displs), kBad, "counts size");
  f.ExpectCode(comm.AllToAllV(send, negative, displs, recv, ones, displs), kBad, "negative");
  f.ExpectCode(comm.AllToAllV(send, ones, displs, recv, ones, beyond), kBad, "block outside");
  f.ExpectCode(
      comm.AllToAllV(std::span<const float>(recv).first(n), ones, displs, recv, ones, displs), kBad,
      "AllToAllV overlapping buffers");
  f.ExpectCode(PairwiseAllToAllV(comm, send, ones, displs, recv, ones, beyond), kBad,
               "PairwiseAllToAllV block outside");
  f.ExpectCode(comm.AllGatherV(std::span<const float>(send).first(2), recv, ones, displs), kBad,
               "AllGatherV send size");
  f.ExpectCode(RingAllGatherV(comm, std::span<const float>(send).first(2), recv, ones, displs),
               kBad, "RingAllGatherV send size");
  f.ExpectCode(comm.AllGather(send, std::span<float>(recv).first(3)), kBad, "AllGather size");
  f.ExpectCode(comm.Broadcast(send, n), kBad, "Broadcast root");
  f.ExpectCode(comm.Broadcast(send, -1), kBad, "Broadcast negative root");
  f.ExpectCode(comm.ISend(send, n, 0).status(), kBad, "ISend dst");
  f.ExpectCode(comm.ISend(send, r, kMaxTag + 1).status(), kBad, "ISend tag");
  f.ExpectCode(comm.IRecv(recv, -1, 0).status(), kBad, "IRecv src");
  f.ExpectCode(comm.IRecv(recv, r, -1).status(), kBad, "IRecv tag");
  f.ExpectCode(RingAllReduceSum(comm, recv, -3), kBad, "RingAllReduceSum tag");
  f.Expect(comm.broken().ok(), "argument errors must not break the communicator");
  f.ExpectOk(comm.Barrier(), "Barrier after argument errors");
  return f.Result();
}

Status CheckP2pTimeout(Communicator& comm, uint64_t /*seed*/) {
  using Clock = std::chrono::steady_clock;
  Failures f(comm);
  const int peer = comm.size() - 1;
  const int kNeverSent = 12345;
  if (comm.rank() == 0) {
    std::vector<float> buffer(4, kSentinel);
    StatusOr<Request> req = comm.IRecv(buffer, peer, kNeverSent);
    f.ExpectOk(req.status(), "IRecv");
    if (req.ok()) {
      StatusOr<bool> t = req->Test();
      f.Expect(t.ok() && !*t, "Test() on a message that never comes must say not done");
      const auto start = Clock::now();
      Status s = req->WaitFor(0.3);
      const double waited_s = std::chrono::duration<double>(Clock::now() - start).count();
      f.ExpectCode(s, core::StatusCode::kDeadlineExceeded, "WaitFor(0.3)");
      f.Expect(waited_s >= 0.29 && waited_s < 5.0,
               fmt::format("WaitFor(0.3) returned after {} s", waited_s));
      f.Expect(req->pending(), "a timed-out request stays pending");
    }
    // The op timeout (watchdog) applies to Wait() of requests created after it is set.
    const double saved = comm.op_timeout_s();
    comm.set_op_timeout_s(0.2);
    StatusOr<Request> req2 = comm.IRecv(buffer, peer, kNeverSent);
    comm.set_op_timeout_s(saved);
    if (req2.ok()) {
      const auto start = Clock::now();
      Status s = req2->Wait();
      const double waited_s = std::chrono::duration<double>(Clock::now() - start).count();
      f.ExpectCode(s, core::StatusCode::kDeadlineExceeded, "Wait() with op timeout 0.2 s");
      f.Expect(waited_s >= 0.19 && waited_s < 5.0,
               fmt::format("Wait() with op timeout 0.2 s returned after {} s", waited_s));
    } else {
      f.Add("second IRecv: " + req2.status().ToString());
    }
    // Both requests are cancelled when they go out of scope.
    f.Expect(buffer[0] == kSentinel, "a cancelled receive wrote into the buffer");
  }
  f.Expect(comm.broken().ok(), "a point-to-point timeout must not break the communicator");
  f.ExpectOk(comm.Barrier(), "Barrier after the timeout");
  std::vector<float> one = {1.0f};
  f.ExpectOk(comm.AllReduceSum(one), "AllReduceSum after the timeout");
  f.Expect(one[0] == static_cast<float>(comm.size()), "AllReduceSum value after the timeout");
  return f.Result();
}

Status CheckCollectiveDeadline(Communicator& world, uint64_t /*seed*/) {
  Failures f(world);
  if (world.size() < 2) return Status::Ok();
  const int r = world.rank();
  if (r <= 1) {
    StatusOr<Communicator*> sub = world.Sub({1, 0});
    f.ExpectOk(sub.status(), "Sub({1,0})");
    if (sub.ok()) {
      Communicator& s = **sub;
      s.set_op_timeout_s(0.3);
      if (r == 0) {
        f.ExpectCode(s.Barrier(), core::StatusCode::kDeadlineExceeded, "Barrier alone");
        f.ExpectCode(s.broken(), core::StatusCode::kDeadlineExceeded, "broken() after timeout");
        std::vector<float> v(1);
        f.ExpectCode(s.AllReduceSum(v), core::StatusCode::kFailedPrecondition,
                     "AllReduceSum on a broken communicator");
      }
      f.ExpectOk(world.Barrier(), "world Barrier #1");
      if (r == 1) {
        // Late arrival: MPI completes the matching barrier; the in-process backend reports that
        // rank 0 gave up. Either way it must return promptly.
        Status late = s.Barrier();
        f.Expect(late.ok() || late.code() == core::StatusCode::kUnavailable,
                 "late Barrier: " + late.ToString());
      }
    } else {
      f.ExpectOk(world.Barrier(), "world Barrier #1");
    }
  } else {
    f.ExpectOk(world.Barrier(), "world Barrier #1");
  }
  f.ExpectOk(world.Barrier(), "world Barrier #2");
  return f.Result();
}

std::vector<NamedCheck> ConformanceChecks() {
  std::vector<NamedCheck> checks = {
      {"AllToAllV", CheckAllToAllV},
      {"AllToAllVLarge", CheckAllToAllVLarge},
      {"AllGatherV", CheckAllGatherV},
      {"AllGather", CheckAllGather},
      {"AllReduceSumFloat", CheckAllReduceSumFloat},
      {"AllReduceSumDouble", CheckAllReduceSumDouble},
      {"Broadcast", CheckBroadcast},
      {"Barrier", CheckBarrier},
      {"PointToPoint", CheckPointToPoint},
      {"Overlap", CheckOverlap},
      {"SubCommunicators", CheckSubCommunicators},
      {"Validation", CheckValidation},
      {"P2pTimeout", CheckP2pTimeout},
  };
  std::vector<NamedCheck> typed = DTypeChecks();
  checks.insert(checks.end(), typed.begin(), typed.end());
  return checks;
}

}  // namespace tessera::comm::testing
