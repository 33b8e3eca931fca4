// What am_world.cc and am_world_mailbox.cc share and nobody else uses: the data frames' active
// message id, a value's bytes, and AmWorld's waiting helper. Not part of the interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>

#include "comm/am_world.h"

namespace tessera::comm::am_world_internal {

// Data frames on the world's transport (hellos and goodbyes have their own ids in am_world.cc).
inline constexpr uint16_t kFrameAm = 0x7a02;

template <typename T>
std::span<const std::byte> BytesOf(const T& value) {
  return std::as_bytes(std::span<const T>(&value, 1));
}

}  // namespace tessera::comm::am_world_internal

namespace tessera::comm {

template <typename Pred>
bool AmWorld::WaitLocked(std::unique_lock<std::mutex>& lock, Clock::time_point deadline,
                         Pred pred) {
  if (deadline == Clock::time_point::max()) {
    cv_.wait(lock, pred);
    return true;
  }
  return cv_.wait_until(lock, deadline, pred);
}

}  // namespace tessera::comm
