#include "serve/job_runner.h"

#include <utility>

namespace tessera::serve {

JobRunner::JobRunner(const RunnerOptions& options, std::unique_ptr<Admission> admission,
                     Executor executor, WorkerSetup setup)
    : options_(options),
      admission_(std::move(admission)),
      executor_(std::move(executor)),
      setup_(std::move(setup)),
      queue_(static_cast<size_t>(options.queue_capacity)),
      ready_(static_cast<size_t>(options.devices)) {}

JobRunner::~JobRunner() { Drain(); }

void JobRunner::Start() {
  std::lock_guard<std::mutex> lock(drain_mu_);
  if (!workers_.empty() || drained_) return;
  for (int d = 0; d < options_.devices; ++d) {
    for (int k = 0; k < options_.slots_per_device; ++k) {
      workers_.emplace_back([this, d] { Work(d); });
    }
  }
}

JobRunner::SubmitResult JobRunner::Submit(std::shared_ptr<Job> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_) return SubmitResult::kStopping;
    if (!queue_.TryPush(std::move(job))) return SubmitResult::kFull;
    AdmitLocked();
  }
  cv_.notify_all();
  return SubmitResult::kQueued;
}

void JobRunner::AdmitLocked() {
  while (!queue_.empty()) {
    const std::shared_ptr<Job> head = queue_.front();
    const std::optional<Placement> p = admission_->Admit(*head);
    if (!p) return;  // strict FCFS: the head waits, and everything behind it
    queue_.PopFront();
    head->mates = admission_->TakeBatch(*head, queue_);
    in_flight_ += 1 + static_cast<int64_t>(head->mates.size());
    batch_mates_ += static_cast<int64_t>(head->mates.size());
    auto admitted = std::make_shared<Admitted>();
    admitted->job = head;
    admitted->placement = *p;
    admitted->members_left = p->span;
    for (int m = 0; m < p->span; ++m) {
      ready_[static_cast<size_t>(p->device + m)].push_back({admitted, m});
    }
  }
}

void JobRunner::Work(int device) {
  if (setup_) setup_(device);
  auto& ready = ready_[static_cast<size_t>(device)];
  for (;;) {
    std::shared_ptr<Admitted> a;
    int member = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock,
               [&] { return !ready.empty() || (exit_ && queue_.empty() && in_flight_ == 0); });
      if (ready.empty()) return;
      std::tie(a, member) = std::move(ready.front());
      ready.pop_front();
    }
    const core::Status s = executor_(*a->job, a->placement, device, member);
    bool finished = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!s.ok() && a->member_status.ok()) a->member_status = s;
      if (--a->members_left == 0) {
        Job& job = *a->job;
        if (!a->member_status.ok()) {
          if (job.status.ok()) job.status = a->member_status;
          for (const auto& m : job.mates) {
            if (m->status.ok()) m->status = a->member_status;
          }
        }
        admission_->Release(job, a->placement);
        in_flight_ -= 1 + static_cast<int64_t>(job.mates.size());
        AdmitLocked();
        finished = true;
      }
    }
    cv_.notify_all();
    if (finished) {
      for (const auto& m : a->job->mates) m->done.set_value();
      a->job->done.set_value();
    }
  }
}

void JobRunner::Drain() {
  std::lock_guard<std::mutex> drain_lock(drain_mu_);
  if (drained_) return;
  drained_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    accepting_ = false;
    exit_ = true;  // after the queue drains
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

bool JobRunner::accepting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return accepting_;
}

int64_t JobRunner::queue_length() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

int64_t JobRunner::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

int64_t JobRunner::batch_mates() const {
  std::lock_guard<std::mutex> lock(mu_);
  return batch_mates_;
}

}  // namespace tessera::serve
