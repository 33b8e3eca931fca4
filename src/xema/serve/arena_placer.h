// ArenaPlacer: where the static arenas of a device's requests in flight lie in its one
// activation region. First fit: a request's arena goes at the lowest offset where it does not
// overlap an arena in flight and ends within the capacity; none: it waits. The server admits by
// it and the serving simulation (planner) replays the same placement, so both refuse the same
// admissions (bytes can add up and still not fit in one piece).
// Offsets are sums of arena sizes (multiples of 512 B when the sizes are). Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace tessera::xema {

class ArenaPlacer {
 public:
  explicit ArenaPlacer(int64_t capacity_bytes = 0) : capacity_(capacity_bytes) {}

  int64_t capacity_bytes() const { return capacity_; }
  int64_t used_bytes() const { return used_; }
  int64_t count() const { return static_cast<int64_t>(placed_.size()); }

  // The offset `bytes` (> 0) would get now, or nullopt.
  std::optional<int64_t> Find(int64_t bytes) const {
    int64_t at = 0;
    for (const auto& [offset, size] : placed_) {
      if (offset - at >= bytes) break;
      at = offset + size;
    }
    if (bytes <= 0 || at + bytes > capacity_) return std::nullopt;
    return at;
  }
  // Places `bytes` at Find(bytes); nullopt (and nothing placed) when it does not fit.
  std::optional<int64_t> Place(int64_t bytes) {
    const std::optional<int64_t> at = Find(bytes);
    if (at) {
      placed_.emplace(*at, bytes);
      used_ += bytes;
    }
    return at;
  }
  // Frees the arena placed at `offset`; false when none is.
  bool Free(int64_t offset) {
    auto it = placed_.find(offset);
    if (it == placed_.end()) return false;
    used_ -= it->second;
    placed_.erase(it);
    return true;
  }

 private:
  int64_t capacity_ = 0;
  int64_t used_ = 0;
  std::map<int64_t, int64_t> placed_;  // offset -> bytes
};

}  // namespace tessera::xema
