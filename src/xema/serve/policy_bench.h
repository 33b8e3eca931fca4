// The serving sweep of Xema part 2: the same open-loop arrivals served under each memory policy
// (memory_policy.h) at each device budget and arrival rate, SLO attainment read at each SLO
// scale, and xema compared with the best of the other policies at every point.
//
// Procedure:
//   1. Reference: an in-process server with policy none and an ample budget
//      (reference_budget_bytes) serves each template alone (the loadgen's solo runs); the
//      last solo latency of template t is its isolated latency iso(t). Every policy's SLO for
//      t is slo_scale x iso(t): one yardstick for all (a policy's own slow solo latency does
//      not loosen its SLO).
//   2. For each policy and budget: a fresh in-process server (devices, queue); for each rate a
//      loadgen run (RunLoadgen, same seed at every point: the same arrivals and templates),
//      then AttainmentAt at every SLO scale. Planning (static layouts, mitigation plans)
//      happens in the loadgen's solo runs, before the measured arrivals.
//   3. Per (budget, rate, slo_scale): best baseline = the most attainment among the policies
//      other than xema; xema_minus_best (points of attainment) and ratio = xema / best
//      (infinite when best is 0 and xema is not; 1 when both are 0). Summary: the number of
//      points where xema >= best - 2 points, and min / median / max of the finite ratios.
//
// Errors: InvalidArgument naming the option (no policies, no budgets, a budget above what this
// host may allocate, rates or scales not positive, a bad mix); a server that cannot start or a
// loadgen failure passes out with the point named.
// Progress: progress(done, total, label) after each loadgen run.
// Thread-safety: reentrant; it starts servers on free loopback ports.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "xema/serve/load_mix.h"
#include "xema/serve/loadgen.h"
#include "xema/serve/memory_policy.h"

namespace tessera::xema {

struct PolicyBenchOptions {
  std::vector<MemoryPolicy> policies;
  std::vector<int64_t> budgets_bytes;
  std::vector<double> rates_rps;
  std::vector<double> slo_scales = {2, 5, 10};
  std::vector<LoadTemplate> mix;
  double duration_s = 20;
  uint64_t seed = 1;
  int devices = 1;
  int queue_capacity = 16;
  int64_t reference_budget_bytes = int64_t{1} << 30;
  // The host link of the offloading policies (ServerOptions); time_scale 0: measured once.
  double host_gbps = kH100Pcie5HostGbps;
  double time_scale = 0;
  std::function<void(int done, int total, const std::string& label)> progress;
};

struct PolicyBenchPoint {
  MemoryPolicy policy = MemoryPolicy::kNone;
  int64_t budget_bytes = 0;
  double rate_rps = 0;
  double slo_scale = 0;
  double attainment = 0;
  int64_t planned = 0, completed = 0, rejected_507 = 0, other_errors = 0;
  double latency_p50_s = 0, latency_p99_s = 0;
  std::string refused;  // why the load generator stopped (no template served alone), or ""
};

struct PolicyBenchComparison {
  int64_t budget_bytes = 0;
  double rate_rps = 0, slo_scale = 0;
  double xema = 0;
  std::string best_baseline;  // the policy name
  double best = 0;
  double xema_minus_best = 0;  // attainment points (fractions: 0.02 = 2 points)
  double ratio = 0;            // xema / best, see the file comment
};

struct PolicyBenchReport {
  std::vector<std::string> labels;  // per mix template
  std::vector<double> isolated_s;   // iso(t)
  std::vector<PolicyBenchPoint> points;
  std::vector<PolicyBenchComparison> comparisons;         // when xema and a baseline were run
  int xema_at_least_best = 0;                             // comparisons with xema >= best - 0.02
  double ratio_min = 0, ratio_median = 0, ratio_max = 0;  // over finite ratios
  int infinite_ratios = 0;
};

core::StatusOr<PolicyBenchReport> RunPolicyBench(const PolicyBenchOptions& options);

// The comparisons and summary of `report` (filled by RunPolicyBench; exposed for tests).
void ComparePolicies(PolicyBenchReport* report);

core::Json ToJson(const PolicyBenchReport& report);

}  // namespace tessera::xema
