#include "elaswave/coordinator_core.h"

#include <gtest/gtest.h>

#include <optional>

namespace tessera::elaswave {
namespace {

ControlMessage Msg(ControlKind kind, int world, int64_t epoch = 0, int64_t step = -1,
                   uint64_t digest = 0) {
  ControlMessage m;
  m.kind = kind;
  m.world = world;
  m.epoch = epoch;
  m.step = step;
  m.digest = digest;
  return m;
}

ControlMessage Register(int world, int64_t pid = 0) {
  ControlMessage m = Msg(ControlKind::kRegister, world);
  m.address = "127.0.0.1:" + std::to_string(7000 + world);
  m.pid = pid;
  return m;
}

// A copy of the message of `kind` in `out` (outputs are temporaries), or nullopt.
std::optional<ControlMessage> Find(const CoordinatorOutput& out, ControlKind kind) {
  for (const auto& s : out.sends) {
    if (s.message.kind == kind) return s.message;
  }
  return std::nullopt;
}

CoordinatorCore Started(int n) {
  CoordinatorOptions o;
  o.world_size = n;
  CoordinatorCore c(o);
  for (int w = 0; w < n; ++w) (void)c.OnMessage(Register(w, 100 + w), 0.0);
  return c;
}

void RunStep(CoordinatorCore& c, const std::vector<int>& workers, int64_t step, double t) {
  CoordinatorOutput last;
  for (int w : workers) last = c.OnMessage(Msg(ControlKind::kVote, w, c.epoch(), step, 42), t);
  const std::optional<ControlMessage> commit = Find(last, ControlKind::kCommit);
  ASSERT_NE(commit, std::nullopt) << "step " << step;
  EXPECT_EQ(commit->step, step);
  for (int w : workers) (void)c.OnMessage(Msg(ControlKind::kSnapshot, w, c.epoch(), step), t);
  EXPECT_EQ(c.complete_step(), step);
}

TEST(CoordinatorCore, FreshJobStartsCommitsAndFinishes) {
  CoordinatorOptions o;
  o.world_size = 3;
  CoordinatorCore c(o);
  EXPECT_EQ(Find(c.OnMessage(Register(0), 0.0), ControlKind::kRoster), std::nullopt);
  (void)c.OnMessage(Register(2), 0.0);
  const CoordinatorOutput out = c.OnMessage(Register(1), 0.1);
  const std::optional<ControlMessage> roster = Find(out, ControlKind::kRoster);
  ASSERT_NE(roster, std::nullopt);
  EXPECT_EQ(roster->epoch, 0);
  EXPECT_EQ(roster->complete_step, -1);
  EXPECT_EQ(roster->addresses.at(2), "127.0.0.1:7002");
  EXPECT_EQ(c.phase(), CoordinatorCore::Phase::kRunning);
  // No commit until every worker voted.
  EXPECT_EQ(Find(c.OnMessage(Msg(ControlKind::kVote, 0, 0, 0, 42), 0.2), ControlKind::kCommit),
            std::nullopt);
  EXPECT_EQ(Find(c.OnMessage(Msg(ControlKind::kVote, 1, 0, 0, 42), 0.2), ControlKind::kCommit),
            std::nullopt);
  const std::optional<ControlMessage> commit =
      Find(c.OnMessage(Msg(ControlKind::kVote, 2, 0, 0, 42), 0.2), ControlKind::kCommit);
  ASSERT_NE(commit, std::nullopt);
  EXPECT_EQ(commit->step, 0);
  for (int w = 0; w < 3; ++w) (void)c.OnMessage(Msg(ControlKind::kSnapshot, w, 0, 0), 0.3);
  EXPECT_EQ(c.complete_step(), 0);
  RunStep(c, {0, 1, 2}, 1, 0.4);
  for (int w = 0; w < 2; ++w) (void)c.OnMessage(Msg(ControlKind::kDone, w, 0, 1, 7), 0.5);
  const std::optional<ControlMessage> bye =
      Find(c.OnMessage(Msg(ControlKind::kDone, 2, 0, 1, 7), 0.5), ControlKind::kShutdown);
  ASSERT_NE(bye, std::nullopt);
  EXPECT_EQ(bye->code, 0);
  EXPECT_EQ(c.exit_code(), 0);
}

TEST(CoordinatorCore, ADeathAbortsRecoversAndResumesWithoutTheSpare) {
  CoordinatorCore c = Started(4);
  RunStep(c, {0, 1, 2, 3}, 0, 0.1);
  // Step 1: two votes in, then rank 3 dies.
  (void)c.OnMessage(Msg(ControlKind::kVote, 0, 0, 1, 42), 0.2);
  const CoordinatorOutput out = c.OnLost(3, "connection reset", 0.25);
  const std::optional<ControlMessage> abort = Find(out, ControlKind::kAbort);
  ASSERT_NE(abort, std::nullopt);
  EXPECT_EQ(abort->epoch, 1);
  EXPECT_EQ(abort->dead, (std::set<int>{3}));
  EXPECT_EQ(abort->complete_step, 0);
  EXPECT_TRUE(out.kill_pids.empty());  // it died by itself
  EXPECT_EQ(c.phase(), CoordinatorCore::Phase::kRecovering);
  // Ready from everyone alive; rank 2 (rank 3's TP peer) is a spare.
  (void)c.OnMessage(Msg(ControlKind::kReady, 0, 1, -1, 99), 0.3);
  ControlMessage spare = Msg(ControlKind::kReady, 2, 1, -1, 99);
  spare.spare = true;
  (void)c.OnMessage(spare, 0.3);
  const std::optional<ControlMessage> resume =
      Find(c.OnMessage(Msg(ControlKind::kReady, 1, 1, -1, 99), 0.3), ControlKind::kResume);
  ASSERT_NE(resume, std::nullopt);
  EXPECT_EQ(resume->step, 1);  // step 1 redone
  // The vote cast before the abort does not count; the spare does not vote.
  EXPECT_EQ(Find(c.OnMessage(Msg(ControlKind::kVote, 1, 1, 1, 99), 0.4), ControlKind::kCommit),
            std::nullopt);
  const std::optional<ControlMessage> commit =
      Find(c.OnMessage(Msg(ControlKind::kVote, 0, 1, 1, 99), 0.4), ControlKind::kCommit);
  ASSERT_NE(commit, std::nullopt);
  EXPECT_EQ(commit->step, 1);
}

TEST(CoordinatorCore, DoubleFaultDuringRecoveryBumpsTheEpochAgainAndFencesStaleReadies) {
  CoordinatorCore c = Started(4);
  RunStep(c, {0, 1, 2, 3}, 0, 0.1);
  (void)c.OnLost(3, "reset", 0.2);
  (void)c.OnMessage(Msg(ControlKind::kReady, 0, 1, -1, 5), 0.25);
  const std::optional<ControlMessage> abort2 = Find(c.OnLost(1, "reset", 0.3), ControlKind::kAbort);
  ASSERT_NE(abort2, std::nullopt);
  EXPECT_EQ(abort2->epoch, 2);
  EXPECT_EQ(abort2->dead, (std::set<int>{1, 3}));
  // A ready of epoch 1 that arrives now is stale.
  EXPECT_EQ(Find(c.OnMessage(Msg(ControlKind::kReady, 2, 1, -1, 5), 0.31), ControlKind::kResume),
            std::nullopt);
  EXPECT_EQ(c.stale_dropped(), 1);
  (void)c.OnMessage(Msg(ControlKind::kReady, 0, 2, -1, 6), 0.4);
  EXPECT_NE(Find(c.OnMessage(Msg(ControlKind::kReady, 2, 2, -1, 6), 0.4), ControlKind::kResume),
            std::nullopt);
}

TEST(CoordinatorCore, SilentWorkerIsFencedAfterTheHeartbeatTimeout) {
  CoordinatorCore c = Started(3);
  (void)c.OnMessage(Msg(ControlKind::kHeartbeat, 0), 0.9);
  (void)c.OnMessage(Msg(ControlKind::kHeartbeat, 1), 0.9);
  EXPECT_TRUE(c.OnTick(0.95).sends.empty());
  const CoordinatorOutput out = c.OnTick(1.05);  // rank 2 quiet since 0.0
  const std::optional<ControlMessage> abort = Find(out, ControlKind::kAbort);
  ASSERT_NE(abort, std::nullopt);
  EXPECT_EQ(abort->dead, (std::set<int>{2}));
  EXPECT_EQ(out.kill_pids, (std::vector<int64_t>{102}));
  // Its messages are ignored from now on.
  EXPECT_TRUE(c.OnMessage(Msg(ControlKind::kReady, 2, 1, -1, 1), 1.1).sends.empty());
}

TEST(CoordinatorCore, DisagreeingPlansAndUnrecoverableEndTheJob) {
  CoordinatorCore c = Started(3);
  (void)c.OnLost(2, "reset", 0.1);
  (void)c.OnMessage(Msg(ControlKind::kReady, 0, 1, -1, 5), 0.2);
  const std::optional<ControlMessage> bye =
      Find(c.OnMessage(Msg(ControlKind::kReady, 1, 1, -1, 6), 0.2), ControlKind::kShutdown);
  ASSERT_NE(bye, std::nullopt);
  EXPECT_EQ(bye->code, 1);
  EXPECT_NE(bye->why.find("plans differ at epoch 1"), std::string::npos);

  CoordinatorCore d = Started(2);
  (void)d.OnLost(1, "reset", 0.1);
  ControlMessage lost_cause = Msg(ControlKind::kReady, 0, 1, -1, 0);
  lost_cause.why = "unrecoverable: head (tp rank 0) was held by ranks 1 only, all dead";
  const std::optional<ControlMessage> end =
      Find(d.OnMessage(lost_cause, 0.2), ControlKind::kShutdown);
  ASSERT_NE(end, std::nullopt);
  EXPECT_EQ(end->code, 1);
  EXPECT_EQ(end->why, lost_cause.why);
}

TEST(CoordinatorCore, RestartedCoordinatorRebuildsFromReRegistrations) {
  CoordinatorOptions o;
  o.world_size = 4;
  o.restarted = true;
  o.registration_timeout_s = 2.0;
  CoordinatorCore c(o);
  for (int w : {0, 2}) {
    ControlMessage r = Register(w, 200 + w);
    r.epoch = 3;
    r.complete_step = w == 0 ? 7 : 6;  // rank 2 had not heard that 7 was complete
    r.dead = {1};
    EXPECT_TRUE(c.OnMessage(r, 10.0).sends.empty());
  }
  // Rank 3 never comes back: after the window it is dead too.
  EXPECT_TRUE(c.OnTick(11.0).sends.empty());
  const CoordinatorOutput out = c.OnTick(12.1);
  const std::optional<ControlMessage> abort = Find(out, ControlKind::kAbort);
  ASSERT_NE(abort, std::nullopt);
  EXPECT_EQ(abort->epoch, 4);
  EXPECT_EQ(abort->dead, (std::set<int>{1, 3}));
  EXPECT_EQ(abort->complete_step, 7);
  (void)c.OnMessage(Msg(ControlKind::kReady, 0, 4, -1, 9), 12.2);
  const std::optional<ControlMessage> resume =
      Find(c.OnMessage(Msg(ControlKind::kReady, 2, 4, -1, 9), 12.2), ControlKind::kResume);
  ASSERT_NE(resume, std::nullopt);
  EXPECT_EQ(resume->step, 8);
}

TEST(CoordinatorCore, AWorkerThatNeverRegistersEndsAFreshJob) {
  CoordinatorOptions o;
  o.world_size = 3;
  o.start_timeout_s = 10;
  CoordinatorCore c(o);
  (void)c.OnMessage(Register(0), 1.0);
  (void)c.OnMessage(Register(2), 1.5);
  EXPECT_TRUE(c.OnTick(10.9).sends.empty());
  const auto bye = Find(c.OnTick(11.1), ControlKind::kShutdown);
  ASSERT_NE(bye, std::nullopt);
  EXPECT_EQ(bye->code, 1);
  EXPECT_EQ(bye->why, "rank(s) 1 did not register within 10 s of the first");
}

TEST(CoordinatorCore, DeathBeforeTheStartEndsTheJob) {
  CoordinatorOptions o;
  o.world_size = 2;
  CoordinatorCore c(o);
  (void)c.OnMessage(Register(0), 0.0);
  const std::optional<ControlMessage> bye = Find(c.OnLost(0, "reset", 0.1), ControlKind::kShutdown);
  ASSERT_NE(bye, std::nullopt);
  EXPECT_EQ(bye->code, 1);
}

TEST(CoordinatorProtocol, RoundTripsAndRefusesGarbage) {
  ControlMessage m = Msg(ControlKind::kAbort, 3, 5, 9, 0xdeadbeefcafef00dULL);
  m.dead = {1, 4};
  m.addresses = {{0, "127.0.0.1:1"}, {1, "127.0.0.1:2"}};
  m.why = "x";
  m.spare = true;
  auto back = DecodeControl(EncodeControl(m));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, m);
  EXPECT_FALSE(DecodeControl("not json").ok());
  EXPECT_FALSE(DecodeControl(R"({"kind": "nope"})").ok());
  EXPECT_FALSE(DecodeControl(R"({"kind": "vote"})").ok());
}

}  // namespace
}  // namespace tessera::elaswave
