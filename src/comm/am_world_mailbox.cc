// AmWorld's mailbox (am_world.h): the (group, epoch) registrations, data frames sent and
// delivered, receives posted, waited on, polled and cancelled. Connections, failures and the
// rebuild baselines are in am_world.cc.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "comm/am_world.h"
#include "comm/am_world_internal.h"
#include "core/log.h"

namespace tessera::comm {

using am_world_internal::BytesOf;
using am_world_internal::kFrameAm;

// ---- Mailbox
// --------------------------------------------------------------------------------------

bool AmWorld::StaleLocked(uint64_t group, uint64_t epoch) const {
  auto it = floor_.find(group);
  return it != floor_.end() && epoch < it->second;
}

void AmWorld::PurgeLocked(uint64_t group) {
  auto floor = floor_.find(group);
  if (floor == floor_.end()) return;
  auto it = mail_.lower_bound(AmMailKey{group, 0, INT_MIN, 0});
  while (it != mail_.end() && it->first.group == group && it->first.epoch < floor->second) {
    stats_.frames_dropped_stale += it->second.frames.size();
    for (const auto& slot : it->second.posted) {
      slot->done = true;
      slot->status = core::FailedPrecondition(
          fmt::format("the group moved on to epoch {} before this receive of epoch {} completed",
                      floor->second, it->first.epoch));
    }
    it = mail_.erase(it);
  }
  cv_.notify_all();
}

Status AmWorld::Register(uint64_t group, uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  auto live = live_.find(group);
  if (live != live_.end()) {
    return core::InvalidArgument(fmt::format(
        "group {:#x}: a communicator of this group (same group id and members) already lives in "
        "world rank {} at epoch {}; give the second one another group id",
        group, world_id_, live->second));
  }
  if (StaleLocked(group, epoch)) {
    return core::FailedPrecondition(
        fmt::format("group {:#x}: epoch {} is older than epoch {}, which world rank {} has "
                    "already moved to; use a newer epoch",
                    group, epoch, floor_[group], world_id_));
  }
  live_[group] = epoch;
  uint64_t& floor = floor_[group];
  floor = std::max(floor, epoch);
  PurgeLocked(group);
  return Status::Ok();
}

void AmWorld::Unregister(uint64_t group, uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  auto live = live_.find(group);
  if (live != live_.end() && live->second == epoch) live_.erase(live);
  uint64_t& floor = floor_[group];
  floor = std::max(floor, epoch + 1);
  PurgeLocked(group);
}

Status AmWorld::Rekey(uint64_t old_group, uint64_t old_epoch, uint64_t group, uint64_t epoch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (group != old_group && live_.count(group)) {
      return core::InvalidArgument(fmt::format(
          "group {:#x}: a communicator of this group (same group id and members) already lives "
          "in world rank {} at epoch {}",
          group, world_id_, live_[group]));
    }
    const uint64_t floor =
        std::max(floor_.count(group) ? floor_[group] : 0, group == old_group ? old_epoch + 1 : 0);
    if (epoch < floor) {
      return core::FailedPrecondition(
          fmt::format("group {:#x}: epoch {} is older than epoch {}, which world rank {} has "
                      "already moved to; use a newer epoch",
                      group, epoch, floor, world_id_));
    }
  }
  Unregister(old_group, old_epoch);
  return Register(group, epoch);
}

void AmWorld::FillLocked(AmRecvSlot& slot, const AmFrameHeader& h,
                         std::span<const std::byte> payload) {
  slot.done = true;
  const int64_t elem = DTypeSize(h.dtype);
  if (h.kind != slot.kind) {
    slot.status = core::InvalidArgument(
        fmt::format("world rank {} sent a {} message where this rank runs {}: the ranks called "
                    "different operations",
                    h.src, AmFrameKindName(h.kind), AmFrameKindName(slot.kind)));
  } else if (h.dtype != slot.dtype) {
    slot.status = core::InvalidArgument(
        fmt::format("world rank {} sent {} elements, this rank expects {}; all ranks must pass "
                    "the same dtype",
                    h.src, DTypeName(h.dtype), DTypeName(slot.dtype)));
  } else if (h.count < 0 || static_cast<int64_t>(payload.size()) != h.count * elem) {
    slot.status =
        core::Internal(fmt::format("malformed frame from world rank {}: {} bytes for {} "
                                   "elements of {}",
                                   h.src, payload.size(), h.count, DTypeName(h.dtype)));
  } else if (slot.exact && h.count != slot.capacity) {
    slot.status = core::InvalidArgument(
        fmt::format("world rank {} sent {} elements, this rank expects {}; the ranks' sizes do "
                    "not match",
                    h.src, h.count, slot.capacity));
  } else if (h.count > slot.capacity) {
    slot.status = core::InvalidArgument(
        fmt::format("a message of {} elements from world rank {} does not fit the buffer of {} "
                    "elements",
                    h.count, h.src, slot.capacity));
  } else {
    if (h.count > 0) std::memcpy(slot.data, payload.data(), payload.size());
    slot.received = h.count;
    slot.status = Status::Ok();
  }
}

void AmWorld::DeliverLocked(const AmFrameHeader& h, std::span<const std::byte> payload) {
  ++stats_.frames_delivered;
  const AmMailKey key{h.group, h.epoch, h.src, h.channel};
  auto it = mail_.find(key);
  if (it != mail_.end() && !it->second.posted.empty()) {
    std::shared_ptr<AmRecvSlot> slot = std::move(it->second.posted.front());
    it->second.posted.pop_front();
    if (it->second.posted.empty()) mail_.erase(it);
    FillLocked(*slot, h, payload);
    cv_.notify_all();
    return;
  }
  mail_[key].frames.push_back(
      QueuedFrame{h, std::vector<std::byte>(payload.begin(), payload.end())});
}

Status AmWorld::SendFrame(int dst, const AmFrameHeader& header, std::span<const std::byte> payload,
                          Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (header.epoch < fence_epoch_) {
    return core::Unavailable(fmt::format("epoch {} fenced: {}", header.epoch, fence_reason_));
  }
  if (dst == world_id_) {
    DeliverLocked(header, payload);
    return Status::Ok();
  }
  const bool ready = WaitLocked(lock, deadline, [&] {
    return dead_.count(dst) || left_.count(dst) || peer_of_.count(dst) || transport_ == nullptr;
  });
  if (dead_.count(dst)) return core::Unavailable(FailureTextLocked(dst));
  if (left_.count(dst)) {
    return core::Unavailable(
        fmt::format("world rank {} ({}) left: {}", dst, AddressLocked(dst), left_[dst]));
  }
  if (transport_ == nullptr) return core::Unavailable("this AmWorld's transport is gone");
  if (!ready) {
    return core::DeadlineExceeded(
        fmt::format("world rank {} ({}) has not connected", dst, AddressLocked(dst)));
  }
  const PeerId peer = peer_of_[dst];
  AmTransport* transport = transport_.get();
  lock.unlock();
  const Status sent = transport->Send(peer, kFrameAm, BytesOf(header), payload);
  if (sent.ok()) return sent;
  lock.lock();
  if (sent.code() == core::StatusCode::kUnavailable) {
    auto current = peer_of_.find(dst);
    if (current != peer_of_.end() && current->second == peer && !left_.count(dst)) {
      MarkDeadLocked(dst, sent.message());
    }
  }
  if (dead_.count(dst)) return core::Unavailable(FailureTextLocked(dst));
  return sent.WithPrefix(fmt::format("send to world rank {} ({})", dst, AddressLocked(dst)));
}

std::shared_ptr<AmRecvSlot> AmWorld::Post(AmRecvSlot spec) {
  auto slot = std::make_shared<AmRecvSlot>(std::move(spec));
  std::lock_guard<std::mutex> lock(mu_);
  if (StaleLocked(slot->key.group, slot->key.epoch)) {
    slot->done = true;
    slot->status = core::FailedPrecondition(fmt::format(
        "epoch {} of this group is stale in world rank {}", slot->key.epoch, world_id_));
    return slot;
  }
  auto it = mail_.find(slot->key);
  if (it != mail_.end() && !it->second.frames.empty()) {
    QueuedFrame frame = std::move(it->second.frames.front());
    it->second.frames.pop_front();
    if (it->second.frames.empty()) mail_.erase(it);
    FillLocked(*slot, frame.header, frame.payload);
    return slot;
  }
  mail_[slot->key].posted.push_back(slot);
  return slot;
}

Status AmWorld::GiveUpLocked(const AmRecvSlot& slot, std::span<const int> group) const {
  for (int m : group) {
    if (dead_.count(m)) return core::Unavailable(FailureTextLocked(m));
  }
  if (slot.key.epoch < fence_epoch_) {
    return core::Unavailable(fmt::format("epoch {} fenced: {}", slot.key.epoch, fence_reason_));
  }
  auto left = left_.find(slot.key.src);
  if (left != left_.end()) {
    return core::Unavailable(fmt::format("world rank {} ({}) left before sending: {}", slot.key.src,
                                         AddressLocked(slot.key.src), left->second));
  }
  return Status::Ok();
}

Status AmWorld::Wait(AmRecvSlot& slot, std::span<const int> group, Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  Status give_up;
  WaitLocked(lock, deadline, [&] {
    if (slot.done) return true;
    give_up = GiveUpLocked(slot, group);
    return !give_up.ok();
  });
  if (slot.done) return slot.status;
  if (!give_up.ok()) return give_up;
  return core::DeadlineExceeded("not complete");
}

StatusOr<bool> AmWorld::Poll(AmRecvSlot& slot, std::span<const int> group) {
  std::lock_guard<std::mutex> lock(mu_);
  if (slot.done) {
    if (!slot.status.ok()) return slot.status;
    return true;
  }
  Status give_up = GiveUpLocked(slot, group);
  if (!give_up.ok()) return give_up;
  return false;
}

void AmWorld::Cancel(const std::shared_ptr<AmRecvSlot>& slot) {
  std::lock_guard<std::mutex> lock(mu_);
  if (slot->done) return;
  auto it = mail_.find(slot->key);
  if (it != mail_.end()) {
    auto& posted = it->second.posted;
    posted.erase(std::remove(posted.begin(), posted.end(), slot), posted.end());
    if (posted.empty() && it->second.frames.empty()) mail_.erase(it);
  }
  slot->done = true;
  slot->status = core::FailedPrecondition("cancelled");
}

}  // namespace tessera::comm
