#include "comm/copy_engine.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <queue>

#include "comm/futex.h"
#include "core/check.h"

namespace tessera::comm {

namespace {

std::chrono::steady_clock::time_point ToTimePoint(int64_t ns) {
  // libstdc++'s steady_clock is CLOCK_MONOTONIC, the clock of NowNs().
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns));
}

int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The median lateness of short absolute sleeps of this thread, clamped to [0, 200 us].
int64_t MeasureSleepOvershootNs() {
  std::vector<int64_t> late;
  for (int i = 0; i < 15; ++i) {
    const int64_t target = NowNs() + 200'000;
    SleepUntilNs(target);
    late.push_back(NowNs() - target);
  }
  std::sort(late.begin(), late.end());
  return std::clamp<int64_t>(late[late.size() / 2], 0, 200'000);
}

}  // namespace

struct CopyEngine::Active {
  Put put;
  int64_t reserved_wire = 0;  // wire bytes reserved so far
  int64_t reserve_at_ns = 0;  // when the next packet may be reserved
  int64_t not_before_ns = 0;  // earliest wire start of the next packet
  int64_t arrival_ns = 0;     // the latest arrival of its packets on the timeline
  int in_flight = 0;          // reserved packets not copied yet
  bool Done() const { return reserved_wire >= put.wire_bytes && in_flight == 0; }
};

CopyEngine::CopyEngine(LinkFabric* fabric, int self_endpoint)
    : fabric_(fabric), self_(self_endpoint) {
  // Measured on the engine's own thread (its timer slack), before it takes work.
  std::promise<void> measured;
  std::future<void> ready = measured.get_future();
  // Wake-up latency of a futex signal: ping-pong with the engine thread, half the median
  // round trip.
  std::atomic<uint32_t> ping{0}, pong{0};
  constexpr int kRoundTrips = 15;
  thread_ = std::thread([this, &measured, &ping, &pong] {
    UseFineTimerSlack();
    const int64_t overshoot = MeasureSleepOvershootNs();
    for (uint32_t i = 1; i <= kRoundTrips; ++i) {
      WaitAtLeast(&ping, i, kNoDeadline);
      Bump(&pong);
    }
    wake_lead_ns_.store(overshoot);
    measured.set_value();
    Loop();
  });
  std::vector<int64_t> rtt;
  for (uint32_t i = 1; i <= kRoundTrips; ++i) {
    const int64_t t0 = NowNs();
    Bump(&ping);
    WaitAtLeast(&pong, i, kNoDeadline);
    rtt.push_back(NowNs() - t0);
  }
  ready.wait();
  std::sort(rtt.begin(), rtt.end());
  set_wake_lead_ns(std::min<int64_t>(wake_lead_ns_.load() + rtt[rtt.size() / 2] / 2, 300'000));
}

CopyEngine::~CopyEngine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
}

void CopyEngine::set_wake_lead_ns(int64_t lead_ns) {
  wake_lead_ns_.store(std::clamp<int64_t>(lead_ns, 0, 1'000'000), std::memory_order_relaxed);
  work_cv_.notify_one();  // re-plan the sleep with the new lead
}

void CopyEngine::Submit(const Put& put) {
  CHECK(put.dst_endpoint != self_ && put.bytes >= 0 && put.wire_bytes >= 0);
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(put);
    queue_.back().submitted_ns = NowNs();
    ++submitted_;
  }
  work_cv_.notify_one();
}

bool CopyEngine::WaitAllDone(int64_t deadline_ns) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = submitted_;
  auto done = [&] { return finished_ >= target; };
  if (deadline_ns == kNoDeadline) {
    done_cv_.wait(lock, done);
    return true;
  }
  return done_cv_.wait_until(lock, ToTimePoint(deadline_ns), done);
}

CopyEngine::Stats CopyEngine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

// The engine thread's own state across wake-ups (Loop's; no lock needed).
struct CopyEngine::LoopState {
  struct Packet {
    int64_t arrival_ns;
    Active* message;
    int64_t offset, bytes;  // real bytes of this packet within the message
    uint64_t seq;           // reservation order: breaks ties, so a stream stays in order
    bool operator>(const Packet& o) const {
      return arrival_ns != o.arrival_ns ? arrival_ns > o.arrival_ns : seq > o.seq;
    }
  };
  std::priority_queue<Packet, std::vector<Packet>, std::greater<Packet>> pending;
  std::deque<std::unique_ptr<Active>> active;
  std::vector<int> claimed;  // destinations whose stream is taken this round
  uint64_t next_seq = 0;
  Stats local;
  int64_t packet_bytes = 0;  // the fabric's packet size
};

bool CopyEngine::TakeSubmitted(LoopState& s) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!queue_.empty()) {
    auto a = std::make_unique<Active>();
    a->put = queue_.front();
    a->not_before_ns =
        std::max(a->put.not_before_ns, a->put.ready_ns > 0 ? a->put.ready_ns : a->put.submitted_ns);
    queue_.pop_front();
    s.active.push_back(std::move(a));
  }
  return !(stop_ && s.active.empty());
}

void CopyEngine::ReservePackets(LoopState& s, int64_t now) {
  const int64_t packet = s.packet_bytes;
  // Messages to one destination form a stream: only the oldest one still reserving may.
  const size_t n = s.active.size();
  s.claimed.clear();
  for (size_t i = 0; i < n; ++i) {
    Active* a = s.active[i].get();
    if (a->reserved_wire >= a->put.wire_bytes && a->reserved_wire > 0) continue;
    if (std::find(s.claimed.begin(), s.claimed.end(), a->put.dst_endpoint) != s.claimed.end()) {
      continue;
    }
    s.claimed.push_back(a->put.dst_endpoint);
    if (a->reserve_at_ns > now) continue;
    // A message with no wire bytes still pays its route's latency.
    const int64_t w = std::min(packet, a->put.wire_bytes - a->reserved_wire);
    // The first packet may start when the message was submitted (or its data were ready);
    // a later one when its turn came, even if this thread woke up after that.
    const int64_t earliest =
        a->reserved_wire == 0 ? a->not_before_ns : std::max(a->reserve_at_ns, a->not_before_ns);
    const LinkFabric::Reservation r = fabric_->Reserve(self_, a->put.dst_endpoint, w, earliest);
    // The real bytes in proportion to the wire bytes; the last packet takes the rest.
    const int64_t w0 = a->reserved_wire, w1 = a->reserved_wire + w;
    const int64_t b0 = a->put.wire_bytes == 0 ? 0 : a->put.bytes * w0 / a->put.wire_bytes;
    const int64_t b1 =
        w1 >= a->put.wire_bytes ? a->put.bytes : a->put.bytes * w1 / a->put.wire_bytes;
    a->reserved_wire = std::max<int64_t>(w1, 1);  // a 0-byte message counts as reserved
    a->reserve_at_ns = r.last_start_ns;
    a->arrival_ns = std::max(a->arrival_ns, r.arrival_ns);
    ++a->in_flight;
    s.pending.push(LoopState::Packet{r.arrival_ns, a, b0, b1 - b0, s.next_seq++});
    ++s.local.packets;
    s.local.wire_bytes += w;
    // The stream's next message may queue its first packet right behind this last one.
    if (a->reserved_wire >= a->put.wire_bytes) s.claimed.pop_back();
  }
}

int64_t CopyEngine::DeliverDue(LoopState& s, int64_t lead) {
  int64_t finished_now = 0;
  while (!s.pending.empty() && s.pending.top().arrival_ns <= NowNs() + lead) {
    const LoopState::Packet p = s.pending.top();
    s.pending.pop();
    s.local.late_wake_ns += std::max<int64_t>(0, NowNs() - p.arrival_ns);
    if (p.bytes > 0)
      std::memcpy(p.message->put.dst + p.offset, p.message->put.src + p.offset,
                  static_cast<size_t>(p.bytes));
    if (--p.message->in_flight == 0 && p.message->reserved_wire >= p.message->put.wire_bytes) {
      if (std::atomic<int64_t>* stamp = p.message->put.arrival_stamp; stamp != nullptr) {
        int64_t seen = stamp->load();
        while (seen < p.message->arrival_ns &&
               !stamp->compare_exchange_weak(seen, p.message->arrival_ns)) {
        }
      }
      if (p.message->put.signal != nullptr) Bump(p.message->put.signal);
      if (p.message->put.wake != nullptr) Bump(p.message->put.wake);
      ++finished_now;
    }
  }
  return finished_now;
}

int64_t CopyEngine::NextWakeNs(LoopState& s, int64_t lead) {
  // Only a message's last packet needs its own wake-up (it raises the signal); the packets
  // before it are copied on whichever wake-up comes after their arrival, which halves the
  // wake-ups of a long message.
  int64_t wake = kNoDeadline;
  // Only the head of each stream may reserve; the messages queued behind it wait for it
  // (counting them would wake the thread again and again: a busy loop).
  s.claimed.clear();
  for (const auto& a : s.active) {
    if (a->reserved_wire >= a->put.wire_bytes && a->reserved_wire > 0) {
      if (a->in_flight > 0) wake = std::min(wake, a->arrival_ns - lead);
      continue;
    }
    if (std::find(s.claimed.begin(), s.claimed.end(), a->put.dst_endpoint) != s.claimed.end()) {
      continue;
    }
    s.claimed.push_back(a->put.dst_endpoint);
    wake = std::min(wake, a->reserve_at_ns);
  }
  return wake;
}

void CopyEngine::Loop() {
  LoopState s;
  s.packet_bytes = fabric_->links().packet_bytes;
  for (;;) {
    ++s.local.wakeups;
    if (!TakeSubmitted(s)) break;
    const int64_t now = NowNs();
    // 1. Reserve: every message whose turn has come gets its next packet on the timeline.
    ReservePackets(s, now);
    // 2. Deliver every packet whose arrival time has come.
    const int64_t lead = wake_lead_ns_.load(std::memory_order_relaxed);
    const int64_t finished_now = DeliverDue(s, lead);
    // 3. Retire finished messages.
    if (finished_now > 0) {
      s.active.erase(std::remove_if(s.active.begin(), s.active.end(),
                                    [](const std::unique_ptr<Active>& a) {
                                      return a->in_flight == 0 &&
                                             a->reserved_wire >= a->put.wire_bytes &&
                                             a->reserved_wire > 0;
                                    }),
                     s.active.end());
      s.local.messages += finished_now;
    }
    // 4. Sleep until the next message completes or reservation turn comes, or until new work
    // comes.
    const int64_t wake = NextWakeNs(s, lead);
    s.local.cpu_ns = ThreadCpuNs();
    std::unique_lock<std::mutex> lock(mu_);
    finished_ += static_cast<uint64_t>(finished_now);
    stats_ = s.local;
    if (finished_now > 0) done_cv_.notify_all();
    if (!queue_.empty() || (stop_ && s.active.empty())) continue;
    if (wake == kNoDeadline) {
      work_cv_.wait(lock, [&] { return !queue_.empty() || stop_; });
    } else if (wake > NowNs()) {
      work_cv_.wait_until(lock, ToTimePoint(wake), [&] { return !queue_.empty() || stop_; });
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  s.local.cpu_ns = ThreadCpuNs();
  stats_ = s.local;
}

}  // namespace tessera::comm
