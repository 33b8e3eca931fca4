#include "zellige/engine/attention_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <span>

#include "core/stats.h"
#include "zellige/engine/attention_engine.h"
#include "zellige/engine/engine_check.h"
#include "zellige/engine/run_memory.h"

namespace tessera::zellige::engine {

using core::Json;
using core::StatusOr;

namespace {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// This rank's step times.
StatusOr<std::vector<double>> TimeSteps(comm::Communicator& world, AttentionEngine& engine,
                                        const LocalData& d, int steps, std::vector<float>* o,
                                        std::vector<float>* dq, std::vector<float>* dk,
                                        std::vector<float>* dv) {
  std::vector<double> times;
  for (int step = 0; step < steps; ++step) {
    RETURN_IF_ERROR(world.Barrier());
    const double t0 = NowSeconds();
    ForwardState state;
    RETURN_IF_ERROR(engine.Forward(d.q, d.k, d.v, *o, &state));
    RETURN_IF_ERROR(engine.Backward(state, d.q, d.k, d.v, *o, d.d_o, *dq, *dk, *dv));
    times.push_back(NowSeconds() - t0);
  }
  return times;
}

}  // namespace

double AttentionRankReport::mean_step_time_s() const { return core::Mean(step_time_s); }

double AttentionRankReport::max_step_time_s() const {
  double mx = 0;
  for (double t : step_time_s) mx = std::max(mx, t);
  return mx;
}

StatusOr<AttentionRunReport> RunAttentionSteps(comm::Communicator& world, const zellige::Plan& plan,
                                               const workload::Batch& batch,
                                               const AttentionRunOptions& options) {
  const AttentionRunOptions& a = options;
  if (a.steps < 1) {
    return core::InvalidArgument("steps: got " + std::to_string(a.steps) + ", must be >= 1");
  }
  RETURN_IF_ERROR(CheckRunFitsMemory(
      world, AttentionRunBytesPerRank(plan, batch, int64_t{a.heads} * a.head_dim, a.check)));
  auto engine_or = AttentionEngine::Create(plan, batch, a.heads, a.head_dim, &world);
  if (!engine_or.ok()) return engine_or.status().WithPrefix(a.plan_source);
  AttentionEngine& engine = **engine_or;
  const LocalData d = MakeLocalData(engine, a.seed);
  const size_t elems = d.q.size();
  std::vector<float> o(elems), dq(elems), dk(elems), dv(elems);
  ASSIGN_OR_RETURN(std::vector<double> times,
                   TimeSteps(world, engine, d, a.steps, &o, &dq, &dk, &dv));
  ErrorStats err;
  if (a.check) {
    ASSIGN_OR_RETURN(err, CompareWithReference(engine, batch, a.seed, o, dq, dk, dv));
  }
  const int n = world.size();
  std::vector<double> all_times(static_cast<size_t>(a.steps) * n);
  RETURN_IF_ERROR(world.AllGather(std::span<const double>(times), std::span(all_times)));
  ASSIGN_OR_RETURN(auto tokens, comm::AllGatherValue<int64_t>(world, engine.local_tokens()));
  ASSIGN_OR_RETURN(auto peak, comm::AllGatherValue<int64_t>(world, engine.memory().peak_bytes()));
  ASSIGN_OR_RETURN(auto abs_err, comm::AllGatherValue<double>(world, err.max_abs));
  ASSIGN_OR_RETURN(auto rel_err, comm::AllGatherValue<double>(world, err.max_rel));

  AttentionRunReport report;
  report.options = options;
  report.num_ranks = n;
  for (int r = 0; r < n; ++r) {
    AttentionRankReport rr;
    rr.rank = r;
    rr.local_tokens = tokens[r];
    rr.step_time_s.assign(all_times.begin() + r * a.steps, all_times.begin() + (r + 1) * a.steps);
    rr.peak_bytes = peak[r];
    rr.check_max_abs = abs_err[r];
    rr.check_max_rel = rel_err[r];
    report.max_abs_err = std::max(report.max_abs_err, abs_err[r]);
    report.max_rel_err =
        std::isnan(rel_err[r]) ? INFINITY : std::max(report.max_rel_err, rel_err[r]);
    report.ranks.push_back(std::move(rr));
  }
  if (a.check) {
    report.check_pass = report.max_rel_err <= kAttentionCheckTolerance;
    if (!report.check_pass) {
      report.failures.push_back("check failed: max rel err " + std::to_string(report.max_rel_err) +
                                " > 1e-5");
    }
  }
  return report;
}

Json ToJson(const AttentionRunReport& r) {
  Json ranks = Json::array();
  for (const AttentionRankReport& rr : r.ranks) {
    ranks.push_back({{"rank", rr.rank},
                     {"local_tokens", rr.local_tokens},
                     {"step_time_s", rr.step_time_s},
                     {"peak_bytes", rr.peak_bytes}});
  }
  Json out = {{"label", "measured"},      {"num_ranks", r.num_ranks},
              {"heads", r.options.heads}, {"head_dim", r.options.head_dim},
              {"steps", r.options.steps}, {"ranks", ranks},
              {"pass", r.pass()}};
  if (r.options.check) {
    out["check"] = {{"max_abs_err", r.max_abs_err},
                    {"max_rel_err", r.max_rel_err},
                    {"tolerance_rel", kAttentionCheckTolerance},
                    {"pass", r.check_pass}};
  }
  return out;
}

}  // namespace tessera::zellige::engine
