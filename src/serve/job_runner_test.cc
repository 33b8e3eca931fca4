// JobRunner and its admissions: FCFS admission onto idle devices, gangs over several
// devices, batching through TakeBatch, a member's failure answering the job and its mates,
// the bounded queue (kFull) and Drain (kStopping, queued jobs still run).
#include "serve/job_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <vector>

namespace tessera::serve {
namespace {

struct TestJob : Job {
  int id = 0;
};

std::shared_ptr<TestJob> MakeJob(int id) {
  auto j = std::make_shared<TestJob>();
  j->id = id;
  return j;
}

TEST(BoundedQueueTest, RefusesWhenFullAndTakesPositions) {
  BoundedQueue<int> q(3);
  EXPECT_TRUE(q.TryPush(1));
  EXPECT_TRUE(q.TryPush(2));
  EXPECT_TRUE(q.TryPush(3));
  EXPECT_FALSE(q.TryPush(4));
  const std::vector<size_t> at = {0, 2};
  EXPECT_EQ(q.Take(at), (std::vector<int>{1, 3}));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.PopFront(), 2);
  EXPECT_TRUE(q.empty());
}

TEST(OneJobPerDeviceTest, LowestIdleDeviceThenRefuses) {
  OneJobPerDevice a(2);
  TestJob j;
  EXPECT_EQ(a.Admit(j)->device, 0);
  EXPECT_EQ(a.Admit(j)->device, 1);
  EXPECT_FALSE(a.Admit(j).has_value());
  a.Release(j, {0, 1});
  EXPECT_EQ(a.Admit(j)->device, 0);
}

TEST(JobRunnerTest, RunsEveryJobOnceAndAnswersIt) {
  std::atomic<int> runs{0};
  JobRunner r({.devices = 2, .slots_per_device = 1, .queue_capacity = 64},
              std::make_unique<OneJobPerDevice>(2),
              [&](Job& job, const Placement& p, int device, int member) {
                EXPECT_EQ(device, p.device + member);
                Job* batch[] = {&job};
                EXPECT_TRUE(StartBatch(batch, device));
                ++runs;
                return core::Status::Ok();
              });
  r.Start();
  std::vector<std::shared_ptr<TestJob>> jobs;
  for (int i = 0; i < 20; ++i) {
    jobs.push_back(MakeJob(i));
    ASSERT_EQ(r.Submit(jobs.back()), JobRunner::SubmitResult::kQueued);
  }
  for (auto& j : jobs) {
    j->done.get_future().wait();
    EXPECT_TRUE(j->status.ok());
    EXPECT_GE(j->device, 0);
  }
  EXPECT_EQ(runs.load(), 20);
  r.Drain();
  EXPECT_EQ(r.Submit(MakeJob(99)), JobRunner::SubmitResult::kStopping);
}

TEST(JobRunnerTest, QueueFullIsRefusedAndDrainRunsTheQueued) {
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  JobRunner r({.devices = 1, .slots_per_device = 1, .queue_capacity = 1},
              std::make_unique<OneJobPerDevice>(1), [gate](Job&, const Placement&, int, int) {
                gate.wait();
                return core::Status::Ok();
              });
  r.Start();
  auto running = MakeJob(0), queued = MakeJob(1);
  ASSERT_EQ(r.Submit(running), JobRunner::SubmitResult::kQueued);  // admitted at once
  ASSERT_EQ(r.Submit(queued), JobRunner::SubmitResult::kQueued);   // waits
  EXPECT_EQ(r.queue_length(), 1);
  EXPECT_EQ(r.in_flight(), 1);
  EXPECT_EQ(r.Submit(MakeJob(2)), JobRunner::SubmitResult::kFull);
  go.set_value();
  r.Drain();
  EXPECT_EQ(queued->done.get_future().wait_for(std::chrono::seconds(0)), std::future_status::ready);
}

// Jobs of span 2 over 2 devices, and a batch of every waiting job behind the head.
class GangBatch final : public Admission {
 public:
  std::optional<Placement> Admit(Job&) override {
    if (busy_) return std::nullopt;
    busy_ = true;
    return Placement{0, 2};
  }
  void Release(Job&, const Placement&) override { busy_ = false; }
  std::vector<std::shared_ptr<Job>> TakeBatch(Job&,
                                              BoundedQueue<std::shared_ptr<Job>>& q) override {
    std::vector<size_t> all;
    for (size_t i = 0; i < q.size(); ++i) all.push_back(i);
    return q.Take(all);
  }

 private:
  bool busy_ = false;
};

TEST(JobRunnerTest, GangMembersRunOnEveryDeviceAndAMemberFailureAnswersTheBatch) {
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  std::mutex mu;
  std::vector<std::pair<int, int>> members;  // (job id, device)
  JobRunner r({.devices = 2, .slots_per_device = 1, .queue_capacity = 8},
              std::make_unique<GangBatch>(),
              [&](Job& job, const Placement&, int device, int member) -> core::Status {
                gate.wait();
                std::lock_guard<std::mutex> lock(mu);
                members.push_back({static_cast<TestJob&>(job).id, device});
                if (static_cast<TestJob&>(job).id == 1 && member == 1) {
                  return core::Internal("member 1 failed");
                }
                return core::Status::Ok();
              });
  r.Start();
  auto head = MakeJob(0), a = MakeJob(1), b = MakeJob(2);
  ASSERT_EQ(r.Submit(head), JobRunner::SubmitResult::kQueued);
  ASSERT_EQ(r.Submit(a), JobRunner::SubmitResult::kQueued);
  ASSERT_EQ(r.Submit(b), JobRunner::SubmitResult::kQueued);
  go.set_value();
  for (auto& j : {head, a, b}) j->done.get_future().wait();
  EXPECT_TRUE(head->status.ok());
  ASSERT_EQ(a->mates.size(), 1u);  // a heads the second pass, b joins it
  EXPECT_EQ(a->status.code(), core::StatusCode::kInternal);
  EXPECT_EQ(b->status.code(), core::StatusCode::kInternal);
  EXPECT_EQ(members.size(), 4u);  // two passes, two members each
  EXPECT_EQ(r.batch_mates(), 1);
}

TEST(StartBatchTest, AJobPastItsDeadlineIsAnswered503) {
  TestJob late, fresh;
  late.deadline_s = 1e-9;
  late.arrival = Clock::now() - std::chrono::seconds(1);
  Job* both[] = {&late, &fresh};
  EXPECT_TRUE(StartBatch(both, 3));
  EXPECT_EQ(late.status.code(), core::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(fresh.status.ok());
  EXPECT_EQ(fresh.device, 3);
  Job* only_late[] = {&late};
  EXPECT_FALSE(StartBatch(only_late, 0));
}

}  // namespace
}  // namespace tessera::serve
