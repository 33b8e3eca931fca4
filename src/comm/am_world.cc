#include "comm/am_world.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <optional>
#include <utility>

#include "comm/am_world_internal.h"
#include "core/log.h"

namespace tessera::comm {

using am_world_internal::BytesOf;
using am_world_internal::kFrameAm;

namespace {

// The world's active-message ids on its own transport.
constexpr uint16_t kHelloAm = 0x7a01;
constexpr uint16_t kByeAm = 0x7a03;  // kFrameAm (0x7a02): am_world_internal.h

constexpr uint32_t kHelloMagic = 0x414d4848;  // "AMHH"
constexpr uint32_t kByeMagic = 0x414d4242;    // "AMBB"

// Hello: the connector's world id and connection generation; the payload is its address.
struct HelloHeader {
  uint32_t magic = kHelloMagic;
  int32_t world = 0;
  uint64_t generation = 0;
};

// Goodbye: this connection is being replaced (Reconnect, ReplaceTransport), or the world is
// closing for good.
// A leaving world waits (bounded) for kLeavingAck from each peer before it destroys its
// transport, so that the goodbye is not lost in a forced shutdown and misread as a death.
enum class ByeWhy : uint8_t { kReplaced = 1, kLeaving = 2, kLeavingAck = 3 };
constexpr double kLeaveAckWaitS = 5.0;
struct ByeHeader {
  uint32_t magic = kByeMagic;
  int32_t world = 0;
  ByeWhy why = ByeWhy::kReplaced;
};

template <typename T>
bool ParseAs(std::span<const std::byte> bytes, T& out) {
  if (bytes.size() != sizeof(T)) return false;
  std::memcpy(&out, bytes.data(), sizeof(T));
  return true;
}

// Seconds left until `deadline` (a large number for "forever"), at least 1 ms.
double SecondsLeft(AmWorld::Clock::time_point deadline) {
  if (deadline == AmWorld::Clock::time_point::max()) return 3600.0;
  const double left = std::chrono::duration<double>(deadline - AmWorld::Clock::now()).count();
  return std::max(left, 0.001);
}

}  // namespace

const char* AmFrameKindName(AmFrameKind kind) {
  switch (kind) {
    case AmFrameKind::kP2p:
      return "point-to-point";
    case AmFrameKind::kAllToAllV:
      return "AllToAllV";
    case AmFrameKind::kAllGatherV:
      return "AllGatherV";
    case AmFrameKind::kAllGather:
      return "AllGather";
    case AmFrameKind::kAllReduceSum:
      return "AllReduceSum";
    case AmFrameKind::kReduceScatterV:
      return "ReduceScatterV";
    case AmFrameKind::kBroadcast:
      return "Broadcast";
    case AmFrameKind::kBarrier:
      return "Barrier";
  }
  return "?";
}

AmWorld::Clock::time_point AmWorld::DeadlineAfter(double timeout_s) {
  if (!(timeout_s < 1e9)) return Clock::time_point::max();  // also inf / NaN
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(std::max(timeout_s, 0.0)));
}

StatusOr<std::shared_ptr<AmWorld>> AmWorld::Create(std::unique_ptr<AmTransport> transport,
                                                   int world_id, const std::string& host, int port,
                                                   AmAddressBook book) {
  if (transport == nullptr) return core::InvalidArgument("AmWorld: transport: got null");
  if (world_id < 0) {
    return core::InvalidArgument(fmt::format("AmWorld: world_id: got {}, must be >= 0", world_id));
  }
  if (!transport->address().empty()) {
    return core::InvalidArgument(
        fmt::format("AmWorld: the transport already listens on {}; pass one that does not, the "
                    "world listens after installing its handlers",
                    transport->address()));
  }
  std::shared_ptr<AmWorld> world(
      new AmWorld(std::move(transport), world_id, host, std::move(book)));
  world->InstallHandlers(*world->transport_, world->transport_generation_);
  RETURN_IF_ERROR(world->transport_->Listen(host, port).WithPrefix("AmWorld"));
  std::lock_guard<std::mutex> lock(world->mu_);
  world->book_[world_id] = world->transport_->address();
  return world;
}

AmWorld::AmWorld(std::unique_ptr<AmTransport> transport, int world_id, std::string host,
                 AmAddressBook book)
    : world_id_(world_id),
      backend_(transport->backend_name()),
      host_(std::move(host)),
      transport_(std::move(transport)),
      book_(std::move(book)) {}

AmWorld::~AmWorld() {
  if (retired_ != nullptr) DestroyTransport(retired_);
  if (transport_ == nullptr) return;
  const size_t peers = SendByes(static_cast<uint8_t>(ByeWhy::kLeaving));
  {
    std::unique_lock<std::mutex> lock(mu_);
    WaitLocked(lock, DeadlineAfter(kLeaveAckWaitS), [&] { return leave_acks_ >= peers; });
  }
  DestroyTransport(transport_);
}

void AmWorld::InstallHandlers(AmTransport& transport, uint64_t generation) {
  transport.SetHandler(kHelloAm, [this, generation](PeerId peer, std::span<const std::byte> header,
                                                    std::span<const std::byte> payload) {
    HelloHeader hello;
    if (!ParseAs(header, hello) || hello.magic != kHelloMagic) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (generation != transport_generation_) return;
    Link& link = links_[peer];
    link.world = hello.world;
    link.transport_generation = generation;
    auto old = peer_of_.find(hello.world);
    if (old != peer_of_.end() && old->second != peer) links_.erase(old->second);  // replaced
    peer_of_[hello.world] = peer;
    uint64_t& seen = hello_gen_[hello.world];
    seen = std::max(seen, hello.generation);
    if (!payload.empty()) {
      book_[hello.world] =
          std::string(reinterpret_cast<const char*>(payload.data()), payload.size());
    }
    cv_.notify_all();
  });
  transport.SetHandler(kFrameAm, [this, generation](PeerId peer, std::span<const std::byte> header,
                                                    std::span<const std::byte> payload) {
    OnFrame(generation, peer, header, payload);
  });
  transport.SetHandler(
      kByeAm, [this, generation, &transport](PeerId peer, std::span<const std::byte> header,
                                             std::span<const std::byte>) {
        ByeHeader bye;
        if (!ParseAs(header, bye) || bye.magic != kByeMagic) return;
        if (bye.why == ByeWhy::kLeaving) {  // acknowledged even by a retired transport
          ByeHeader ack;
          ack.world = world_id_;
          ack.why = ByeWhy::kLeavingAck;
          (void)transport.Send(peer, kByeAm, BytesOf(ack), {});
        }
        std::lock_guard<std::mutex> lock(mu_);
        if (bye.why == ByeWhy::kLeavingAck) {
          if (generation == transport_generation_) ++leave_acks_;
          cv_.notify_all();
          return;
        }
        if (generation != transport_generation_) return;
        auto it = links_.find(peer);
        if (it == links_.end()) return;
        const int world = it->second.world;
        links_.erase(it);
        auto current = peer_of_.find(world);
        if (current != peer_of_.end() && current->second == peer) peer_of_.erase(current);
        if (bye.why == ByeWhy::kLeaving && !dead_.count(world)) {
          left_.emplace(world, "it closed its AmWorld");
        }
        cv_.notify_all();
      });
  transport.SetFailureHandler(
      [this, generation](PeerId peer, const Status& why) { OnFailure(generation, peer, why); });
}

void AmWorld::OnFrame(uint64_t generation, PeerId peer, std::span<const std::byte> header,
                      std::span<const std::byte> payload) {
  AmFrameHeader h;
  std::lock_guard<std::mutex> lock(mu_);
  if (generation != transport_generation_) return;
  auto link = links_.find(peer);
  if (!ParseAs(header, h) || h.magic != AmFrameHeader::kMagic || link == links_.end() ||
      link->second.world != h.src) {
    ++stats_.frames_dropped_bad;
    return;
  }
  if (dead_.count(h.src)) {
    ++stats_.frames_dropped_dead;
    return;
  }
  if (StaleLocked(h.group, h.epoch)) {
    ++stats_.frames_dropped_stale;
    return;
  }
  DeliverLocked(h, payload);
}

void AmWorld::OnFailure(uint64_t generation, PeerId peer, const Status& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (generation != transport_generation_) return;
  auto link = links_.find(peer);
  if (link == links_.end()) {
    failed_unlinked_[peer] = why.message();  // ConnectTo may not have recorded it yet
    return;
  }
  const int world = link->second.world;
  links_.erase(link);
  auto current = peer_of_.find(world);
  if (current == peer_of_.end() || current->second != peer) return;  // a replaced connection
  peer_of_.erase(current);
  if (!left_.count(world)) MarkDeadLocked(world, why.message());
}

std::string AmWorld::address() const {
  std::lock_guard<std::mutex> lock(mu_);
  return AddressLocked(world_id_);
}

AmAddressBook AmWorld::address_book() const {
  std::lock_guard<std::mutex> lock(mu_);
  return book_;
}

void AmWorld::SetAddress(int world_id, const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  book_[world_id] = address;
}

bool AmWorld::connected(int world_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return peer_of_.count(world_id) > 0;
}

// ---- Connections ---------------------------------------------------------------------------

Status AmWorld::SendHello(AmTransport& transport, PeerId peer, uint64_t connection_generation) {
  HelloHeader hello;
  hello.world = world_id_;
  hello.generation = connection_generation;
  const std::string me = address();
  return transport.Send(peer, kHelloAm, BytesOf(hello), std::as_bytes(std::span(me)));
}

StatusOr<PeerId> AmWorld::ConnectTo(int world, uint64_t connection_generation,
                                    Clock::time_point deadline) {
  std::string address;
  AmTransport* transport = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = book_.find(world);
    if (it == book_.end() || it->second.empty()) {
      return core::InvalidArgument(fmt::format(
          "world rank {}: no address in the address book of world rank {}", world, world_id_));
    }
    address = it->second;
    transport = transport_.get();
  }
  if (transport == nullptr) return core::Unavailable("this AmWorld's transport is gone");
  StatusOr<PeerId> peer = transport->Connect(address, SecondsLeft(deadline));
  if (!peer.ok()) {
    return core::Unavailable(fmt::format("world rank {} ({}) could not be reached: {}", world,
                                         address, peer.status().message()));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    links_[*peer] = Link{world, transport_generation_};
    auto old = peer_of_.find(world);
    if (old != peer_of_.end() && old->second != *peer) links_.erase(old->second);
    peer_of_[world] = *peer;
    auto failed = failed_unlinked_.find(*peer);
    if (failed != failed_unlinked_.end()) {  // it failed before we recorded it
      const std::string cause = failed->second;
      failed_unlinked_.erase(failed);
      links_.erase(*peer);
      peer_of_.erase(world);
      MarkDeadLocked(world, cause);
      return core::Unavailable(FailureTextLocked(world));
    }
  }
  const Status hello = SendHello(*transport, *peer, connection_generation);
  if (!hello.ok()) {
    return core::Unavailable(
        fmt::format("world rank {} ({}): hello failed: {}", world, address, hello.message()));
  }
  return *peer;
}

Status AmWorld::ConnectMesh(const std::vector<int>& members, double timeout_s) {
  const Clock::time_point deadline = DeadlineAfter(timeout_s);
  std::vector<int> higher;
  for (int m : members) {
    if (m == world_id_) continue;
    if (m > world_id_) {
      higher.push_back(m);
      continue;
    }
    if (connected(m)) continue;
    uint64_t generation = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (dead_.count(m)) return core::Unavailable(FailureTextLocked(m));
      generation = reconnects_[m];
    }
    ASSIGN_OR_RETURN(PeerId peer, ConnectTo(m, generation, deadline));
    (void)peer;
  }
  return WaitForPeers(higher, std::isinf(timeout_s) ? timeout_s : SecondsLeft(deadline));
}

Status AmWorld::Join(const std::vector<int>& existing, double timeout_s) {
  const Clock::time_point deadline = DeadlineAfter(timeout_s);
  for (int m : existing) {
    if (m == world_id_ || connected(m)) continue;
    uint64_t generation = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (dead_.count(m)) return core::Unavailable(FailureTextLocked(m));
      generation = reconnects_[m];
    }
    ASSIGN_OR_RETURN(PeerId peer, ConnectTo(m, generation, deadline));
    (void)peer;
  }
  return Status::Ok();
}

Status AmWorld::WaitForPeers(const std::vector<int>& peers, double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  int dead = -1;
  const bool all = WaitLocked(lock, DeadlineAfter(timeout_s), [&] {
    for (int p : peers) {
      if (dead_.count(p)) {
        dead = p;
        return true;
      }
    }
    return std::all_of(peers.begin(), peers.end(),
                       [&](int p) { return p == world_id_ || peer_of_.count(p) > 0; });
  });
  if (dead >= 0) return core::Unavailable(FailureTextLocked(dead));
  if (!all) {
    std::vector<int> missing;
    for (int p : peers) {
      if (p != world_id_ && !peer_of_.count(p)) missing.push_back(p);
    }
    return core::DeadlineExceeded(
        fmt::format("world ranks [{}] did not connect to world rank {} within {} s",
                    fmt::join(missing, ", "), world_id_, timeout_s));
  }
  return Status::Ok();
}

// ---- Failures ---------------------------------------------------------------------------------

void AmWorld::MarkDead(int world_id, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  MarkDeadLocked(world_id, reason);
}

void AmWorld::MarkDeadLocked(int world, const std::string& cause) {
  if (world == world_id_ || world < 0) return;
  if (dead_.emplace(world, cause).second) {
    left_.erase(world);
    TLOG(kInfo, "am world {}: world rank {} ({}) failed: {}", world_id_, world,
         AddressLocked(world), cause);
    cv_.notify_all();
  }
}

void AmWorld::FenceEpochsBefore(uint64_t epoch, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (epoch <= fence_epoch_) return;
  fence_epoch_ = epoch;
  fence_reason_ = reason;
  cv_.notify_all();
}

bool AmWorld::IsDead(int world_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return dead_.count(world_id) > 0;
}

std::map<int, std::string> AmWorld::dead() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dead_;
}

Status AmWorld::CheckMembers(std::span<const int> members) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (int m : members) {
    if (dead_.count(m)) return core::Unavailable(FailureTextLocked(m));
  }
  return Status::Ok();
}

AmWorld::Stats AmWorld::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::string AmWorld::AddressLocked(int world) const {
  auto it = book_.find(world);
  return it == book_.end() || it->second.empty() ? std::string("address unknown") : it->second;
}

std::string AmWorld::FailureTextLocked(int world) const {
  auto it = dead_.find(world);
  return fmt::format("world rank {} ({}) failed: {}", world, AddressLocked(world),
                     it == dead_.end() ? std::string("?") : it->second);
}

// ---- Rebuild baselines --------------------------------------------------------------------------

size_t AmWorld::SendByes(uint8_t why) {
  std::vector<PeerId> peers;
  AmTransport* transport = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    transport = transport_.get();
    for (const auto& [world, peer] : peer_of_) peers.push_back(peer);
  }
  if (transport == nullptr) return 0;
  ByeHeader bye;
  bye.world = world_id_;
  bye.why = static_cast<ByeWhy>(why);
  size_t sent = 0;
  for (PeerId peer : peers) sent += transport->Send(peer, kByeAm, BytesOf(bye), {}).ok();
  return sent;
}

Status AmWorld::Reconnect(const std::vector<int>& peers, double timeout_s) {
  const Clock::time_point deadline = DeadlineAfter(timeout_s);
  std::vector<int> sorted = peers;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<std::pair<int, uint64_t>> awaited;  // (peer, generation of its new hello)
  for (int p : sorted) {
    if (p == world_id_) continue;
    uint64_t generation = 0;
    std::optional<PeerId> old;
    AmTransport* transport = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (dead_.count(p)) return core::Unavailable(FailureTextLocked(p));
      generation = ++reconnects_[p];
      auto it = peer_of_.find(p);
      if (it != peer_of_.end()) old = it->second;
      transport = transport_.get();
    }
    if (transport == nullptr) return core::Unavailable("this AmWorld's transport is gone");
    if (world_id_ < p) {
      awaited.emplace_back(p, generation);
      continue;
    }
    if (old) {
      ByeHeader bye;
      bye.world = world_id_;
      bye.why = ByeWhy::kReplaced;
      (void)transport->Send(*old, kByeAm, BytesOf(bye), {});
      {
        std::lock_guard<std::mutex> lock(mu_);
        links_.erase(*old);  // its close event is no failure
        auto it = peer_of_.find(p);
        if (it != peer_of_.end() && it->second == *old) peer_of_.erase(it);
      }
      (void)transport->Close(*old);
    }
    ASSIGN_OR_RETURN(PeerId fresh, ConnectTo(p, generation, deadline));
    (void)fresh;
  }
  std::unique_lock<std::mutex> lock(mu_);
  int dead = -1;
  const bool all = WaitLocked(lock, deadline, [&] {
    for (const auto& [p, generation] : awaited) {
      if (dead_.count(p)) {
        dead = p;
        return true;
      }
    }
    return std::all_of(awaited.begin(), awaited.end(), [&](const auto& a) {
      auto it = hello_gen_.find(a.first);
      return it != hello_gen_.end() && it->second >= a.second && peer_of_.count(a.first);
    });
  });
  if (dead >= 0) return core::Unavailable(FailureTextLocked(dead));
  if (!all) {
    std::vector<int> missing;
    for (const auto& [p, generation] : awaited) {
      auto it = hello_gen_.find(p);
      if (it == hello_gen_.end() || it->second < generation) missing.push_back(p);
    }
    return core::DeadlineExceeded(
        fmt::format("Reconnect: world ranks [{}] did not reconnect to "
                    "world rank {} within {} s",
                    fmt::join(missing, ", "), world_id_, timeout_s));
  }
  return Status::Ok();
}

Status AmWorld::ReplaceTransport(std::unique_ptr<AmTransport> fresh) {
  if (fresh == nullptr) return core::InvalidArgument("ReplaceTransport: got a null transport");
  if (!fresh->address().empty()) {
    return core::InvalidArgument(fmt::format(
        "ReplaceTransport: the fresh transport already listens on {}; pass one that does not",
        fresh->address()));
  }
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation = transport_generation_ + 1;
  }
  // Its events are ignored until the swap below; nobody knows its address before that anyway.
  InstallHandlers(*fresh, generation);
  RETURN_IF_ERROR(fresh->Listen(host_, 0).WithPrefix("ReplaceTransport"));
  SendByes(static_cast<uint8_t>(ByeWhy::kReplaced));
  {
    std::lock_guard<std::mutex> lock(mu_);
    transport_generation_ = generation;
    transport_.swap(fresh);  // `fresh` now holds the old transport
    links_.clear();
    peer_of_.clear();
    hello_gen_.clear();
    reconnects_.clear();
    failed_unlinked_.clear();
    book_[world_id_] = transport_->address();
    cv_.notify_all();
  }
  if (retired_ != nullptr) DestroyTransport(retired_);
  retired_ = std::move(fresh);  // its events are ignored from now on
  return Status::Ok();
}

void AmWorld::DropRetiredTransport() {
  if (retired_ != nullptr) DestroyTransport(retired_);
}

void AmWorld::KillForTest() {
  std::unique_ptr<AmTransport> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++transport_generation_;
    old.swap(transport_);
    links_.clear();
    peer_of_.clear();
    cv_.notify_all();
  }
  if (old != nullptr) DestroyTransport(old);
}

}  // namespace tessera::comm
