// HandlerPool: the threads that run the HTTP shell's route handlers (http_server.h), so that
// no handler ever runs on the I/O thread. A handler may block (a generation handler waits for
// its job); the pool runs at most `max_threads` tasks at once and queues the rest in FIFO
// order.
//
// Threads are started on demand (a task finds no idle thread and fewer than max_threads run)
// and a thread idle for idle_exit_s exits (idle_exit_s 0: threads, once started, stay), so
// that an idle server holds no handler thread and none of the memory a thread keeps for
// itself (its malloc tcache, its stack's touched pages). When the last thread exits and
// nothing is queued, that thread calls `on_idle` (if set) before it ends: the HTTP shell
// returns the freed heap to the kernel there (heap_policy.h).
//
// Stop(deadline_s): no new tasks; waits up to deadline_s for the queued and running tasks,
// then joins the idle threads and detaches the ones still running a task (they end with
// their task; the pool's state lives as long as they do), so that Stop always returns.
// Returns how many tasks were still running (0 when all ended in time). Idempotent.
// Errors: Submit returns false after Stop (the task is not run).
// Thread-safety: every method may be called from any thread but a task; on_idle runs on a
// pool thread with no lock held and must not call the pool.
#pragma once

#include <functional>
#include <memory>

namespace tessera::serve {

class HandlerPool {
 public:
  HandlerPool(int max_threads, double idle_exit_s, std::function<void()> on_idle = nullptr);
  ~HandlerPool();  // Stop(0) when not stopped
  HandlerPool(const HandlerPool&) = delete;
  HandlerPool& operator=(const HandlerPool&) = delete;

  bool Submit(std::function<void()> task);
  int Stop(double deadline_s);
  int busy() const;            // tasks running or queued
  int threads() const;         // threads started and not yet exited
  int64_t idle_calls() const;  // times on_idle was called

  struct State;  // shared with the threads (handler_pool.cc)

 private:
  std::shared_ptr<State> state_;
};

}  // namespace tessera::serve
