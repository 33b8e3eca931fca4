// BoundedQueue: the FIFO queue of a server's waiting jobs, holding at most `capacity`
// elements. TryPush refuses (returns false) when full, so a server answers 429 instead of
// growing without bound; Take removes elements at chosen positions (batching takes a head's
// batch mates out of the middle of the queue, admission.h).
// Errors: none; PopFront and front() on an empty queue are caller errors.
// Thread-safety: none; the owner guards it (JobRunner holds it under its lock).
#pragma once

#include <cstddef>
#include <deque>
#include <span>
#include <utility>
#include <vector>

namespace tessera::serve {

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : capacity_(capacity) {}

  size_t capacity() const { return capacity_; }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  bool full() const { return items_.size() >= capacity_; }

  // Appends `item` unless the queue is full.
  bool TryPush(T item) {
    if (full()) return false;
    items_.push_back(std::move(item));
    return true;
  }
  const T& front() const { return items_.front(); }
  T PopFront() {
    T item = std::move(items_.front());
    items_.pop_front();
    return item;
  }
  // The waiting elements, oldest first.
  const std::deque<T>& items() const { return items_; }
  // Removes the elements at `positions` (increasing indices into items()) and returns them in
  // that order.
  std::vector<T> Take(std::span<const size_t> positions) {
    std::vector<T> taken;
    for (const size_t i : positions) taken.push_back(items_[i]);
    for (auto i = positions.rbegin(); i != positions.rend(); ++i)
      items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(*i));
    return taken;
  }

 private:
  size_t capacity_;
  std::deque<T> items_;
};

}  // namespace tessera::serve
