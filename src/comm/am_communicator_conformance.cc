#include "comm/am_communicator_conformance.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <latch>
#include <mutex>
#include <thread>

#include "comm/conformance.h"

namespace tessera::comm::testing {

namespace {

using core::StatusCode;

// Failures seen by one thread of a check.
class Checker {
 public:
  void Expect(bool ok, const std::string& what) {
    if (!ok) failures_.push_back(what);
  }
  void ExpectOk(const Status& s, const std::string& what) {
    if (!s.ok()) failures_.push_back(what + ": " + s.ToString());
  }
  void ExpectCode(const Status& s, StatusCode code, const std::string& what) {
    if (s.code() != code) {
      failures_.push_back(
          fmt::format("{}: expected {}, got {}", what, core::StatusCodeName(code), s.ToString()));
    }
  }
  // The code, and `text` somewhere in the message.
  void ExpectSays(const Status& s, StatusCode code, const std::string& text,
                  const std::string& what) {
    if (s.code() != code || s.message().find(text) == std::string::npos) {
      failures_.push_back(fmt::format("{}: expected {} saying '{}', got {}", what,
                                      core::StatusCodeName(code), text, s.ToString()));
    }
  }
  Status Result() const {
    if (failures_.empty()) return Status::Ok();
    return core::Internal(
        fmt::format("{} failure(s): {}", failures_.size(), fmt::join(failures_, " | ")));
  }

 private:
  std::vector<std::string> failures_;
};

// A one-shot event between the threads of a check; Wait gives up after the hang guard.
class Signal {
 public:
  void Set() {
    std::lock_guard<std::mutex> lock(mu_);
    set_ = true;
    cv_.notify_all();
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::duration<double>(kAmCommHangGuardS),
                        [&] { return set_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

// Polls pred until it holds; false after the hang guard.
template <typename Pred>
bool Eventually(Pred pred) {
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(kAmCommHangGuardS);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Lets a dying peer's partners get into their blocking call first (not a timing assertion:
// the checks pass whichever happens first).
void Pause() { std::this_thread::sleep_for(std::chrono::milliseconds(100)); }

StatusOr<std::unique_ptr<AmCommunicator>> Comm(std::shared_ptr<AmWorld> world,
                                               const std::vector<int>& members, uint64_t epoch,
                                               uint64_t group_id = 0) {
  ASSIGN_OR_RETURN(std::unique_ptr<AmCommunicator> comm,
                   AmCommunicator::Create(std::move(world), members, epoch, group_id));
  comm->set_op_timeout_s(kAmCommHangGuardS);
  return comm;
}

std::string Dead(int world_id) { return fmt::format("world rank {} (", world_id); }

int IndexOf(const std::vector<int>& v, int x) {
  return static_cast<int>(std::find(v.begin(), v.end(), x) - v.begin());
}

// Sum over the group of each member's world id + 1, checked on every rank.
void ExpectSumOfIds(Communicator& comm, Checker& c, const std::string& what) {
  std::vector<int64_t> v = {comm.world_rank() + 1, 1};
  c.ExpectOk(comm.AllReduceSum(std::span<int64_t>(v)), what);
  int64_t want = 0;
  for (int w : comm.world_ranks()) want += w + 1;
  c.Expect(v[0] == want && v[1] == comm.size(),
           fmt::format("{}: got [{}, {}], expected [{}, {}]", what, v[0], v[1], want, comm.size()));
}

// A few conformance checks: the collectives and point-to-point after a rebuild.
void ExpectCollectivesWork(Communicator& comm, Checker& c, uint64_t seed, const std::string& when) {
  c.ExpectOk(CheckAllReduceSumFloat(comm, seed), when + ": AllReduceSumFloat");
  c.ExpectOk(CheckDTypeAllReduceSum(comm, seed), when + ": DTypeAllReduceSum");
  c.ExpectOk(CheckAllToAllV(comm, seed), when + ": AllToAllV");
  c.ExpectOk(CheckPointToPoint(comm, seed), when + ": PointToPoint");
  c.ExpectOk(CheckBarrier(comm, seed), when + ": Barrier");
}

// Gathers every member's new address for RebuildFull.
class AddressBoard {
 public:
  explicit AddressBoard(int expected) : expected_(expected) {}
  StatusOr<AmAddressBook> Exchange(int id, const std::string& address) {
    std::unique_lock<std::mutex> lock(mu_);
    book_[id] = address;
    cv_.notify_all();
    if (!cv_.wait_for(lock, std::chrono::duration<double>(kAmCommHangGuardS),
                      [&] { return static_cast<int>(book_.size()) == expected_; })) {
      return core::DeadlineExceeded("address exchange: not every member published");
    }
    return book_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  AmAddressBook book_;
  int expected_;
};

}  // namespace

StatusOr<std::shared_ptr<AmWorld>> MakeAmWorld(const AmTransportFactory& factory, int id,
                                               AmAddressBook book) {
  ASSIGN_OR_RETURN(std::unique_ptr<AmTransport> t, factory());
  return AmWorld::Create(std::move(t), id, "127.0.0.1", 0, std::move(book));
}

StatusOr<std::vector<std::shared_ptr<AmWorld>>> MakeConnectedAmWorlds(
    const AmTransportFactory& factory, const std::vector<int>& ids) {
  std::vector<std::shared_ptr<AmWorld>> worlds;
  for (int id : ids) {
    ASSIGN_OR_RETURN(std::shared_ptr<AmWorld> w, MakeAmWorld(factory, id));
    worlds.push_back(std::move(w));
  }
  for (const auto& w : worlds) {
    for (const auto& other : worlds) w->SetAddress(other->world_id(), other->address());
  }
  RETURN_IF_ERROR(AllOk(RunOnThreads(static_cast<int>(ids.size()), [&](int i) {
    return worlds[i]->ConnectMesh(ids, kAmCommHangGuardS);
  })));
  return worlds;
}

std::vector<Status> RunOnThreads(int n, const std::function<Status(int)>& fn) {
  std::vector<Status> results(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back([&, i] { results[i] = fn(i); });
  for (std::thread& t : threads) t.join();
  return results;
}

Status AllOk(const std::vector<Status>& results) {
  std::vector<std::string> failed;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) failed.push_back(fmt::format("thread {}: {}", i, results[i].ToString()));
  }
  if (failed.empty()) return Status::Ok();
  return core::Internal(fmt::format("{}", fmt::join(failed, " || ")));
}

Status RunConformance(Communicator& comm, uint64_t seed) {
  std::vector<std::string> failed;
  for (const NamedCheck& check : ConformanceChecks()) {
    const Status s = check.fn(comm, seed);
    if (!s.ok()) failed.push_back(check.name + ": " + s.ToString());
  }
  if (failed.empty()) return Status::Ok();
  return core::Internal(fmt::format("conformance: {}", fmt::join(failed, " | ")));
}

Status CheckDeathFailsEveryWaiterThenSurvivorsReconfigure(const AmTransportFactory& factory) {
  const std::vector<int> ids = {10, 11, 12, 13};
  const int victim = 3;
  const std::vector<int> survivors = {12, 10, 11};  // renumbered: world 12 becomes rank 0
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<AmWorld>> worlds,
                   MakeConnectedAmWorlds(factory, ids));
  std::latch entered(3);
  return AllOk(RunOnThreads(4, [&](int i) -> Status {
    Checker c;
    ASSIGN_OR_RETURN(std::unique_ptr<AmCommunicator> comm, Comm(worlds[i], ids, 1));
    ExpectSumOfIds(*comm, c, "AllReduceSum before the death");
    if (i == victim) {
      entered.wait();
      Pause();
      worlds[i]->KillForTest();
      return c.Result();
    }
    if (i == 0) {
      // Waits for rank 1, which is alive and never sends: the death of world 13 must still
      // end the wait.
      std::vector<float> buffer(4);
      entered.count_down();
      c.ExpectSays(comm->Recv(buffer, 1, 3), StatusCode::kUnavailable, Dead(13),
                   "Recv from a live member when another member dies");
      c.Expect(comm->broken().ok(), "a failed receive must not break the communicator");
      c.ExpectSays(comm->Barrier(), StatusCode::kUnavailable, Dead(13),
                   "Barrier after the death is known");
    } else {
      std::vector<float> data(1000, 1.0f);
      entered.count_down();
      c.ExpectSays(comm->AllReduceSum(std::span<float>(data)), StatusCode::kUnavailable, Dead(13),
                   "pending AllReduceSum when a member dies");
    }
    c.ExpectSays(comm->broken(), StatusCode::kUnavailable, Dead(13), "broken()");
    c.ExpectCode(comm->Barrier(), StatusCode::kFailedPrecondition,
                 "Barrier on a broken communicator");
    c.Expect(worlds[i]->IsDead(13), "world 13 is not dead");
    c.ExpectOk(comm->Reconfigure(survivors, 2), "Reconfigure");
    c.Expect(comm->rank() == IndexOf(survivors, ids[i]) && comm->size() == 3 &&
                 comm->world_ranks() == survivors && comm->epoch() == 2 && comm->broken().ok(),
             fmt::format("after Reconfigure: rank {} size {} epoch {} broken {}", comm->rank(),
                         comm->size(), comm->epoch(), comm->broken().ToString()));
    c.ExpectOk(RunConformance(*comm, 77), "after Reconfigure");
    return c.Result();
  }));
}

Status CheckGroupsWithoutTheDeadKeepWorking(const AmTransportFactory& factory) {
  const std::vector<int> ids = {0, 1, 2, 3};
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<AmWorld>> worlds,
                   MakeConnectedAmWorlds(factory, ids));
  std::latch ready(4);
  return AllOk(RunOnThreads(4, [&](int i) -> Status {
    Checker c;
    ASSIGN_OR_RETURN(std::unique_ptr<AmCommunicator> comm, Comm(worlds[i], ids, 1));
    const std::vector<int> pair = i < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3};
    ASSIGN_OR_RETURN(Communicator * sub, comm->Sub(pair));
    c.ExpectOk(sub->Barrier(), "sub Barrier before the death");
    c.ExpectOk(comm->Barrier(), "Barrier before the death");
    ready.count_down();
    if (i == 3) {
      ready.wait();
      worlds[i]->KillForTest();
      return c.Result();
    }
    c.Expect(Eventually([&] { return worlds[i]->IsDead(3); }), "the death is never noticed");
    if (i < 2) {
      for (int round = 0; round < 3; ++round) ExpectSumOfIds(*sub, c, "sub [0, 1] AllReduceSum");
    } else {
      c.ExpectSays(sub->Barrier(), StatusCode::kUnavailable, Dead(3), "sub [2, 3] Barrier");
    }
    c.ExpectSays(comm->Barrier(), StatusCode::kUnavailable, Dead(3), "world Barrier");
    return c.Result();
  }));
}

Status CheckMarkDeadFailsWaiters(const AmTransportFactory& factory) {
  const std::vector<int> ids = {0, 1, 2};
  const std::string reason = "heartbeat: no beat for 3 s";
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<AmWorld>> worlds,
                   MakeConnectedAmWorlds(factory, ids));
  std::latch entered(2);
  Signal marked;
  return AllOk(RunOnThreads(4, [&](int i) -> Status {
    Checker c;
    if (i == 3) {  // the coordinator: rank 2 hangs, so it declares it dead on both others
      entered.wait();
      Pause();
      worlds[0]->MarkDead(2, reason);
      worlds[1]->MarkDead(2, reason);
      marked.Set();
      return c.Result();
    }
    ASSIGN_OR_RETURN(std::unique_ptr<AmCommunicator> comm, Comm(worlds[i], ids, 1));
    ExpectSumOfIds(*comm, c, "AllReduceSum before the hang");
    if (i == 2) {  // hangs, then wakes up and sends: its frames must be dropped
      c.Expect(marked.Wait(), "never marked dead");
      std::vector<float> late = {5.0f};
      c.ExpectOk(comm->Send(late, 0, 1), "the hung peer's late Send");
      return c.Result();
    }
    entered.count_down();
    const Status barrier = comm->Barrier();
    c.ExpectSays(barrier, StatusCode::kUnavailable, Dead(2), "Barrier waiting for a hung peer");
    c.ExpectSays(barrier, StatusCode::kUnavailable, reason, "Barrier names the reason");
    if (i == 0) {
      c.Expect(Eventually([&] { return worlds[0]->stats().frames_dropped_dead >= 1; }),
               "the hung peer's late frame was not dropped");
    }
    c.ExpectOk(comm->Reconfigure({0, 1}, 2), "Reconfigure without the hung peer");
    ExpectSumOfIds(*comm, c, "AllReduceSum after Reconfigure");
    return c.Result();
  }));
}

Status CheckEpochFiltering(const AmTransportFactory& factory) {
  const std::vector<int> ids = {0, 1};
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<AmWorld>> worlds,
                   MakeConnectedAmWorlds(factory, ids));
  Signal queued, moved_to_2, late_sent, at_3;
  return AllOk(RunOnThreads(2, [&](int i) -> Status {
    Checker c;
    ASSIGN_OR_RETURN(std::unique_ptr<AmCommunicator> comm, Comm(worlds[i], ids, 1));
    c.ExpectOk(comm->Barrier(), "Barrier at epoch 1");
    AmWorld& world = *worlds[i];
    if (i == 1) {
      std::vector<float> v = {0.5f};
      c.ExpectOk(comm->Send(v, 0, 7), "Send at epoch 1 (queued, never received)");
      queued.Set();
      c.Expect(moved_to_2.Wait(), "rank 0 never moved to epoch 2");
      v[0] = 1.0f;
      c.ExpectOk(comm->Send(v, 0, 5), "Send at the stale epoch 1");
      late_sent.Set();
      c.ExpectOk(comm->Reconfigure(ids, 2), "Reconfigure to 2");
      v[0] = 2.0f;
      c.ExpectOk(comm->Send(v, 0, 5), "Send at epoch 2");
      c.ExpectOk(comm->Reconfigure(ids, 3), "Reconfigure to 3");
      v[0] = 3.0f;
      c.ExpectOk(comm->Send(v, 0, 6), "Send at epoch 3, before rank 0 reached it");
      at_3.Set();
    } else {
      c.Expect(queued.Wait(), "no epoch-1 frame");
      c.Expect(Eventually([&] { return world.stats().frames_delivered >= 2; }),
               "the epoch-1 frame never arrived");  // the Barrier's frame and this one
      c.ExpectOk(comm->Reconfigure(ids, 2), "Reconfigure to 2");
      c.Expect(world.stats().frames_dropped_stale == 1,
               fmt::format("the queued epoch-1 frame was not purged: {} stale",
                           world.stats().frames_dropped_stale));
      moved_to_2.Set();
      c.Expect(late_sent.Wait(), "no late frame");
      c.Expect(Eventually([&] { return world.stats().frames_dropped_stale >= 2; }),
               "the late epoch-1 frame was not dropped");
      std::vector<float> got = {-1.0f};
      c.ExpectOk(comm->Recv(got, 1, 5), "Recv at epoch 2");
      c.Expect(got[0] == 2.0f, fmt::format("Recv at epoch 2 got {}, expected 2", got[0]));
      c.Expect(at_3.Wait(), "rank 1 never reached epoch 3");
      // Delivered so far: the Barrier's frame, tag 7, tag 5 at epoch 2; then tag 6 at epoch 3.
      c.Expect(Eventually([&] { return world.stats().frames_delivered >= 4; }),
               "the epoch-3 frame never arrived");
      c.ExpectOk(comm->Reconfigure(ids, 3), "Reconfigure to 3");
      got[0] = -1.0f;
      c.ExpectOk(comm->Recv(got, 1, 6), "Recv of the frame that came before Reconfigure");
      c.Expect(got[0] == 3.0f, fmt::format("Recv at epoch 3 got {}, expected 3", got[0]));
      c.Expect(world.stats().frames_dropped_stale == 2, "a newer-epoch frame was dropped");
    }
    c.ExpectOk(comm->Barrier(), "Barrier at epoch 3");
    return c.Result();
  }));
}

Status CheckReconfigureRefusals(const AmTransportFactory& factory) {
  const std::vector<int> ids = {4, 9};
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<AmWorld>> worlds,
                   MakeConnectedAmWorlds(factory, ids));
  return AllOk(RunOnThreads(2, [&](int i) -> Status {
    Checker c;
    const int other = ids[1 - i];
    ASSIGN_OR_RETURN(std::unique_ptr<AmCommunicator> comm, Comm(worlds[i], ids, 5));
    c.ExpectSays(comm->Reconfigure(ids, 5), StatusCode::kFailedPrecondition, "epoch 5",
                 "Reconfigure to the same epoch");
    const Status older = comm->Reconfigure(ids, 3);
    c.ExpectSays(older, StatusCode::kFailedPrecondition, "epoch 3", "Reconfigure to epoch 3");
    c.ExpectSays(older, StatusCode::kFailedPrecondition, "epoch 5", "Reconfigure to epoch 3");
    c.ExpectCode(comm->Reconfigure({other}, 6), StatusCode::kInvalidArgument, "without self");
    c.ExpectCode(comm->Reconfigure({4, 4, 9}, 6), StatusCode::kInvalidArgument, "duplicate");
    c.ExpectCode(comm->Reconfigure({}, 6), StatusCode::kInvalidArgument, "empty");
    c.ExpectCode(comm->Reconfigure({4, -1, 9}, 6), StatusCode::kInvalidArgument, "negative");
    worlds[i]->MarkDead(77, "injected by the check");
    c.ExpectSays(comm->Reconfigure({4, 9, 77}, 6), StatusCode::kUnavailable, "world rank 77",
                 "a dead member");
    c.Expect(comm->epoch() == 5 && comm->broken().ok() && comm->world_ranks() == ids,
             "a refused Reconfigure changed the communicator");
    ExpectSumOfIds(*comm, c, "AllReduceSum after refusals");
    // A second communicator of the same members needs its own group id.
    c.ExpectCode(AmCommunicator::Create(worlds[i], ids, 5).status(), StatusCode::kInvalidArgument,
                 "a second live communicator with the same group id and members");
    {
      ASSIGN_OR_RETURN(std::unique_ptr<AmCommunicator> second, Comm(worlds[i], ids, 5, 3));
      c.Expect(second->group_key() != comm->group_key(), "group ids do not separate groups");
      ExpectSumOfIds(*second, c, "AllReduceSum on the second group");
      ExpectSumOfIds(*comm, c, "AllReduceSum on the first group");
      c.ExpectOk(second->Barrier(), "Barrier on the second group");
    }
    // Its epoch 5 is over once it is gone: recreating it there is stale.
    c.ExpectCode(AmCommunicator::Create(worlds[i], ids, 5, 3).status(),
                 StatusCode::kFailedPrecondition, "recreating a group at an epoch it left");
    c.ExpectOk(comm->Reconfigure(ids, 6), "Reconfigure to epoch 6");
    c.ExpectOk(comm->Barrier(), "Barrier at epoch 6");
    return c.Result();
  }));
}

Status CheckJoinerIsAdmitted(const AmTransportFactory& factory) {
  const std::vector<int> ids = {0, 1, 2};
  // World ids equal ranks here: the conformance suite's nested-Sub check assumes so at 4 ranks.
  const std::vector<int> grown = {0, 1, 2, 3};
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<AmWorld>> worlds,
                   MakeConnectedAmWorlds(factory, ids));
  const AmAddressBook book = worlds[0]->address_book();
  std::shared_ptr<AmWorld> joiner_world;  // kept until every thread is done
  return AllOk(RunOnThreads(4, [&](int i) -> Status {
    Checker c;
    if (i == 3) {
      ASSIGN_OR_RETURN(joiner_world, MakeAmWorld(factory, 3, book));
      c.ExpectOk(joiner_world->Join(ids, kAmCommHangGuardS), "Join");
      ASSIGN_OR_RETURN(std::unique_ptr<AmCommunicator> comm, Comm(joiner_world, grown, 2));
      c.Expect(comm->rank() == 3 && comm->size() == 4, "the joiner's rank");
      ExpectSumOfIds(*comm, c, "the joiner's first AllReduceSum");
      c.ExpectOk(RunConformance(*comm, 55), "the joiner's conformance");
      return c.Result();
    }
    ASSIGN_OR_RETURN(std::unique_ptr<AmCommunicator> comm, Comm(worlds[i], ids, 1));
    ExpectSumOfIds(*comm, c, "AllReduceSum before the join");
    c.ExpectOk(comm->Reconfigure(grown, 2), "Reconfigure adding the joiner");
    ExpectSumOfIds(*comm, c, "the first AllReduceSum with the joiner");
    c.ExpectOk(RunConformance(*comm, 55), "conformance with the joiner");
    return c.Result();
  }));
}

Status CheckGracefulLeave(const AmTransportFactory& factory) {
  const std::vector<int> ids = {0, 1, 2};
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<AmWorld>> worlds,
                   MakeConnectedAmWorlds(factory, ids));
  return AllOk(RunOnThreads(3, [&](int i) -> Status {
    Checker c;
    ASSIGN_OR_RETURN(std::unique_ptr<AmCommunicator> comm, Comm(worlds[i], ids, 1));
    Communicator* pair = nullptr;
    if (i < 2) {
      ASSIGN_OR_RETURN(pair, comm->Sub({0, 1}));
    }
    ExpectSumOfIds(*comm, c, "AllReduceSum before the leave");
    if (i == 2) {  // finishes first and closes its world: its last frames must still count
      comm.reset();
      worlds[2].reset();
      return c.Result();
    }
    std::vector<float> buffer(2);
    c.ExpectSays(comm->Recv(buffer, 2, 0), StatusCode::kUnavailable, "left",
                 "Recv from a member that left");
    c.Expect(!worlds[i]->IsDead(2), "a member that said goodbye counted as dead");
    for (int round = 0; round < 3; ++round) ExpectSumOfIds(*pair, c, "sub [0, 1] AllReduceSum");
    c.ExpectSays(comm->Barrier(), StatusCode::kUnavailable, "left",
                 "Barrier of the group the member left");
    return c.Result();
  }));
}

Status CheckRebuildBaselines(const AmTransportFactory& factory) {
  const std::vector<int> ids = {0, 1, 2, 3};
  const std::vector<int> survivors = {0, 1, 2};
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<AmWorld>> worlds,
                   MakeConnectedAmWorlds(factory, ids));
  std::latch ready(4);
  AddressBoard board(3);
  return AllOk(RunOnThreads(4, [&](int i) -> Status {
    Checker c;
    ASSIGN_OR_RETURN(std::unique_ptr<AmCommunicator> comm, Comm(worlds[i], ids, 1));
    ExpectSumOfIds(*comm, c, "AllReduceSum before the death");
    ready.count_down();
    if (i == 3) {
      ready.wait();
      worlds[i]->KillForTest();
      return c.Result();
    }
    c.ExpectSays(comm->Barrier(), StatusCode::kUnavailable, Dead(3), "Barrier after the death");
    c.ExpectOk(comm->RebuildPartial(survivors, 2, kAmCommHangGuardS), "RebuildPartial");
    for (int peer : survivors) {
      c.Expect(peer == ids[i] || worlds[i]->connected(peer),
               fmt::format("no connection to {} after RebuildPartial", peer));
    }
    c.Expect(comm->epoch() == 2 && comm->size() == 3, "RebuildPartial did not reconfigure");
    ExpectCollectivesWork(*comm, c, 31, "after RebuildPartial");
    const std::string old_address = worlds[i]->address();
    ASSIGN_OR_RETURN(std::unique_ptr<AmTransport> fresh, factory());
    c.ExpectOk(comm->RebuildFull(
                   std::move(fresh),
                   [&](const std::string& address) { return board.Exchange(ids[i], address); },
                   survivors, 3, kAmCommHangGuardS),
               "RebuildFull");
    c.Expect(worlds[i]->address() != old_address, "RebuildFull kept the old address");
    c.Expect(worlds[i]->IsDead(3), "RebuildFull forgot the dead member");
    c.Expect(comm->epoch() == 3 && comm->size() == 3, "RebuildFull did not reconfigure");
    ExpectCollectivesWork(*comm, c, 32, "after RebuildFull");
    return c.Result();
  }));
}

std::vector<NamedAmCommCheck> AmCommElasticChecks() {
  return {
      {"DeathFailsEveryWaiterThenSurvivorsReconfigure",
       CheckDeathFailsEveryWaiterThenSurvivorsReconfigure},
      {"GroupsWithoutTheDeadKeepWorking", CheckGroupsWithoutTheDeadKeepWorking},
      {"MarkDeadFailsWaiters", CheckMarkDeadFailsWaiters},
      {"EpochFiltering", CheckEpochFiltering},
      {"ReconfigureRefusals", CheckReconfigureRefusals},
      {"JoinerIsAdmitted", CheckJoinerIsAdmitted},
      {"GracefulLeave", CheckGracefulLeave},
      {"RebuildBaselines", CheckRebuildBaselines},
  };
}

}  // namespace tessera::comm::testing
