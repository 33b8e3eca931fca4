#include "serve/handler_pool.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::serve {

struct HandlerPool::State {
  int max_threads = 1;
  double idle_exit_s = 0;
  std::function<void()> on_idle;

  std::mutex mu;
  std::condition_variable cv;       // tasks or stop
  std::condition_variable idle_cv;  // a task ended
  std::deque<std::function<void()>> tasks;
  int running = 0;  // tasks being run
  int waiting = 0;  // threads waiting for a task
  bool stopping = false;
  bool stopped = false;
  int64_t next_id = 0;
  int64_t idle_calls = 0;
  std::map<int64_t, std::thread> threads;  // started, not exited
  // Threads that exited (or are about to): joined by the next thread that exits, or by Stop.
  std::vector<std::thread> exited;
};

namespace {

using State = HandlerPool::State;

void PoolWorker(const std::shared_ptr<State>& s, int64_t id);

// Starts one more thread (mu held).
void StartThread(const std::shared_ptr<State>& s) {
  const int64_t id = s->next_id++;
  s->threads.emplace(id, std::thread([s, id] { PoolWorker(s, id); }));
}

// The calling thread leaves the pool (mu held by `lock`, released here): it takes the threads
// that exited before it to join them, and is itself joined by the next one (or Stop).
void ExitThread(const std::shared_ptr<State>& s, int64_t id, std::unique_lock<std::mutex>& lock) {
  std::vector<std::thread> to_join;
  to_join.swap(s->exited);
  auto it = s->threads.find(id);
  s->exited.push_back(std::move(it->second));
  s->threads.erase(it);
  const bool last = !s->stopping && s->threads.empty() && s->tasks.empty() && s->on_idle != nullptr;
  if (last) ++s->idle_calls;
  lock.unlock();
  for (std::thread& t : to_join) t.join();
  if (last) s->on_idle();
}

void PoolWorker(const std::shared_ptr<State>& s, int64_t id) {
  std::unique_lock<std::mutex> lock(s->mu);
  const auto ready = [&] { return s->stopping || !s->tasks.empty(); };
  for (;;) {
    ++s->waiting;
    bool woke = true;
    if (s->idle_exit_s > 0) {
      woke = s->cv.wait_for(lock, std::chrono::duration<double>(s->idle_exit_s), ready);
    } else {
      s->cv.wait(lock, ready);
    }
    --s->waiting;
    if (s->stopping) return;  // Stop joins (or detaches) this thread
    if (!woke) return ExitThread(s, id, lock);
    std::function<void()> task = std::move(s->tasks.front());
    s->tasks.pop_front();
    ++s->running;
    lock.unlock();
    task();
    task = nullptr;
    lock.lock();
    --s->running;
    s->idle_cv.notify_all();
  }
}

}  // namespace

HandlerPool::HandlerPool(int max_threads, double idle_exit_s, std::function<void()> on_idle)
    : state_(std::make_shared<State>()) {
  state_->max_threads = max_threads < 1 ? 1 : max_threads;
  state_->idle_exit_s = idle_exit_s;
  state_->on_idle = std::move(on_idle);
}

HandlerPool::~HandlerPool() { Stop(0); }

bool HandlerPool::Submit(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->stopping) return false;
  state_->tasks.push_back(std::move(task));
  // A task no waiting thread will take starts a thread, up to max_threads.
  if (static_cast<int>(state_->tasks.size()) > state_->waiting &&
      static_cast<int>(state_->threads.size()) < state_->max_threads) {
    StartThread(state_);
  }
  state_->cv.notify_one();
  return true;
}

int HandlerPool::busy() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->running + static_cast<int>(state_->tasks.size());
}

int HandlerPool::threads() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return static_cast<int>(state_->threads.size());
}

int64_t HandlerPool::idle_calls() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->idle_calls;
}

int HandlerPool::Stop(double deadline_s) {
  std::vector<std::thread> threads;
  int left = 0;
  {
    std::unique_lock<std::mutex> lock(state_->mu);
    if (state_->stopped) return 0;
    state_->idle_cv.wait_for(lock, std::chrono::duration<double>(deadline_s),
                             [&] { return state_->running == 0 && state_->tasks.empty(); });
    state_->stopped = true;
    state_->stopping = true;
    state_->tasks.clear();  // not started: dropped
    left = state_->running;
    for (auto& [id, t] : state_->threads) threads.push_back(std::move(t));
    state_->threads.clear();
    for (std::thread& t : state_->exited) threads.push_back(std::move(t));
    state_->exited.clear();
    state_->cv.notify_all();
  }
  // A thread running a task past the deadline is detached (it ends with its task); the others
  // have returned or are about to.
  for (std::thread& t : threads) {
    if (left == 0) {
      t.join();
    } else {
      t.detach();
    }
  }
  return left;
}

}  // namespace tessera::serve
