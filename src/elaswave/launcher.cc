#include "elaswave/launcher.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "core/child_process.h"
#include "core/fnv64.h"
#include "core/output_file.h"
#include "core/trace.h"
#include "elaswave/worker.h"

namespace tessera::elaswave {
namespace {

// New complete lines of a growing file, parsed as JSON (a torn last line waits for the rest).
class LogTail {
 public:
  explicit LogTail(std::string path) : path_(std::move(path)) {}
  std::vector<core::Json> Poll() {
    std::vector<core::Json> out;
    std::ifstream in(path_, std::ios::binary);
    if (!in) return out;
    in.seekg(static_cast<std::streamoff>(offset_));
    std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t start = 0;
    for (size_t nl = chunk.find('\n'); nl != std::string::npos; nl = chunk.find('\n', start)) {
      const auto j = core::Json::parse(chunk.substr(start, nl - start), nullptr, false);
      if (!j.is_discarded()) out.push_back(j);
      start = nl + 1;
    }
    offset_ += start;
    return out;
  }

 private:
  std::string path_;
  size_t offset_ = 0;
};

uint64_t ParseHex(const core::Json& j) { return std::stoull(j.get<std::string>(), nullptr, 16); }

std::vector<std::string> Argv(const std::string& exe, const std::string& job_file,
                              const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {exe, "elaswave"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("--job");
  argv.push_back(job_file);
  return argv;
}

// The newest step whose checkpoint holds every (slot, tp rank); -1 when none does.
int64_t LatestCheckpoint(const ElasticJobConfig& job) {
  std::error_code ec;
  for (int64_t step = job.steps - 1; step >= 0; --step) {
    bool complete = true;
    for (int slot = 0; slot < job.trainer.shape.num_slots() && complete; ++slot) {
      for (int r = 0; r < job.trainer.shape.tp && complete; ++r) {
        complete = std::filesystem::exists(job.CheckpointFile(step, slot, r), ec);
      }
    }
    if (complete) return step;
  }
  return -1;
}

}  // namespace

core::Json JobResult::ToJson() const {
  core::Json j;
  j["exit_code"] = exit_code;
  j["failure"] = failure;
  j["wall_s"] = wall_s;
  core::Json steps_j = core::Json::array();
  for (const StepSummary& s : steps) {
    steps_j.push_back({{"step", s.step},
                       {"loss", s.loss},
                       {"digest", fmt::format("{:016x}", s.digest)},
                       {"slots", s.slots},
                       {"holders_agree", s.holders_agree}});
  }
  j["steps"] = steps_j;
  core::Json faults_j = core::Json::array();
  for (const FaultRecord& f : faults) {
    faults_j.push_back({{"index", f.index}, {"what", f.what}, {"delivered", f.delivered_s >= 0}});
  }
  j["faults"] = faults_j;
  core::Json rec = core::Json::array();
  for (const RecoveryRecord& r : recoveries) {
    rec.push_back(
        {{"epoch", r.epoch},
         {"dead", r.dead},
         {"redo_step", r.redo_step},
         {"detect_s", r.AfterJson(r.detect_s)},
         {"installed_s", r.AfterJson(r.installed_s)},
         {"mttr_resume_s", r.AfterJson(r.resumed_s)},
         {"mttr_commit_s", r.AfterJson(r.committed_s)},
         {"post_change_step_s",
          r.post_change_step_s >= 0 ? core::Json(r.post_change_step_s) : core::Json(nullptr)}});
  }
  j["recoveries"] = rec;
  return j;
}

core::Status CheckLaunchable(const ElasticJobConfig& job) {
  RETURN_IF_ERROR(ValidateJobShape(job.trainer.shape));
  for (size_t i = 0; i < job.faults.size(); ++i) {
    if (job.faults[i].action == FaultAction::kJoin) {
      return core::InvalidArgument(
          fmt::format("faults: event {} ({}): join is not supported yet; kill, stop and slow are",
                      i, job.faults[i].Describe()));
    }
  }
  return core::Status::Ok();
}

core::StatusOr<JobResult> LaunchElasticJob(const LaunchOptions& o) {
  const ElasticJobConfig& job = o.job;
  RETURN_IF_ERROR(CheckLaunchable(job));
  if (job.run_dir.empty()) return core::InvalidArgument("run: no run directory");
  std::error_code ec;
  std::filesystem::create_directories(job.run_dir, ec);
  if (ec) {
    return core::InvalidArgument(fmt::format("run directory '{}': {}", job.run_dir, ec.message()));
  }
  // Files of an earlier run in the same folder would read as this run's (a stale fault mark
  // fires at once): remove what a run writes, and nothing else.
  for (const auto& entry : std::filesystem::directory_iterator(job.run_dir, ec)) {
    const std::string name = entry.path().filename().string();
    const bool ours = name == "job.json" || name.rfind("coordinator.", 0) == 0 ||
                      name.rfind("worker-", 0) == 0 || name.rfind("fault-", 0) == 0 ||
                      name.rfind("spill-", 0) == 0;
    if (ours && entry.is_regular_file()) std::filesystem::remove(entry.path(), ec);
    if (name == "ckpt" && entry.is_directory()) std::filesystem::remove_all(entry.path(), ec);
  }
  const std::string job_file = job.run_dir + "/job.json";
  RETURN_IF_ERROR(core::WriteJsonFile(job_file, JobToJson(job)));
  std::filesystem::remove(job.AddressFile(), ec);
  const auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  const double start_s = MonotonicSeconds();
  ASSIGN_OR_RETURN(auto coordinator,
                   core::ChildProcess::Spawn(Argv(o.self_exe, job_file, {"coordinator"})));
  const int n = job.trainer.shape.processes();
  std::vector<std::unique_ptr<core::ChildProcess>> workers;
  for (int w = 0; w < n; ++w) {
    ASSIGN_OR_RETURN(auto child,
                     core::ChildProcess::Spawn(
                         Argv(o.self_exe, job_file, {"worker", "--rank", std::to_string(w)})));
    workers.push_back(std::move(child));
  }
  say(fmt::format("started the coordinator and {} workers (dp {} x pp {} x tp {}) on this machine",
                  n, job.trainer.shape.dp, job.trainer.shape.pp, job.trainer.shape.tp));
  JobResult result;
  for (size_t i = 0; i < job.faults.size(); ++i)
    result.faults.push_back({i, job.faults[i].Describe(), -1});
  std::vector<LogTail> tails;
  for (int w = 0; w < n; ++w) tails.emplace_back(job.WorkerLog(w));
  LogTail coordinator_tail(job.CoordinatorLog());
  std::vector<std::vector<core::Json>> events(static_cast<size_t>(n));
  std::vector<core::Json> coordinator_events;
  std::set<int64_t> committed_steps;
  bool coordinator_done = false;
  int coordinator_code = -1;
  std::vector<bool> exited(static_cast<size_t>(n), false);
  double workers_done_s = -1;
  double last_log_read_s = -1;
  bool restart_now = false;
  int64_t incarnation_epoch = 0;  // the restart policy: epochs before it belong to earlier ones
  std::set<int64_t> superseded;   // aborts of a dying incarnation after the fault's
  std::string worker_failure;
  double worker_failed_s = -1;
  const auto deliver = [&](size_t i) {
    const FaultEvent& e = job.faults[i];
    const int sig = e.action == FaultAction::kKill ? SIGKILL : SIGSTOP;
    if (e.target_coordinator) {
      coordinator->Signal(sig);
    } else if (e.action == FaultAction::kKill || e.action == FaultAction::kStop) {
      workers[static_cast<size_t>(e.target_rank)]->Signal(sig);
    }
    result.faults[i].delivered_s = MonotonicSeconds();
    say(fmt::format("fault {}: {} (delivered at {:.3f} s)", i, e.Describe(),
                    result.faults[i].delivered_s - start_s));
  };
  while (true) {
    const double now = MonotonicSeconds();
    if (now - start_s > o.job_timeout_s) {
      for (auto& w : workers) w->Signal(SIGKILL);
      coordinator->Signal(SIGKILL);
      result.exit_code = 1;
      result.failure = fmt::format("the job did not end within {} s", o.job_timeout_s);
      break;
    }
    // Faults: marks left by workers at their fault points, times, coordinator steps.
    for (size_t i = 0; i < job.faults.size(); ++i) {
      if (result.faults[i].delivered_s >= 0) continue;
      const FaultEvent& e = job.faults[i];
      bool due = false;
      if (e.at_time) {
        due = now - start_s >= e.time_s;
      } else if (e.target_coordinator) {
        due = committed_steps.count(e.step) > 0;
      } else if (e.action != FaultAction::kSlow) {
        due = std::filesystem::exists(job.FaultMark(i), ec);
      }
      if (due) deliver(i);
    }
    // The logs every 25 ms (the fault marks above every 2 ms: a signal must land where the
    // file says, while reading eight logs 500 times a second would take CPU from the job).
    const bool read_logs = now - last_log_read_s >= 0.025;
    if (read_logs) last_log_read_s = now;
    for (int w = 0; w < n && read_logs; ++w) {
      for (core::Json& j : tails[static_cast<size_t>(w)].Poll()) {
        const std::string ev = j.value("event", "");
        if (ev == "commit") committed_steps.insert(j.value("step", int64_t{-1}));
        if (ev == "slow") {  // a slow-down is applied by the worker itself
          const size_t i = j.value("fault", size_t{0});
          if (i < result.faults.size() && result.faults[i].delivered_s < 0) {
            result.faults[i].delivered_s = j.value("t", 0.0);
            say(fmt::format("fault {}: {} (applied by rank {})", i, result.faults[i].what, w));
          }
        }
        if (ev == "step" && w == 0) {
          say(fmt::format("step {} loss {:.6f}", j.value("step", int64_t{-1}),
                          j.value("loss", 0.0)));
        }
        if (ev == "resumed") {
          say(fmt::format("rank {} resumed at step {} (epoch {}){}", w,
                          j.value("step", int64_t{-1}), j.value("epoch", int64_t{-1}),
                          j.value("spare", false) ? " as a spare" : ""));
        }
        events[static_cast<size_t>(w)].push_back(std::move(j));
      }
    }
    for (core::Json& j : read_logs ? coordinator_tail.Poll() : std::vector<core::Json>{}) {
      if (j.value("event", "") == "decision") say("coordinator: " + j.value("what", ""));
      coordinator_events.push_back(std::move(j));
    }
    if (!coordinator_done) {
      if (auto code = coordinator->Poll()) {
        bool killed_by_us = false;
        for (size_t i = 0; i < job.faults.size(); ++i) {
          if (job.faults[i].target_coordinator && result.faults[i].delivered_s >= 0 &&
              *code == 128 + SIGKILL) {
            killed_by_us = true;
          }
        }
        if (killed_by_us) {
          say("coordinator killed: restarting it");
          std::filesystem::remove(job.AddressFile(), ec);
          ASSIGN_OR_RETURN(coordinator, core::ChildProcess::Spawn(Argv(
                                            o.self_exe, job_file, {"coordinator", "--restarted"})));
        } else {
          coordinator_done = true;
          coordinator_code = *code;
        }
      }
    }
    bool all_exited = true;
    for (int w = 0; w < n; ++w) {
      if (!exited[static_cast<size_t>(w)]) {
        if (auto code = workers[static_cast<size_t>(w)]->Poll()) {
          exited[static_cast<size_t>(w)] = true;
          // A worker that fails on its own (not a signal of a fault or of the coordinator's
          // fence) while the job runs: give the coordinator a moment to end the job with its
          // reason, else end it here with the worker's.
          if (*code == kRestartExitCode && job.policy == RecoveryPolicy::kRestart) {
            restart_now = true;
          } else if (*code != 0 && *code < 128 && !coordinator_done && worker_failure.empty()) {
            worker_failure = fmt::format("rank {} exited with code {}: {}", w, *code,
                                         workers[static_cast<size_t>(w)]->LastStderrLine());
            worker_failed_s = now;
          }
        }
      }
      all_exited = all_exited && exited[static_cast<size_t>(w)];
    }
    if (restart_now) {
      // The restart policy: stop every process of this incarnation and start the whole job
      // again from the newest complete disk checkpoint (a new process in the dead one's place).
      restart_now = false;
      for (auto& w : workers) w->Signal(SIGKILL);
      coordinator->Signal(SIGKILL);
      for (auto& w : workers) (void)w->Wait();
      (void)coordinator->Wait();
      // The first abort of this incarnation is the fault's; the ones after it are the
      // processes of the dying incarnation noticing each other's exits.
      std::set<int64_t> aborts;
      for (int w = 0; w < n; ++w) {
        for (core::Json& j : tails[static_cast<size_t>(w)].Poll()) {
          events[static_cast<size_t>(w)].push_back(std::move(j));
        }
        for (const core::Json& j : events[static_cast<size_t>(w)]) {
          const int64_t e = j.value("epoch", int64_t{0});
          if (j.value("event", "") == "abort" && e >= incarnation_epoch) aborts.insert(e);
        }
      }
      const int64_t epoch = aborts.empty() ? incarnation_epoch : *aborts.begin();
      for (int64_t e : aborts) {
        if (e != epoch) superseded.insert(e);
      }
      incarnation_epoch = (aborts.empty() ? epoch : *aborts.rbegin()) + 1;
      for (core::Json& j : coordinator_tail.Poll()) coordinator_events.push_back(std::move(j));
      ElasticJobConfig next = job;
      next.resume_step = LatestCheckpoint(job);
      next.first_epoch = epoch;
      next.faults_done.clear();
      for (size_t i = 0; i < result.faults.size(); ++i) {
        if (result.faults[i].delivered_s >= 0) next.faults_done.push_back(static_cast<int64_t>(i));
      }
      RETURN_IF_ERROR(core::WriteJsonFile(job_file, JobToJson(next)));
      std::filesystem::remove(job.AddressFile(), ec);
      say(fmt::format("restart: every process again, from the checkpoint of step {} (epoch {})",
                      next.resume_step, epoch));
      ASSIGN_OR_RETURN(coordinator,
                       core::ChildProcess::Spawn(Argv(o.self_exe, job_file, {"coordinator"})));
      for (int w = 0; w < n; ++w) {
        ASSIGN_OR_RETURN(workers[static_cast<size_t>(w)],
                         core::ChildProcess::Spawn(
                             Argv(o.self_exe, job_file, {"worker", "--rank", std::to_string(w)})));
        exited[static_cast<size_t>(w)] = false;
      }
      coordinator_done = false;
      workers_done_s = -1;
      continue;
    }
    if (!worker_failure.empty() && !coordinator_done && now - worker_failed_s > 3) {
      for (auto& w : workers) w->Signal(SIGKILL);
      coordinator->Signal(SIGKILL);
      result.exit_code = 1;
      result.failure = worker_failure;
      say(worker_failure);
      break;
    }
    if (all_exited && coordinator_done) break;
    if (all_exited && !coordinator_done) {
      if (workers_done_s < 0) workers_done_s = now;
      if (now - workers_done_s > 5) coordinator->Signal(SIGKILL);  // it should have exited
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  result.wall_s = MonotonicSeconds() - start_s;
  // Final read of every log.
  for (int w = 0; w < n; ++w) {
    for (core::Json& j : tails[static_cast<size_t>(w)].Poll())
      events[static_cast<size_t>(w)].push_back(std::move(j));
  }
  for (core::Json& j : coordinator_tail.Poll()) coordinator_events.push_back(std::move(j));
  if (result.failure.empty()) {
    result.exit_code = coordinator_code == 0 ? 0 : 1;
    for (const core::Json& j : coordinator_events) {
      const std::string what = j.value("what", "");
      if (what.rfind("shutdown (exit 1)", 0) == 0) result.failure = what;
    }
    if (result.exit_code != 0 && result.failure.empty()) {
      const std::string why = coordinator->LastStderrLine();
      result.failure = fmt::format("the coordinator exited with code {}{}", coordinator_code,
                                   why.empty() ? "" : ": " + why);
    }
  }
  // Steps: the last record of each (worker, step); digests must agree across holders.
  std::map<int64_t, StepSummary> steps;
  std::map<int64_t, std::map<std::pair<int, int>, uint64_t>> slot_digests;
  for (int w = 0; w < n; ++w) {
    std::map<int64_t, const core::Json*> last;
    for (const core::Json& j : events[static_cast<size_t>(w)]) {
      if (j.value("event", "") == "step") last[j.value("step", int64_t{-1})] = &j;
    }
    for (const auto& [step, j] : last) {
      StepSummary& s = steps[step];
      s.step = step;
      s.loss = j->value("loss", 0.0);
      for (const core::Json& d : (*j)["digests"]) {
        const auto key = std::make_pair(d[0].get<int>(), d[1].get<int>());
        const uint64_t digest = ParseHex(d[2]);
        auto [it, inserted] = slot_digests[step].emplace(key, digest);
        if (!inserted && it->second != digest) s.holders_agree = false;
      }
    }
  }
  for (auto& [step, s] : steps) {
    core::Fnv64 h;
    for (const auto& [key, digest] : slot_digests[step]) {
      h.I64(key.first);
      h.I64(key.second);
      h.I64(static_cast<int64_t>(digest));
    }
    s.digest = h.value();
    s.slots = static_cast<int>(slot_digests[step].size());
    result.steps.push_back(s);
  }
  // The trace: each worker's steps and recoveries, the coordinator's decisions.
  core::TraceWriter trace;
  for (int w = 0; w < n; ++w) {
    trace.NameTrack(w, fmt::format("rank {}", w));
    double since = -1;
    double abort_t = -1;
    int64_t abort_epoch = -1;
    for (const core::Json& j : events[static_cast<size_t>(w)]) {
      const std::string ev = j.value("event", "");
      const double t = j.value("t", 0.0) - start_s;
      if (ev == "started" || ev == "resumed") since = t;
      if (ev == "commit" && since >= 0) {
        trace.Span(w, fmt::format("step {}", j.value("step", int64_t{-1})), "step", since,
                   t - since, {{"epoch", j.value("epoch", int64_t{0})}});
        since = t;
      }
      if (ev == "abort") {
        abort_t = t;
        abort_epoch = j.value("epoch", int64_t{0});
        since = -1;
      }
      if (ev == "resumed" && abort_t >= 0) {
        trace.Span(w, fmt::format("recovery (epoch {})", abort_epoch), "recovery", abort_t,
                   t - abort_t, {{"step", j.value("step", int64_t{-1})}});
        abort_t = -1;
      }
      if (ev == "fault_point") {
        trace.Span(w, "fault point", "fault", t, 0.001, {{"fault", j.value("fault", 0)}});
      }
    }
  }
  trace.NameTrack(n, "coordinator");
  for (const core::Json& j : coordinator_events) {
    if (j.value("event", "") != "decision") continue;
    trace.Span(n, j.value("what", "").substr(0, 60), "coordinator", j.value("t", 0.0) - start_s,
               0.001, {{"what", j.value("what", "")}});
  }
  result.trace = trace.ToJson();
  // Recoveries, by epoch.
  std::map<int64_t, RecoveryRecord> rec;
  for (int w = 0; w < n; ++w) {
    for (const core::Json& j : events[static_cast<size_t>(w)]) {
      const std::string ev = j.value("event", "");
      const int64_t epoch = j.value("epoch", int64_t{0});
      const double t = j.value("t", 0.0);
      if (ev == "abort") {
        RecoveryRecord& r = rec[epoch];
        r.epoch = epoch;
        r.dead = j["dead"].get<std::vector<int>>();
        if (r.detect_s < 0 || t < r.detect_s) r.detect_s = t;
      } else if (ev == "installed" && j.value("ok", false) && rec.count(epoch)) {
        rec[epoch].installed_s = std::max(rec[epoch].installed_s, t);
      } else if (ev == "resumed" && rec.count(epoch)) {
        rec[epoch].resumed_s = std::max(rec[epoch].resumed_s, t);
        rec[epoch].redo_step = j.value("step", int64_t{-1});
      }
    }
  }
  for (auto& [epoch, r] : rec) {
    double next_commit = -1;
    for (int w = 0; w < n; ++w) {
      for (const core::Json& j : events[static_cast<size_t>(w)]) {
        if (j.value("event", "") != "commit" || j.value("epoch", int64_t{-1}) != epoch) continue;
        const int64_t step = j.value("step", int64_t{-1});
        const double t = j.value("t", 0.0);
        if (step == r.redo_step && (r.committed_s < 0 || t < r.committed_s)) r.committed_s = t;
        if (step == r.redo_step + 1 && (next_commit < 0 || t < next_commit)) next_commit = t;
      }
    }
    if (r.committed_s >= 0 && next_commit >= 0) r.post_change_step_s = next_commit - r.committed_s;
    // The signal: the latest delivered fault on a rank this epoch declared dead, or on the
    // coordinator, before the first survivor saw the abort.
    for (size_t i = 0; i < job.faults.size(); ++i) {
      const FaultEvent& e = job.faults[i];
      const double at = result.faults[i].delivered_s;
      if (at < 0 || at > r.detect_s) continue;
      const bool relevant = e.target_coordinator ||
                            std::find(r.dead.begin(), r.dead.end(), e.target_rank) != r.dead.end();
      if (relevant && at > r.signal_s) r.signal_s = at;
    }
    if (!superseded.count(epoch)) result.recoveries.push_back(r);
  }
  return result;
}

core::Json ReferenceToJson(const JobResult& r) {
  core::Json steps = core::Json::array();
  for (const StepSummary& s : r.steps) {
    steps.push_back(
        {{"step", s.step}, {"loss", s.loss}, {"digest", fmt::format("{:016x}", s.digest)}});
  }
  return {{"kind", "elaswave-reference"}, {"version", 1}, {"steps", steps}};
}

core::Status CheckAgainstReference(const JobResult& r, const core::Json& reference,
                                   const std::string& source) {
  RETURN_IF_ERROR(core::CheckKindAndVersion(reference, source, "elaswave-reference", 1));
  std::map<int64_t, uint64_t> mine;
  for (const StepSummary& s : r.steps) mine[s.step] = s.digest;
  for (const core::Json& s : reference.value("steps", core::Json::array())) {
    const int64_t step = s.value("step", int64_t{-1});
    const uint64_t want = ParseHex(s["digest"]);
    auto it = mine.find(step);
    if (it == mine.end()) {
      return core::FailedPrecondition(fmt::format(
          "{}: step {} is in the reference but this run has no record of it", source, step));
    }
    if (it->second != want) {
      return core::FailedPrecondition(
          fmt::format("{}: step {}: state digest {:016x}, the reference has {:016x}", source, step,
                      it->second, want));
    }
  }
  return core::Status::Ok();
}

core::StatusOr<LossDeviation> CompareLoss(const JobResult& r, const core::Json& reference,
                                          const std::string& source) {
  RETURN_IF_ERROR(core::CheckKindAndVersion(reference, source, "elaswave-reference", 1));
  std::map<int64_t, double> ref;
  for (const core::Json& s : reference.value("steps", core::Json::array())) {
    ref[s.value("step", int64_t{-1})] = s.value("loss", 0.0);
  }
  LossDeviation d;
  double sum = 0;
  for (const StepSummary& s : r.steps) {
    auto it = ref.find(s.step);
    if (it == ref.end() || it->second == 0) continue;
    const double dev = std::fabs(s.loss - it->second) / std::fabs(it->second);
    sum += dev;
    d.max = std::max(d.max, dev);
    ++d.steps;
  }
  d.mean = d.steps > 0 ? sum / d.steps : 0;
  return d;
}

}  // namespace tessera::elaswave
