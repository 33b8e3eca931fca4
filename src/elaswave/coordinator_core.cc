#include "elaswave/coordinator_core.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace tessera::elaswave {

void CoordinatorOutput::Append(CoordinatorOutput other) {
  for (auto& s : other.sends) sends.push_back(std::move(s));
  kill_pids.insert(kill_pids.end(), other.kill_pids.begin(), other.kill_pids.end());
  for (auto& l : other.log) log.push_back(std::move(l));
}

std::string CoordinatorPhaseName(CoordinatorCore::Phase p) {
  switch (p) {
    case CoordinatorCore::Phase::kRegistering:
      return "registering";
    case CoordinatorCore::Phase::kRunning:
      return "running";
    case CoordinatorCore::Phase::kRecovering:
      return "recovering";
    case CoordinatorCore::Phase::kFinished:
      return "finished";
  }
  return "?";
}

CoordinatorCore::CoordinatorCore(const CoordinatorOptions& options)
    : options_(options), workers_(static_cast<size_t>(std::max(options.world_size, 0))) {}

std::vector<int> CoordinatorCore::LiveComputing() const {
  std::vector<int> out;
  for (int w = 0; w < options_.world_size; ++w) {
    if (Live(w) && !workers_[w].spare) out.push_back(w);
  }
  return out;
}

CoordinatorOutput CoordinatorCore::Broadcast(ControlMessage m) const {
  CoordinatorOutput out;
  m.epoch = epoch_;
  out.sends.push_back({-1, std::move(m)});
  return out;
}

CoordinatorOutput CoordinatorCore::Shutdown(int code, const std::string& why) {
  phase_ = Phase::kFinished;
  exit_code_ = code;
  ControlMessage m;
  m.kind = ControlKind::kShutdown;
  m.code = code;
  m.why = why;
  CoordinatorOutput out = Broadcast(m);
  out.log.push_back(fmt::format("shutdown (exit {}): {}", code, why));
  return out;
}

CoordinatorOutput CoordinatorCore::OnMessage(const ControlMessage& m, double now_s) {
  CoordinatorOutput out;
  if (m.world < 0 || m.world >= options_.world_size || phase_ == Phase::kFinished) return out;
  Worker& w = workers_[m.world];
  if (m.kind == ControlKind::kRegister) return Register(m, now_s);
  if (!w.registered || dead_.count(m.world)) return out;  // fenced: a dead rank stays dead
  w.last_heartbeat_s = now_s;
  switch (m.kind) {
    case ControlKind::kHeartbeat:
      return out;
    case ControlKind::kLost:
      if (m.peer >= 0 && m.peer < options_.world_size && !dead_.count(m.peer)) {
        return Declare({m.peer}, fmt::format("rank {} lost its connection: {}", m.world, m.why),
                       /*fence=*/true);
      }
      return out;
    default:
      break;
  }
  if (m.epoch < epoch_) {
    ++stale_dropped_;
    return out;
  }
  switch (m.kind) {
    case ControlKind::kReady:
      w.ready_epoch = m.epoch;
      w.ready_digest = m.digest;
      w.spare = m.spare;
      if (m.digest == 0) return Shutdown(1, m.why.empty() ? "unrecoverable" : m.why);
      return MaybeResume();
    case ControlKind::kVote:
      w.voted_step = m.step;
      w.vote_digest = m.digest;
      return MaybeCommit();
    case ControlKind::kSnapshot:
      w.snapshot_step = m.step;
      return MaybeComplete();
    case ControlKind::kDone:
      w.done = true;
      w.done_digest = m.digest;
      return MaybeFinish();
    default:
      return out;
  }
}

CoordinatorOutput CoordinatorCore::Register(const ControlMessage& m, double now_s) {
  CoordinatorOutput out;
  if (dead_.count(m.world)) {
    out.log.push_back(
        fmt::format("rank {} registered after being declared dead: ignored", m.world));
    return out;
  }
  Worker& w = workers_[m.world];
  w.registered = true;
  w.address = m.address;
  w.pid = m.pid;
  w.last_heartbeat_s = now_s;
  if (first_registration_s_ < 0) first_registration_s_ = now_s;
  reported_epoch_ = std::max(reported_epoch_, m.epoch);
  reported_complete_ = std::max(reported_complete_, m.complete_step);
  reported_dead_.insert(m.dead.begin(), m.dead.end());
  if (phase_ != Phase::kRegistering) {
    out.log.push_back(fmt::format("rank {} registered again at epoch {}", m.world, epoch_));
    return out;
  }
  return MaybeStart(now_s, /*window_closed=*/false);
}

CoordinatorOutput CoordinatorCore::MaybeStart(double now_s, bool window_closed) {
  CoordinatorOutput out;
  std::vector<int> missing;
  for (int w = 0; w < options_.world_size; ++w) {
    if (!workers_[w].registered && !reported_dead_.count(w)) missing.push_back(w);
  }
  if (!options_.restarted) {
    if (!missing.empty()) return out;
    phase_ = Phase::kRunning;
    epoch_ = options_.first_epoch;
    complete_step_ = options_.start_complete_step;
    committed_step_ = complete_step_;
    ControlMessage r;
    r.kind = ControlKind::kRoster;
    r.complete_step = complete_step_;
    for (int w = 0; w < options_.world_size; ++w) r.addresses[w] = workers_[w].address;
    out = Broadcast(r);
    out.log.push_back(fmt::format("all {} workers registered: epoch {}, start at step {}",
                                  options_.world_size, epoch_, complete_step_ + 1));
    return out;
  }
  if (!missing.empty() && !window_closed) return out;
  (void)now_s;
  // A restarted coordinator: everyone redoes from the newest step all of them saved.
  phase_ = Phase::kRunning;
  epoch_ = reported_epoch_;
  complete_step_ = reported_complete_;
  committed_step_ = complete_step_;
  std::set<int> gone(reported_dead_.begin(), reported_dead_.end());
  gone.insert(missing.begin(), missing.end());
  std::set<int> newly;
  for (int w : gone) {
    if (!dead_.count(w)) newly.insert(w);
  }
  out.log.push_back(fmt::format(
      "restarted coordinator: {} workers re-registered, newest epoch {}, complete step {}",
      options_.world_size - static_cast<int>(gone.size()), reported_epoch_, complete_step_));
  out.Append(Declare(newly,
                     missing.empty() ? "coordinator restarted"
                                     : fmt::format("not re-registered within {} s",
                                                   options_.registration_timeout_s),
                     /*fence=*/!missing.empty()));
  return out;
}

CoordinatorOutput CoordinatorCore::Declare(const std::set<int>& newly_dead, const std::string& why,
                                           bool fence) {
  CoordinatorOutput out;
  for (int w : newly_dead) {
    dead_.insert(w);
    if (fence && workers_[w].pid > 0) out.kill_pids.push_back(workers_[w].pid);
  }
  ++epoch_;
  phase_ = Phase::kRecovering;
  for (Worker& w : workers_) w.spare = false;  // every worker says again in its ready
  out.log.push_back(fmt::format("epoch {}: rank(s) {} dead ({}); recover from step {}", epoch_,
                                fmt::join(newly_dead, ", "), why, complete_step_ + 1));
  ControlMessage a;
  a.kind = ControlKind::kAbort;
  a.dead = dead_;
  a.complete_step = complete_step_;
  out.Append(Broadcast(a));
  if (LiveComputing().empty()) out.Append(Shutdown(1, "unrecoverable: every worker is dead"));
  return out;
}

CoordinatorOutput CoordinatorCore::MaybeResume() {
  CoordinatorOutput out;
  if (phase_ != Phase::kRecovering) return out;
  uint64_t digest = 0;
  for (int w = 0; w < options_.world_size; ++w) {
    if (!Live(w)) continue;
    if (workers_[w].ready_epoch != epoch_) return out;
    if (digest != 0 && workers_[w].ready_digest != digest) {
      return Shutdown(1, fmt::format("plans differ at epoch {}: rank {} has {:016x}, others "
                                     "{:016x}",
                                     epoch_, w, workers_[w].ready_digest, digest));
    }
    digest = workers_[w].ready_digest;
  }
  phase_ = Phase::kRunning;
  ControlMessage r;
  r.kind = ControlKind::kResume;
  r.step = complete_step_ + 1;
  r.complete_step = complete_step_;
  r.digest = digest;
  out = Broadcast(r);
  out.log.push_back(
      fmt::format("epoch {}: every live worker ready (plan {:016x}); resume at step {}", epoch_,
                  digest, complete_step_ + 1));
  // Votes and snapshots from before the abort do not count.
  for (Worker& w : workers_) {
    w.voted_step = std::min(w.voted_step, complete_step_);
    w.snapshot_step = std::min(w.snapshot_step, complete_step_);
  }
  committed_step_ = std::min(committed_step_, complete_step_);
  return out;
}

CoordinatorOutput CoordinatorCore::MaybeCommit() {
  CoordinatorOutput out;
  if (phase_ != Phase::kRunning) return out;
  const int64_t step = committed_step_ + 1;
  const std::vector<int> live = LiveComputing();
  uint64_t digest = 0;
  for (int w : live) {
    if (workers_[w].voted_step != step) return out;
    if (digest != 0 && workers_[w].vote_digest != digest) {
      return Shutdown(1, fmt::format("commit votes of step {} differ: rank {} voted plan {:016x}, "
                                     "others {:016x}",
                                     step, w, workers_[w].vote_digest, digest));
    }
    digest = workers_[w].vote_digest;
  }
  committed_step_ = step;
  ControlMessage c;
  c.kind = ControlKind::kCommit;
  c.step = step;
  c.complete_step = complete_step_;
  return Broadcast(c);
}

CoordinatorOutput CoordinatorCore::MaybeComplete() {
  for (int w : LiveComputing()) {
    if (workers_[w].snapshot_step <= complete_step_) return {};
  }
  int64_t step = committed_step_;
  for (int w : LiveComputing()) step = std::min(step, workers_[w].snapshot_step);
  complete_step_ = std::max(complete_step_, step);
  return {};
}

CoordinatorOutput CoordinatorCore::MaybeFinish() {
  const std::vector<int> live = LiveComputing();
  for (int w : live) {
    if (!workers_[w].done) return {};
  }
  return Shutdown(0, fmt::format("finished: {} workers done at epoch {}", live.size(), epoch_));
}

CoordinatorOutput CoordinatorCore::OnLost(int world, const std::string& why, double now_s) {
  (void)now_s;
  if (world < 0 || world >= options_.world_size || dead_.count(world) ||
      phase_ == Phase::kFinished) {
    return {};
  }
  if (phase_ == Phase::kRegistering && !options_.restarted) {
    return Shutdown(1, fmt::format("rank {} died before the job started: {}", world, why));
  }
  return Declare({world}, why, /*fence=*/false);
}

CoordinatorOutput CoordinatorCore::OnTick(double now_s) {
  if (phase_ == Phase::kFinished) return {};
  if (phase_ == Phase::kRegistering) {
    if (options_.restarted && first_registration_s_ >= 0 &&
        now_s - first_registration_s_ >= options_.registration_timeout_s) {
      return MaybeStart(now_s, /*window_closed=*/true);
    }
    if (!options_.restarted && first_registration_s_ >= 0 &&
        now_s - first_registration_s_ >= options_.start_timeout_s) {
      std::vector<int> missing;
      for (int w = 0; w < options_.world_size; ++w) {
        if (!workers_[w].registered) missing.push_back(w);
      }
      return Shutdown(1, fmt::format("rank(s) {} did not register within {} s of the first",
                                     fmt::join(missing, ", "), options_.start_timeout_s));
    }
    return {};
  }
  std::set<int> silent;
  double worst = 0;
  for (int w = 0; w < options_.world_size; ++w) {
    if (!Live(w)) continue;
    const double quiet = now_s - workers_[w].last_heartbeat_s;
    if (quiet > options_.heartbeat_timeout_s) {
      silent.insert(w);
      worst = std::max(worst, quiet);
    }
  }
  if (silent.empty()) return {};
  return Declare(silent, fmt::format("no heartbeat for {:.2f} s", worst), /*fence=*/true);
}

}  // namespace tessera::elaswave
