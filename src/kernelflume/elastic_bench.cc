#include "kernelflume/elastic_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "core/child_process.h"
#include "core/rng.h"
#include "core/stats.h"
#include "kernelflume/attention_cluster.h"
#include "kernelflume/generate_service.h"

namespace tessera::kernelflume {

using core::Status;

std::vector<std::vector<int32_t>> BenchPrompts(const models::LlamaConfig& config, int count,
                                               int64_t tokens, uint64_t seed) {
  core::Rng rng(seed);
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(count));
  for (auto& p : out) {
    p.resize(static_cast<size_t>(tokens));
    for (int32_t& t : p) t = static_cast<int32_t>(rng.Below(static_cast<uint64_t>(config.vocab)));
  }
  return out;
}

namespace {

Status CheckBenchOptions(const models::LlamaConfig& c, const ElasticBenchOptions& o) {
  auto positive = [](const char* flag, int64_t v) -> Status {
    if (v >= 1) return Status::Ok();
    return core::InvalidArgument(fmt::format("{}: got {}, must be >= 1", flag, v));
  };
  RETURN_IF_ERROR(positive("--requests", o.requests));
  RETURN_IF_ERROR(positive("--prompt-tokens", o.prompt_tokens));
  RETURN_IF_ERROR(positive("--max-tokens", o.max_tokens));
  RETURN_IF_ERROR(positive("--nodes", o.initial_nodes));
  RETURN_IF_ERROR(positive("--events", o.events));
  RETURN_IF_ERROR(positive("--every-tokens", o.every_tokens));
  if (o.prompt_tokens + o.max_tokens > c.max_context) {
    return core::InvalidArgument(
        fmt::format("--prompt-tokens {} + --max-tokens {} exceed the model's context of {}",
                    o.prompt_tokens, o.max_tokens, c.max_context));
  }
  if (o.initial_nodes + o.events > 64) {
    return core::InvalidArgument(
        fmt::format("--nodes {} + --events {}: at most 64 attention nodes in a run",
                    o.initial_nodes, o.events));
  }
  const int64_t total = o.requests * o.max_tokens;
  if (o.events * o.every_tokens >= total) {
    return core::InvalidArgument(fmt::format(
        "--events {} x --every-tokens {} = {} tokens: must be below the run's {} tokens "
        "(--requests x --max-tokens), so every event happens mid-run",
        o.events, o.every_tokens, o.events * o.every_tokens, total));
  }
  if (o.refill_nice < 0 || o.refill_nice > 19) {
    return core::InvalidArgument(
        fmt::format("--refill-nice: got {}, must be from 0 to 19", o.refill_nice));
  }
  if (o.placebo_instants < 0) {
    return core::InvalidArgument(
        fmt::format("--placebo-instants: got {}, must be >= 0", o.placebo_instants));
  }
  if (!(o.join_delay_s >= 0 && o.join_delay_s <= 60)) {
    return core::InvalidArgument(
        fmt::format("--join-delay-s: got {}, must be from 0 to 60", o.join_delay_s));
  }
  if (o.node_command.empty()) return core::InvalidArgument("node_command: empty");
  return Status::Ok();
}

core::StatusOr<std::unique_ptr<AttentionCluster>> StartBenchCluster(const models::LlamaModel& model,
                                                                    const ElasticBenchOptions& o) {
  AttentionClusterOptions co;
  co.num_nodes = o.initial_nodes;
  co.transport = "ucx";
  co.processes = true;
  co.node_command = o.node_command;
  co.capacity_tokens = o.capacity_tokens;
  co.page_tokens = o.page_tokens;
  co.weight_node.router.reroute_every = o.reroute_every;
  co.weight_node.min_partial_deadline_s = o.min_partial_deadline_s;
  co.weight_node.refill_nice = o.refill_nice;
  return AttentionCluster::Start(AttentionShapeOf(model.config()), model.Fingerprint(), co);
}

// Starts the bench's cluster and runs its requests through `actions`.
core::StatusOr<ElasticDecodeReport> RunBenchDecode(const models::LlamaModel& model,
                                                   const ElasticBenchOptions& o,
                                                   std::vector<ElasticAction> actions,
                                                   BenchCheck& check) {
  RETURN_IF_ERROR(CheckBenchOptions(model.config(), o));
  ASSIGN_OR_RETURN(std::unique_ptr<AttentionCluster> cluster, StartBenchCluster(model, o));
  ElasticDecodeOptions d;
  d.max_tokens = o.max_tokens;
  d.actions = std::move(actions);
  ASSIGN_OR_RETURN(
      ElasticDecodeReport run,
      RunElasticDecode(model, *cluster,
                       BenchPrompts(model.config(), o.requests, o.prompt_tokens, o.seed), d));
  check = BenchCheck{run.max_rel_err, run.mismatched_requests, run.generated_tokens,
                     ElasticVerdict(run)};
  return run;
}

// Gaps between consecutive tokens of every request, in ms.
std::vector<double> TokenGapsMs(const ElasticRequestResult& r) {
  std::vector<double> gaps;
  for (size_t i = 1; i < r.token_times_s.size(); ++i) {
    gaps.push_back(1e3 * (r.token_times_s[i] - r.token_times_s[i - 1]));
  }
  return gaps;
}

// The control run of `bench death` (see the header): no kill, no join.
Status AddPlaceboControl(const models::LlamaModel& model, const ElasticBenchOptions& o,
                         const std::vector<double>& unaffected_ms, DeathBenchReport& rep) {
  ASSIGN_OR_RETURN(ElasticDecodeReport control, RunBenchDecode(model, o, {}, rep.control_check));
  std::vector<std::vector<double>> clocks;
  std::vector<double> gaps;
  for (const ElasticRequestResult& r : control.requests) {
    clocks.push_back(r.token_times_s);
    const std::vector<double> g = TokenGapsMs(r);
    gaps.insert(gaps.end(), g.begin(), g.end());
  }
  const std::vector<double> instants =
      PlaceboInstants(clocks, {}, o.placebo_instants, o.seed ^ 0x91ACEB0ULL);
  rep.placebo_instants = static_cast<int>(instants.size());
  for (double t : instants) {
    for (const std::vector<double>& c : clocks) {
      if (const std::optional<double> g = SpanningGapS(c, t))
        rep.placebo_gap_ms.push_back(1e3 * *g);
    }
  }
  rep.control_token_gap_ms_p50 = core::Median(gaps);
  rep.placebo_gap_ms_p50 = core::Median(rep.placebo_gap_ms);
  rep.placebo_band_ms = MedianNoiseBand(rep.placebo_gap_ms, static_cast<int>(unaffected_ms.size()),
                                        1000, o.seed ^ 0xBA4DULL);
  rep.unaffected_excess_ms = rep.unaffected_gap_ms_p50 - rep.placebo_gap_ms_p50;
  rep.unaffected_within_noise =
      !unaffected_ms.empty() && rep.unaffected_gap_ms_p50 <= rep.placebo_band_ms.p95;
  return Status::Ok();
}

}  // namespace

core::StatusOr<JoinBenchReport> RunJoinBench(const models::LlamaModel& model,
                                             const ElasticBenchOptions& o) {
  std::vector<ElasticAction> joins;
  for (int i = 0; i < o.events; ++i) {
    joins.push_back(ElasticAction{ElasticAction::Kind::kJoin, (i + 1) * o.every_tokens});
  }
  JoinBenchReport rep;
  ASSIGN_OR_RETURN(ElasticDecodeReport run, RunBenchDecode(model, o, joins, rep.check));
  for (const AppliedAction& a : run.actions) {
    JoinSample s;
    s.node = a.node;
    s.start_to_joined_ms = 1e3 * (a.node_times.joined_s - a.start_s);
    if (a.node_times.first_routed_s >= 0) {
      s.joined_to_first_token_ms = 1e3 * (a.node_times.first_routed_s - a.node_times.joined_s);
      s.start_to_first_token_ms = 1e3 * (a.node_times.first_routed_s - a.start_s);
    } else {
      s.joined_to_first_token_ms = s.start_to_first_token_ms = -1;  // never got a tail
    }
    rep.joins.push_back(s);
  }
  std::vector<double> gaps;
  for (const ElasticRequestResult& r : run.requests) {
    const std::vector<double> g = TokenGapsMs(r);
    gaps.insert(gaps.end(), g.begin(), g.end());
  }
  rep.decode_step_ms_p50 = core::Median(gaps);
  rep.decode_step_ms_p99 = core::Percentile(gaps, 99);
  if (!o.instance_command.empty()) {
    for (int i = 0; i < o.instance_starts; ++i) {
      std::vector<std::string> argv = o.instance_command;
      argv.push_back(o.weights_dir);
      const auto t0 = std::chrono::steady_clock::now();
      ASSIGN_OR_RETURN(std::unique_ptr<core::ChildProcess> child, core::ChildProcess::Spawn(argv));
      const int code = child->Wait();
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (code != 0) {
        return core::Internal(fmt::format("model instance start exited with code {}: {}", code,
                                          child->StderrTail(300)));
      }
      rep.instance_start_ms.push_back(ms);
    }
    rep.instance_start_ms_p50 = core::Median(rep.instance_start_ms);
  }
  return rep;
}

core::StatusOr<DeathBenchReport> RunDeathBench(const models::LlamaModel& model,
                                               const ElasticBenchOptions& o) {
  // Kill the oldest live node, then start a fresh one: ids 0, 1, 2, ... die in turn.
  std::vector<ElasticAction> actions;
  for (int i = 0; i < o.events; ++i) {
    const int64_t at = (i + 1) * o.every_tokens;
    actions.push_back(ElasticAction{ElasticAction::Kind::kKill, at, i});
    ElasticAction join{ElasticAction::Kind::kJoin, at};
    join.delay_s = o.join_delay_s;
    actions.push_back(join);
  }
  DeathBenchReport rep;
  ASSIGN_OR_RETURN(ElasticDecodeReport run, RunBenchDecode(model, o, actions, rep.check));
  for (const ElasticEvent& e : run.events) rep.refills += e.kind == "refill";
  std::vector<double> stalls, spanning, all_gaps, detects;
  std::vector<std::vector<double>> clocks;
  for (const ElasticRequestResult& r : run.requests) clocks.push_back(r.token_times_s);
  std::vector<KillInstant> instants;
  for (const AppliedAction& a : run.actions) {
    if (a.action.kind != ElasticAction::Kind::kKill) continue;
    KillInstant k{a.start_s, {}};
    for (uint64_t id : a.affected_requests) k.affected.push_back(static_cast<size_t>(id - 1));
    instants.push_back(std::move(k));
  }
  const std::vector<UnaffectedGaps> unaffected = UnaffectedSpanningGaps(clocks, instants);
  size_t kill = 0;
  for (const AppliedAction& a : run.actions) {
    if (a.action.kind != ElasticAction::Kind::kKill) continue;
    DeathSample s;
    s.node = a.node;
    for (const ElasticEvent& e : run.events) {
      if (e.kind == "lost" && e.node_id == a.node) s.detect_ms = 1e3 * (e.t_s - a.start_s);
    }
    if (s.detect_ms >= 0) detects.push_back(s.detect_ms);
    for (uint64_t id : a.affected_requests) {
      const std::vector<double>& t = clocks[static_cast<size_t>(id - 1)];
      auto next = std::upper_bound(t.begin(), t.end(), a.start_s);
      if (next == t.end()) continue;  // finished before the kill
      ++s.affected;
      s.stall_ms.push_back(1e3 * (*next - a.start_s));
    }
    for (double g : unaffected[kill].gaps_s) s.spanning_gap_ms.push_back(1e3 * g);
    s.unaffected = static_cast<int>(s.spanning_gap_ms.size());
    s.overlapped = unaffected[kill].overlapped;
    ++kill;
    stalls.insert(stalls.end(), s.stall_ms.begin(), s.stall_ms.end());
    spanning.insert(spanning.end(), s.spanning_gap_ms.begin(), s.spanning_gap_ms.end());
    rep.kills.push_back(std::move(s));
  }
  for (size_t r = 0; r < run.requests.size(); ++r) {
    const std::vector<double> g = TokenGapsMs(run.requests[r]);
    all_gaps.insert(all_gaps.end(), g.begin(), g.end());
  }
  rep.stall_ms_p50 = core::Median(stalls);
  rep.stall_ms_max = stalls.empty() ? 0 : *std::max_element(stalls.begin(), stalls.end());
  rep.unaffected_gap_ms_p50 = core::Median(spanning);
  rep.detect_ms_p50 = core::Median(detects);
  rep.detect_ms_max = detects.empty() ? 0 : *std::max_element(detects.begin(), detects.end());
  rep.token_gap_ms_p50 = core::Median(all_gaps);
  if (o.placebo_instants > 0) RETURN_IF_ERROR(AddPlaceboControl(model, o, spanning, rep));
  return rep;
}

}  // namespace tessera::kernelflume
