#include "sim/event_queue.h"

#include <utility>

#include "core/check.h"

namespace tessera::sim {

EventId EventQueue::Schedule(double time_s, int kind, Handler fn) {
  CHECK(time_s >= now_s_) << "event at " << time_s << " s scheduled before now " << now_s_;
  const EventId id = next_id_++;
  heap_.push(Entry{{time_s, kind, id}, std::move(fn)});
  live_.insert(id);
  return id;
}

bool EventQueue::Cancel(EventId id) { return live_.erase(id) > 0; }

void EventQueue::SkipCancelled() {
  while (!heap_.empty() && !live_.contains(heap_.top().key.id)) heap_.pop();
}

bool EventQueue::PeekNext(EventKey* key) {
  SkipCancelled();
  if (heap_.empty()) return false;
  *key = heap_.top().key;
  return true;
}

bool EventQueue::Step() {
  SkipCancelled();
  if (heap_.empty()) return false;
  // Move the handler out before popping: it may schedule events (which reshapes the heap).
  Entry e = std::move(const_cast<Entry&>(heap_.top()));
  heap_.pop();
  live_.erase(e.key.id);
  now_s_ = e.key.time_s;
  e.fn();
  return true;
}

int64_t EventQueue::Run() {
  int64_t n = 0;
  while (Step()) ++n;
  return n;
}

int64_t EventQueue::RunUntil(double until_s) {
  int64_t n = 0;
  EventKey k;
  while (PeekNext(&k) && k.time_s <= until_s) {
    Step();
    ++n;
  }
  if (until_s > now_s_ && until_s != kForever) now_s_ = until_s;
  return n;
}

void EventQueue::AdvanceTo(double time_s) {
  CHECK(time_s >= now_s_) << "AdvanceTo " << time_s << " s is before now " << now_s_;
  EventKey k;
  CHECK(!PeekNext(&k) || k.time_s >= time_s) << "AdvanceTo " << time_s << " s skips an event";
  now_s_ = time_s;
}

}  // namespace tessera::sim
