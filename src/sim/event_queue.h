// EventQueue: a deterministic discrete-event engine. An event is a callback due at a time;
// events run in the order (time_s, kind, id): earlier first, then the lower kind, then the
// lower id. Ids are handed out in scheduling order, so two runs that schedule the same
// events in the same order run them in the same order, whatever the ties.
//
// Kinds are small integers chosen by the caller; the ordering is all they mean here (e.g.
// Simulator runs task completions before releases before failures at equal times). A
// handler may schedule and cancel events; an event may not be scheduled before now_s().
// Times are seconds of simulated time, starting at 0. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <unordered_set>
#include <vector>

namespace tessera::sim {

using EventId = int64_t;

// The ordering key of an event.
struct EventKey {
  double time_s = 0;
  int kind = 0;
  EventId id = 0;
  // True when this event runs before `o`: (time_s, kind, id) lexicographically.
  bool Before(const EventKey& o) const {
    if (time_s != o.time_s) return time_s < o.time_s;
    if (kind != o.kind) return kind < o.kind;
    return id < o.id;
  }
};

inline constexpr double kForever = std::numeric_limits<double>::infinity();

class EventQueue {
 public:
  using Handler = std::function<void()>;

  // Schedules `fn` at `time_s` (>= now_s(); CHECK) with `kind`; returns its id.
  EventId Schedule(double time_s, int kind, Handler fn);
  // Cancels a pending event; false when it already ran, was cancelled, or never existed.
  bool Cancel(EventId id);

  // The key of the next pending event, or false when none is pending.
  bool PeekNext(EventKey* key);
  // Runs the next pending event (the clock moves to its time); false when none is pending.
  bool Step();
  // Runs events until none is pending; returns how many ran.
  int64_t Run();
  // Runs the events due at or before `until_s`, then sets the clock to `until_s` (when
  // later than now); returns how many ran.
  int64_t RunUntil(double until_s);
  // Moves the clock forward to `time_s` without running anything (>= now_s(); no pending
  // event may be earlier; CHECK). Engines built on the queue use it to advance work
  // between events.
  void AdvanceTo(double time_s);

  double now_s() const { return now_s_; }
  size_t pending() const { return live_.size(); }
  int64_t next_id() const { return next_id_; }

 private:
  struct Entry {
    EventKey key;
    Handler fn;
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const { return b.key.Before(a.key); }
  };
  // Drops cancelled entries from the top of the heap.
  void SkipCancelled();

  double now_s_ = 0;
  EventId next_id_ = 0;
  std::priority_queue<Entry, std::vector<Entry>, Later> heap_;
  std::unordered_set<EventId> live_;  // scheduled, not yet run or cancelled
};

}  // namespace tessera::sim
