#include "serve/handler_pool.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::serve {

struct HandlerPool::State {
  std::mutex mu;
  std::condition_variable cv;       // tasks or stop
  std::condition_variable idle_cv;  // a task ended
  std::deque<std::function<void()>> tasks;
  int running = 0;
  bool stopping = false;
  bool stopped = false;
  std::vector<std::thread> threads;
};

namespace {

void PoolWorker(const std::shared_ptr<HandlerPool::State>& s) {
  std::unique_lock<std::mutex> lock(s->mu);
  for (;;) {
    s->cv.wait(lock, [&] { return s->stopping || !s->tasks.empty(); });
    if (s->tasks.empty()) return;
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

HandlerPool::HandlerPool(int threads) : state_(std::make_shared<State>()) {
  for (int i = 0; i < threads; ++i) {
    state_->threads.emplace_back([s = state_] { PoolWorker(s); });
  }
}

HandlerPool::~HandlerPool() { Stop(0); }

bool HandlerPool::Submit(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->stopping) return false;
  state_->tasks.push_back(std::move(task));
  state_->cv.notify_one();
  return true;
}

int HandlerPool::busy() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->running + static_cast<int>(state_->tasks.size());
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
    threads.swap(state_->threads);
    state_->cv.notify_all();
  }
  // A thread running a task past the deadline is detached (it ends with its task); the others
  // have returned or are about to.
  if (left == 0) {
    for (std::thread& t : threads) t.join();
  } else {
    for (std::thread& t : threads) t.detach();
  }
  return left;
}

}  // namespace tessera::serve
