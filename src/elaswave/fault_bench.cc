#include "elaswave/fault_bench.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/rng.h"

namespace tessera::elaswave {

FaultEvent RandomFault(const ElasticJobConfig& job, uint64_t seed, FaultAction action) {
  core::Rng rng(seed);
  const JobShape& s = job.trainer.shape;
  constexpr StepPhase kPhases[] = {StepPhase::kForward,   StepPhase::kBackward,
                                   StepPhase::kReduce,    StepPhase::kCommit,
                                   StepPhase::kOptimizer, StepPhase::kSnapshot};
  FaultEvent e;
  e.action = action;
  e.target_rank = static_cast<int>(rng.Below(static_cast<uint64_t>(s.processes())));
  const int64_t span = std::max<int64_t>(job.steps - 2, 1);
  e.step = std::min<int64_t>(1 + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(span))),
                             job.steps - 1);
  e.phase = kPhases[rng.Below(6)];
  if (e.phase == StepPhase::kForward || e.phase == StepPhase::kBackward) {
    // Every pipeline runs M / dp micro-batches at the start: replica d runs [d M/dp, (d+1) M/dp).
    const int64_t per = s.num_micro_batches() / s.dp;
    e.micro_batch = s.ReplicaOf(e.target_rank) * per +
                    static_cast<int64_t>(rng.Below(static_cast<uint64_t>(per)));
  }
  return e;
}

PhaseStats Stats(std::vector<double> values) {
  PhaseStats p;
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return v < 0; }),
               values.end());
  p.count = static_cast<int>(values.size());
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  p.p50_s = n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  p.max_s = values.back();
  return p;
}

core::Json FaultBenchResult::ToJson() const {
  const auto stats = [](const PhaseStats& p) {
    return core::Json{{"count", p.count}, {"p50_s", p.p50_s}, {"max_s", p.max_s}};
  };
  core::Json runs_j = core::Json::array();
  for (const FaultBenchRun& r : runs) {
    runs_j.push_back({{"fault", r.fault.Describe()},
                      {"finished", r.finished},
                      {"bitwise_equal", r.bitwise_equal},
                      {"note", r.note},
                      {"loss_deviation_mean", r.loss.mean},
                      {"loss_deviation_max", r.loss.max},
                      {"detect_s", r.recovery.AfterJson(r.recovery.detect_s)},
                      {"replanned_s", r.recovery.AfterJson(r.recovery.installed_s)},
                      {"resumed_s", r.recovery.AfterJson(r.recovery.resumed_s)},
                      {"committed_s", r.recovery.AfterJson(r.recovery.committed_s)},
                      {"post_change_step_s", r.recovery.post_change_step_s}});
  }
  return {{"runs", runs_j},
          {"bitwise_equal", bitwise_equal},
          {"mean_loss_deviation", mean_loss_deviation},
          {"max_loss_deviation", max_loss_deviation},
          {"detect", stats(detect)},
          {"replanned", stats(replanned)},
          {"resumed", stats(resumed)},
          {"committed", stats(committed)},
          {"committed_minus_a_step", stats(committed_net)},
          {"reference", reference.ToJson()}};
}

core::StatusOr<FaultBenchResult> RunFaultBench(const FaultBenchOptions& o) {
  const auto say = [&](const std::string& line) {
    if (o.launch.progress) o.launch.progress(line);
  };
  FaultBenchResult result;
  LaunchOptions ref = o.launch;
  ref.job.faults.clear();
  ref.job.run_dir = o.launch.job.run_dir + "/reference";
  ref.progress = nullptr;
  say("reference run (no fault)");
  ASSIGN_OR_RETURN(result.reference, LaunchElasticJob(ref));
  if (result.reference.exit_code != 0) {
    return core::Internal(
        fmt::format("the fault-free reference run failed: {}", result.reference.failure));
  }
  const core::Json reference = ReferenceToJson(result.reference);
  std::vector<double> detect, replanned, resumed, committed, committed_net;
  int finished = 0;
  for (int i = 0; i < o.runs; ++i) {
    LaunchOptions run = o.launch;
    run.progress = nullptr;
    run.job.run_dir = fmt::format("{}/run-{}", o.launch.job.run_dir, i);
    FaultBenchRun r;
    r.fault = RandomFault(o.launch.job, o.seed * 1000003 + static_cast<uint64_t>(i), o.action);
    run.job.faults = {r.fault};
    ASSIGN_OR_RETURN(const JobResult jr, LaunchElasticJob(run));
    r.finished = jr.exit_code == 0;
    const core::Status check = CheckAgainstReference(jr, reference, "reference");
    r.bitwise_equal = r.finished && check.ok();
    r.note = !r.finished ? jr.failure : (check.ok() ? "" : check.message());
    if (!jr.recoveries.empty()) r.recovery = jr.recoveries.front();
    ASSIGN_OR_RETURN(r.loss, CompareLoss(jr, reference, "reference"));
    if (r.finished) {
      result.mean_loss_deviation += r.loss.mean;
      result.max_loss_deviation = std::max(result.max_loss_deviation, r.loss.max);
      ++finished;
    }
    const RecoveryRecord& x = r.recovery;
    if (x.signal_s >= 0) {
      detect.push_back(x.After(x.detect_s));
      replanned.push_back(x.After(x.installed_s));
      resumed.push_back(x.After(x.resumed_s));
      committed.push_back(x.After(x.committed_s));
      if (x.committed_s >= 0 && x.post_change_step_s >= 0) {
        committed_net.push_back(x.After(x.committed_s) - x.post_change_step_s);
      }
    }
    result.bitwise_equal += r.bitwise_equal ? 1 : 0;
    say(fmt::format("run {}/{}: {}: {}{}", i + 1, o.runs, r.fault.Describe(),
                    r.bitwise_equal ? "bitwise equal" : "DIFFERS",
                    x.resumed_s >= 0 && x.signal_s >= 0
                        ? fmt::format(", resumed {:.3f} s, committed {:.3f} s after the signal",
                                      x.After(x.resumed_s), x.After(x.committed_s))
                        : ""));
    result.runs.push_back(r);
  }
  if (finished > 0) result.mean_loss_deviation /= finished;
  result.detect = Stats(detect);
  result.replanned = Stats(replanned);
  result.resumed = Stats(resumed);
  result.committed = Stats(committed);
  result.committed_net = Stats(committed_net);
  return result;
}

}  // namespace tessera::elaswave
