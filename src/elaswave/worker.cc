#include "elaswave/worker.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "comm/am_communicator.h"
#include "comm/am_world.h"
#include "core/fnv64.h"
#include "core/input_file.h"
#include "core/output_file.h"
#include "elaswave/coordinator.h"
#include "elaswave/coordinator_client.h"

namespace tessera::elaswave {
namespace {

// One JSON object per line, flushed at once (the launcher reads the file after the run).
class EventLog {
 public:
  explicit EventLog(const std::string& path) : file_(std::fopen(path.c_str(), "a")) {}
  ~EventLog() {
    if (file_) std::fclose(file_);
  }
  void Write(core::Json j) {
    j["t"] = MonotonicSeconds();
    const std::string line = j.dump() + "\n";
    std::lock_guard<std::mutex> lock(mu_);
    if (!file_) return;
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fflush(file_);
  }

 private:
  std::FILE* file_;
  std::mutex mu_;
};

std::string Hex(uint64_t v) { return fmt::format("{:016x}", v); }

ControlMessage ShutdownMessage(int code, std::string why) {
  ControlMessage m;
  m.kind = ControlKind::kShutdown;
  m.code = code;
  m.why = std::move(why);
  return m;
}

class Worker {
 public:
  Worker(const ElasticJobConfig& job, int world)
      : job_(job), world_id_(world), log_(job.WorkerLog(world)) {}
  int Run();

 private:
  // What a registration reports (the coordinator may be a restarted one).
  ControlMessage RegisterMessage();
  core::StatusOr<ControlMessage> WaitFor(std::initializer_list<ControlKind> kinds,
                                         double timeout_s);
  void FaultPoint(StepPhase phase, int64_t step, int64_t micro_batch);
  // Recovers from `abort` until resumed; returns the shutdown message if the job ends instead.
  std::optional<ControlMessage> Recover(ControlMessage abort);
  int Finish(const ControlMessage& shutdown);
  void Spill(const std::string& why);
  // The restart policy's disk checkpoint of every held slot after `step` (a file already
  // written by another holder of the same slot is left as it is: the state is the same).
  void WriteCheckpoint(int64_t step);
  uint64_t StateDigest() const;

  const ElasticJobConfig& job_;
  const int world_id_;
  EventLog log_;
  std::shared_ptr<comm::AmWorld> world_;
  std::unique_ptr<comm::AmCommunicator> comm_;
  std::unique_ptr<CoordinatorClient> client_;
  std::unique_ptr<ElasticTrainer> trainer_;
  std::vector<SlotCost> costs_;
  ElasticPlan resumed_plan_;
  std::mutex state_mu_;  // guards the fields a registration reads
  int64_t epoch_ = 0;
  int64_t complete_step_ = -1;
  std::set<int> dead_;
  int64_t step_ = 0;
  std::set<size_t> fired_;
  double slow_factor_ = 1.0;
  double last_hook_s_ = 0;
};

ControlMessage Worker::RegisterMessage() {
  std::lock_guard<std::mutex> lock(state_mu_);
  ControlMessage r;
  r.address = world_ ? world_->address() : "";
  r.epoch = epoch_;
  r.complete_step = complete_step_;
  r.dead = dead_;
  return r;
}

core::StatusOr<ControlMessage> Worker::WaitFor(std::initializer_list<ControlKind> kinds,
                                               double timeout_s) {
  const double until = MonotonicSeconds() + timeout_s;
  while (true) {
    const double left = until - MonotonicSeconds();
    if (left <= 0) {
      return core::DeadlineExceeded(
          fmt::format("rank {}: nothing from the coordinator in {} s", world_id_, timeout_s));
    }
    ASSIGN_OR_RETURN(ControlMessage m, client_->Next(left));
    if (m.kind == ControlKind::kShutdown || m.kind == ControlKind::kAbort) {
      if (m.kind == ControlKind::kAbort && m.epoch <= epoch_) continue;  // already handled
      return m;
    }
    if (m.epoch < epoch_) continue;  // stale
    for (ControlKind k : kinds) {
      if (m.kind == k) return m;
    }
  }
}

void Worker::FaultPoint(StepPhase phase, int64_t step, int64_t micro_batch) {
  const double now = MonotonicSeconds();
  if (slow_factor_ > 1.0 && (phase == StepPhase::kForward || phase == StepPhase::kBackward ||
                             phase == StepPhase::kReduce)) {
    const double busy = now - last_hook_s_;
    if (busy > 0 && busy < 10) {
      std::this_thread::sleep_for(std::chrono::duration<double>(busy * (slow_factor_ - 1.0)));
    }
  }
  last_hook_s_ = MonotonicSeconds();
  for (size_t i = 0; i < job_.faults.size(); ++i) {
    const FaultEvent& e = job_.faults[i];
    if (fired_.count(i) || e.at_time || e.target_coordinator || e.target_rank != world_id_)
      continue;
    if (std::find(job_.faults_done.begin(), job_.faults_done.end(), static_cast<int64_t>(i)) !=
        job_.faults_done.end()) {
      continue;  // delivered before the job was restarted
    }
    if (e.step != step || e.phase != phase) continue;
    if (e.micro_batch >= 0 && micro_batch >= 0 && e.micro_batch != micro_batch) {
      // A micro-batch this rank does not run: the fault fires at its first one instead.
      const auto [p, j] = trainer_->plan().Position(world_id_);
      const PlanPipeline* pipe = p >= 0 ? &trainer_->plan().pipelines[p] : nullptr;
      const bool runs_it = pipe && e.micro_batch >= pipe->first_micro_batch &&
                           e.micro_batch < pipe->first_micro_batch + pipe->micro_batches;
      if (runs_it || !pipe || micro_batch != pipe->first_micro_batch) continue;
    }
    fired_.insert(i);
    if (e.action == FaultAction::kSlow) {
      slow_factor_ = e.slow_factor;
      log_.Write({{"event", "slow"}, {"fault", i}, {"factor", e.slow_factor}, {"step", step}});
      continue;
    }
    if (e.action == FaultAction::kJoin) continue;
    // Tell the launcher, then wait for its signal (SIGKILL or SIGSTOP).
    log_.Write({{"event", "fault_point"},
                {"fault", i},
                {"step", step},
                {"phase", StepPhaseName(phase)},
                {"micro_batch", micro_batch}});
    (void)core::WriteFileAtomically(job_.FaultMark(i), fmt::format("{:.9f}\n", MonotonicSeconds()));
    for (int waited = 0; waited < 600; ++waited) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::fprintf(stderr, "rank %d: the launcher never delivered fault %zu\n", world_id_, i);
    std::_Exit(3);
  }
}

uint64_t Worker::StateDigest() const {
  core::Fnv64 h;
  for (const SlotDigest& d : trainer_->Digests()) {
    h.I64(d.slot);
    h.I64(d.tp_rank);
    h.I64(static_cast<int64_t>(d.digest));
  }
  return h.value();
}

void Worker::WriteCheckpoint(int64_t step) {
  std::error_code ec;
  for (int slot : trainer_->store().Slots()) {
    const std::string path = job_.CheckpointFile(step, slot, trainer_->tp_rank());
    if (std::filesystem::exists(path, ec)) continue;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    auto packed = trainer_->store().Pack(slot);
    if (!packed.ok()) continue;
    (void)core::WriteFileAtomically(path,
                                    std::string_view(reinterpret_cast<const char*>(packed->data()),
                                                     packed->size() * sizeof(float)));
  }
}

void Worker::Spill(const std::string& why) {
  // The last complete step's state, so a restart from disk can pick it up.
  SlotStore& store = trainer_->store();
  const int64_t step = complete_step_;
  if (store.HasSnapshot(step)) (void)store.Restore(step);
  std::string bin;
  core::Json slots = core::Json::array();
  for (int s : store.Slots()) {
    auto packed = store.Pack(s);
    if (!packed.ok()) continue;
    slots.push_back({{"slot", s},
                     {"offset", bin.size()},
                     {"floats", packed->size()},
                     {"digest", Hex(store.Digest(s))}});
    bin.append(reinterpret_cast<const char*>(packed->data()), packed->size() * sizeof(float));
  }
  const std::string base = job_.SpillFile(world_id_);
  (void)core::WriteFileAtomically(base.substr(0, base.size() - 5) + ".bin", bin);
  core::Json j = {{"world", world_id_},
                  {"tp_rank", trainer_->tp_rank()},
                  {"step", step},
                  {"why", why},
                  {"slots", slots}};
  (void)core::WriteFileAtomically(base, j.dump(2) + "\n");
  log_.Write({{"event", "spilled"}, {"step", step}, {"why", why}});
}

int Worker::Finish(const ControlMessage& shutdown) {
  log_.Write({{"event", "shutdown"}, {"code", shutdown.code}, {"why", shutdown.why}});
  if (shutdown.code == kRestartExitCode) return kRestartExitCode;
  if (shutdown.code != 0) {
    Spill(shutdown.why);
    std::fprintf(stderr, "rank %d: %s\n", world_id_, shutdown.why.c_str());
    return 1;
  }
  return 0;
}

std::optional<ControlMessage> Worker::Recover(ControlMessage abort) {
  if (job_.policy == RecoveryPolicy::kRestart) {
    // The restart policy does not recover in place: the launcher starts the job again.
    log_.Write({{"event", "abort"},
                {"epoch", abort.epoch},
                {"dead", abort.dead},
                {"complete_step", abort.complete_step}});
    return ShutdownMessage(kRestartExitCode, "restart from the last checkpoint");
  }
  while (true) {
    {
      std::lock_guard<std::mutex> lock(state_mu_);
      epoch_ = abort.epoch;
      complete_step_ = abort.complete_step;
      dead_ = abort.dead;
    }
    log_.Write({{"event", "abort"},
                {"epoch", abort.epoch},
                {"dead", abort.dead},
                {"complete_step", abort.complete_step}});
    // The abort's dead ranks were marked, and older epochs fenced, when it arrived (the
    // client's on_message, below in Run), before any wait could need it.
    FaultPoint(StepPhase::kRecover, step_, -1);
    const auto next_abort = [&]() -> std::optional<ControlMessage> {
      auto m = WaitFor({}, job_.recovery_timeout_s);
      if (!m.ok()) return ShutdownMessage(1, m.status().message());
      return *m;
    };
    // A worker that computed under the resumed plan rolls back to the last complete step; a
    // spare holds nothing to roll back.
    core::Status st;
    if (resumed_plan_.Position(world_id_).first >= 0) {
      st = trainer_->store().Restore(abort.complete_step);
    }
    std::set<int> newly;
    for (int d : abort.dead) {
      if (!resumed_plan_.dead.count(d)) newly.insert(d);
    }
    auto candidate = Replan(job_.trainer.shape, costs_, resumed_plan_, newly, job_.policy);
    if (st.ok() && !candidate.ok()) {
      ControlMessage r;
      r.kind = ControlKind::kReady;
      r.epoch = abort.epoch;
      r.digest = 0;
      r.why = candidate.status().message();
      (void)client_->Send(r);
      log_.Write({{"event", "unrecoverable"}, {"why", r.why}});
      auto m = next_abort();
      if (m->kind == ControlKind::kShutdown) return m;
      abort = *m;
      continue;
    }
    std::vector<int> live;
    for (int w = 0; w < job_.trainer.shape.processes(); ++w) {
      if (!abort.dead.count(w)) live.push_back(w);
    }
    if (st.ok()) st = comm_->Reconfigure(live, static_cast<uint64_t>(abort.epoch));
    if (st.ok()) st = trainer_->Install(*candidate, *comm_);
    log_.Write({{"event", "installed"},
                {"epoch", abort.epoch},
                {"ok", st.ok()},
                {"why", st.ok() ? "" : st.message()}});
    if (st.ok()) {
      ControlMessage r;
      r.kind = ControlKind::kReady;
      r.epoch = abort.epoch;
      r.digest = candidate->digest;
      r.spare = !trainer_->computing();
      (void)client_->Send(r);
      auto m = WaitFor({ControlKind::kResume}, job_.recovery_timeout_s);
      if (m.ok() && m->kind == ControlKind::kResume) {
        resumed_plan_ = *candidate;
        step_ = m->step;
        log_.Write({{"event", "resumed"},
                    {"epoch", abort.epoch},
                    {"step", step_},
                    {"spare", !trainer_->computing()},
                    {"plan", Hex(candidate->digest)}});
        return std::nullopt;
      }
      if (!m.ok()) {
        return ShutdownMessage(1, fmt::format("recovery not resumed: {}", m.status().message()));
      }
      if (m->kind == ControlKind::kShutdown) return *m;
      abort = *m;
      continue;
    }
    // A communication failure during the recovery means another death: the next abort says
    // who. Any other failure cannot be waited out: the job ends with it.
    if (st.code() != core::StatusCode::kUnavailable &&
        st.code() != core::StatusCode::kDeadlineExceeded) {
      ControlMessage r;
      r.kind = ControlKind::kReady;
      r.epoch = abort.epoch;
      r.digest = 0;
      r.why = fmt::format("rank {} could not recover: {}", world_id_, st.message());
      (void)client_->Send(r);
    }
    auto m = next_abort();
    if (m->kind == ControlKind::kShutdown) return m;
    abort = *m;
  }
}

int Worker::Run() {
  const ElasticJobConfig& job = job_;
  auto transport = comm::MakeAmTransport(job.transport);
  if (!transport.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", world_id_, transport.status().ToString().c_str());
    return 2;
  }
  auto world = comm::AmWorld::Create(std::move(*transport), world_id_, "127.0.0.1", 0);
  if (!world.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", world_id_, world.status().ToString().c_str());
    return 2;
  }
  world_ = *world;
  CoordinatorClientOptions co;
  co.world = world_id_;
  co.transport = job.transport;
  co.address_file = job.AddressFile();
  co.heartbeat_s = job.heartbeat_s;
  co.connect_timeout_s = 30;
  co.coordinator_timeout_s = job.coordinator_timeout_s;
  // The coordinator may not have published its address yet.
  for (int attempt = 0; attempt < 300 && !client_; ++attempt) {
    auto c = CoordinatorClient::Connect(
        co, [this] { return RegisterMessage(); },
        [this](const ControlMessage& m) {
          if (m.kind != ControlKind::kAbort) return;
          for (int d : m.dead)
            world_->MarkDead(d, fmt::format("declared dead at epoch {}", m.epoch));
          world_->FenceEpochsBefore(static_cast<uint64_t>(m.epoch),
                                    fmt::format("epoch {} began", m.epoch));
        });
    if (c.ok()) {
      client_ = std::move(*c);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  if (!client_) {
    std::fprintf(stderr, "rank %d: no coordinator at %s\n", world_id_, co.address_file.c_str());
    return 1;
  }
  log_.Write({{"event", "registered"}, {"address", world_->address()}, {"pid", ::getpid()}});
  auto roster = WaitFor({ControlKind::kRoster}, 120);
  if (!roster.ok())
    return (std::fprintf(stderr, "rank %d: %s\n", world_id_, roster.status().ToString().c_str()),
            1);
  if (roster->kind == ControlKind::kShutdown) return Finish(*roster);
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    epoch_ = roster->epoch;
    complete_step_ = roster->complete_step;
  }
  step_ = roster->complete_step + 1;
  std::vector<int> members;
  for (const auto& [w, a] : roster->addresses) {
    world_->SetAddress(w, a);
    members.push_back(w);
  }
  if (auto st = world_->ConnectMesh(members, 60); !st.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", world_id_, st.ToString().c_str());
    return 1;
  }
  auto comm = comm::AmCommunicator::Create(world_, members, 0);
  if (!comm.ok()) return (std::fprintf(stderr, "%s\n", comm.status().ToString().c_str()), 2);
  comm_ = std::move(*comm);
  comm_->set_op_timeout_s(job.op_timeout_s);
  auto trainer = ElasticTrainer::Create(job.trainer, world_id_);
  if (!trainer.ok()) return (std::fprintf(stderr, "%s\n", trainer.status().ToString().c_str()), 1);
  trainer_ = std::move(*trainer);
  trainer_->set_phase_hook([this](StepPhase p, int64_t s, int64_t k) { FaultPoint(p, s, k); });
  costs_ = GptSlotCosts(DimsOf(job.trainer.model, job.trainer.seq), job.trainer.shape.micro_batch,
                        job.trainer.shape.tp);
  auto plan = InitialPlan(job.trainer.shape, costs_);
  if (!plan.ok()) return (std::fprintf(stderr, "%s\n", plan.status().ToString().c_str()), 1);
  resumed_plan_ = *plan;
  if (auto st = trainer_->InitFresh(*plan); !st.ok()) return 2;
  if (job.resume_step >= 0) {
    // The restart policy: every held slot from the disk checkpoint.
    for (int slot : trainer_->store().Slots()) {
      auto bytes =
          core::ReadInputFile(job.CheckpointFile(job.resume_step, slot, trainer_->tp_rank()));
      if (!bytes.ok() || bytes->size() % sizeof(float) != 0) {
        std::fprintf(stderr, "rank %d: checkpoint of step %lld: %s\n", world_id_,
                     static_cast<long long>(job.resume_step),
                     bytes.ok() ? "not whole floats" : bytes.status().ToString().c_str());
        return 1;
      }
      std::vector<float> packed(bytes->size() / sizeof(float));
      std::memcpy(packed.data(), bytes->data(), bytes->size());
      if (auto st = trainer_->store().Unpack(slot, packed); !st.ok()) return 1;
    }
  }
  trainer_->store().Snapshot(complete_step_);
  if (auto st = trainer_->Install(*plan, *comm_); !st.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", world_id_, st.ToString().c_str());
    return 1;
  }
  log_.Write({{"event", "started"}, {"plan", Hex(plan->digest)}});
  if (job.resume_step >= 0) {
    log_.Write({{"event", "installed"}, {"epoch", epoch_}, {"ok", true}, {"why", ""}});
    log_.Write({{"event", "resumed"},
                {"epoch", epoch_},
                {"step", step_},
                {"spare", false},
                {"plan", Hex(plan->digest)},
                {"from_checkpoint", job.resume_step}});
  }
  while (true) {
    client_->SetStep(step_);
    std::optional<ControlMessage> interrupt;
    if (step_ >= job.steps || !trainer_->computing()) {
      if (step_ >= job.steps && trainer_->computing()) {
        ControlMessage d;
        d.kind = ControlKind::kDone;
        d.epoch = epoch_;
        d.step = step_ - 1;
        d.digest = StateDigest();
        (void)client_->Send(d);
      }
      auto m = WaitFor({}, 1e9);
      if (!m.ok()) return Finish(ShutdownMessage(1, m.status().message()));
      interrupt = *m;
    } else {
      auto report = trainer_->Compute(step_);
      if (!report.ok()) {
        log_.Write({{"event", "step_failed"}, {"step", step_}, {"why", report.status().message()}});
        auto m = WaitFor({}, job.recovery_timeout_s);
        if (!m.ok()) {
          return Finish(
              ShutdownMessage(1, fmt::format("step {} failed ({}) and no abort came: {}", step_,
                                             report.status().message(), m.status().message())));
        }
        interrupt = *m;
      } else {
        FaultPoint(StepPhase::kCommit, step_, -1);
        ControlMessage v;
        v.kind = ControlKind::kVote;
        v.epoch = epoch_;
        v.step = step_;
        v.digest = resumed_plan_.digest;
        (void)client_->Send(v);
        auto m = WaitFor({ControlKind::kCommit}, 1e9);
        if (!m.ok()) return Finish(ShutdownMessage(1, m.status().message()));
        if (m->kind == ControlKind::kCommit && m->step == step_) {
          log_.Write({{"event", "commit"}, {"step", step_}, {"epoch", epoch_}});
          {
            std::lock_guard<std::mutex> lock(state_mu_);
            complete_step_ = std::max(complete_step_, m->complete_step);
          }
          FaultPoint(StepPhase::kOptimizer, step_, -1);
          if (auto st = trainer_->Apply(); !st.ok()) return 2;
          FaultPoint(StepPhase::kSnapshot, step_, -1);
          trainer_->store().Snapshot(step_);
          trainer_->store().PruneSnapshotsBefore(complete_step_);
          if (job.policy == RecoveryPolicy::kRestart) WriteCheckpoint(step_);
          ControlMessage s;
          s.kind = ControlKind::kSnapshot;
          s.epoch = epoch_;
          s.step = step_;
          (void)client_->Send(s);
          core::Json digests = core::Json::array();
          for (const SlotDigest& d : trainer_->Digests()) {
            digests.push_back({d.slot, d.tp_rank, Hex(d.digest)});
          }
          log_.Write({{"event", "step"},
                      {"step", step_},
                      {"epoch", epoch_},
                      {"loss", report->loss},
                      {"attempts", report->attempts},
                      {"digests", digests}});
          ++step_;
          continue;
        }
        interrupt = *m;
      }
    }
    if (interrupt->kind == ControlKind::kShutdown) return Finish(*interrupt);
    if (interrupt->kind == ControlKind::kAbort) {
      auto end = Recover(*interrupt);
      if (end) return Finish(*end);
    }
  }
}

}  // namespace

int RunWorker(const ElasticJobConfig& job, int world_id) {
  // The process ends right after (processes.cc exits without destructors): the worker, its
  // transport and connections are left to the exit. Destroying the world would say goodbye to
  // every peer and wait for answers from peers that are exiting too.
  auto* w = new Worker(job, world_id);
  return w->Run();
}

int RunCoordinator(const ElasticJobConfig& job, bool restarted) {
  EventLog log(job.CoordinatorLog());
  CoordinatorServiceOptions o;
  o.core.world_size = job.trainer.shape.processes();
  o.core.heartbeat_timeout_s = job.heartbeat_timeout_s;
  o.core.registration_timeout_s = std::max(2.0, 3 * job.heartbeat_timeout_s);
  o.core.restarted = restarted;
  o.core.first_epoch = job.first_epoch;
  o.core.start_complete_step = job.resume_step;
  o.transport = job.transport;
  o.log = [&log](const std::string& line) { log.Write({{"event", "decision"}, {"what", line}}); };
  auto c = Coordinator::Start(o);
  if (!c.ok()) {
    std::fprintf(stderr, "coordinator: %s\n", c.status().ToString().c_str());
    return 2;
  }
  log.Write({{"event", "listening"},
             {"address", (*c)->address()},
             {"restarted", restarted},
             {"pid", ::getpid()}});
  if (auto st = core::WriteFileAtomically(job.AddressFile(), (*c)->address() + "\n"); !st.ok()) {
    std::fprintf(stderr, "coordinator: %s\n", st.ToString().c_str());
    return 2;
  }
  return (*c)->Run();
}

}  // namespace tessera::elaswave
