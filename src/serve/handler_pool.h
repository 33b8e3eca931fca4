// HandlerPool: the threads that run the HTTP shell's route handlers (http_server.h), so that
// no handler ever runs on the I/O thread. A handler may block (a generation handler waits for
// its job); the pool holds `threads` threads and queues tasks past them in FIFO order.
//
// Stop(deadline_s): no new tasks; waits up to deadline_s for the queued and running tasks,
// then joins the idle threads and detaches the ones still running a task (they end with
// their task; the pool's state lives as long as they do), so that Stop always returns.
// Returns how many tasks were still running (0 when all ended in time). Idempotent.
// Errors: Submit returns false after Stop (the task is not run).
// Thread-safety: every method may be called from any thread but a task.
#pragma once

#include <functional>
#include <memory>

namespace tessera::serve {

class HandlerPool {
 public:
  explicit HandlerPool(int threads);
  ~HandlerPool();  // Stop(0) when not stopped
  HandlerPool(const HandlerPool&) = delete;
  HandlerPool& operator=(const HandlerPool&) = delete;

  bool Submit(std::function<void()> task);
  int Stop(double deadline_s);
  int busy() const;

  struct State;  // shared with the threads (handler_pool.cc)

 private:
  std::shared_ptr<State> state_;
};

}  // namespace tessera::serve
