#include "compass/engine/collective_bench.h"

#include <algorithm>
#include <cmath>

#include "comm/futex.h"
#include "compass/engine/link_runtime.h"
#include "compass/engine/run_timing.h"
#include "core/stats.h"
#include "core/table.h"
#include "hw/ring_order.h"

namespace tessera::compass {

namespace {

using comm::LinkAlgo;
using core::Median;
using core::Status;

// The value rank r contributes at element i: exact in bf16, and sums of up to 2^12 ranks
// are exact in fp32 (the accumulator), so a ReduceScatter result is the bf16 rounding of the
// exact sum.
float Value(int rank, int64_t i, int rep) {
  return static_cast<float>((rank * 131 + i * 7 + rep * 17) % 512) / 8.0f - 32.0f;
}

struct Run {
  CollectiveKind kind;
  int64_t bytes;
  LinkAlgo algo;
};

// The largest block's element count (bf16) once the configuration is checked.
core::StatusOr<int64_t> CheckConfig(int n, const hw::Topology& topology,
                                    const CollectiveBenchConfig& config) {
  if (n < 2 || n > topology.num_devices()) {
    return core::InvalidArgument("collective bench: " + std::to_string(n) + " ranks, " +
                                 topology.name() + " has " +
                                 std::to_string(topology.num_devices()) + " devices (need 2.." +
                                 std::to_string(topology.num_devices()) + ")");
  }
  if (config.repeats < 1 || config.block_wire_bytes.empty() || config.algos.empty() ||
      config.kinds.empty()) {
    return core::InvalidArgument("collective bench: nothing to measure");
  }
  int64_t max_count = 0;
  for (int64_t b : config.block_wire_bytes) {
    if (b < 2 || b > (int64_t{1} << 30) || b % 2 != 0) {
      return core::InvalidArgument("collective bench: block of " + std::to_string(b) +
                                   " wire bytes, must be even and in [2, 2^30]");
    }
    max_count = std::max(max_count, b / 2);
  }
  return max_count;
}

// One round's runs: kinds x block sizes x algorithms, in that order.
std::vector<Run> RunsOf(const CollectiveBenchConfig& config) {
  std::vector<Run> runs;
  for (CollectiveKind k : config.kinds) {
    for (int64_t b : config.block_wire_bytes) {
      for (LinkAlgo a : config.algos) runs.push_back({k, b, a});
    }
  }
  return runs;
}

// This rank's result of `run` in round `rep` against the plain reference: the first element
// that differs, as Internal; OK when every element matches.
Status CompareWithReference(const Run& run, int n, int me, int rep,
                            const std::vector<comm::Bf16>& recv) {
  const int64_t c = run.bytes / 2;
  const bool ag = run.kind == CollectiveKind::kAllGather;
  const int64_t out_count = ag ? n * c : c;
  for (int64_t i = 0; i < out_count; ++i) {
    double want;
    if (ag) {
      want = Value(static_cast<int>(i / c), i % c, rep);
    } else {
      double sum = 0;
      for (int r = 0; r < n; ++r) sum += Value(r, me * c + i, rep);
      // fp32 accumulation is exact here; bf16 rounds once at the end.
      want = comm::Bf16ToFloat(comm::FloatToBf16(static_cast<float>(sum)));
    }
    const double got = comm::Bf16ToFloat(recv[i]);
    if (got != want) {
      return core::Internal(std::string(CollectiveKindName(run.kind)) + " " +
                            comm::LinkAlgoName(run.algo) + " block " + std::to_string(run.bytes) +
                            " B: element " + std::to_string(i) + " is " + std::to_string(got) +
                            ", reference " + std::to_string(want));
    }
  }
  return Status::Ok();
}

// Each run's row: the median, min and max over the rounds of `times_s` (round-major) and the
// model's time on the ring it used.
std::vector<CollectiveRow> RowsOf(const hw::Topology& topology, const CollectiveBench& bench,
                                  const std::vector<Run>& runs, int repeats,
                                  const std::vector<double>& times_s) {
  std::vector<CollectiveRow> rows;
  for (size_t ri = 0; ri < runs.size(); ++ri) {
    std::vector<double> per_rep;
    for (int rep = 0; rep < repeats; ++rep) per_rep.push_back(times_s[rep * runs.size() + ri]);
    CollectiveRow row;
    row.kind = runs[ri].kind;
    row.algo = runs[ri].algo;
    row.block_wire_bytes = runs[ri].bytes;
    row.median_s = Median(per_rep);
    row.min_s = *std::min_element(per_rep.begin(), per_rep.end());
    row.max_s = *std::max_element(per_rep.begin(), per_rep.end());
    const std::vector<int>& order =
        runs[ri].algo == LinkAlgo::kRing2 ? bench.ring2_order : bench.ring1_order;
    row.modeled_s = ModelCollective(topology, order, runs[ri].kind, runs[ri].algo,
                                    static_cast<double>(runs[ri].bytes))
                        .total_s;
    row.bound =
        BoundCollective(topology, order, runs[ri].algo, static_cast<double>(runs[ri].bytes));
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

core::StatusOr<CollectiveBench> RunCollectiveBench(comm::Communicator& world,
                                                   const hw::Topology& topology,
                                                   const runtime::TimeScale& scale,
                                                   const CollectiveBenchConfig& config) {
  const int n = world.size(), me = world.rank();
  ASSIGN_OR_RETURN(const int64_t max_count, CheckConfig(n, topology, config));
  const int64_t window =
      std::max(comm::LinkCollectives::AllGatherWindowBytes(n, max_count, comm::DType::kBF16),
               comm::LinkCollectives::ReduceScatterWindowBytes(n, max_count, comm::DType::kBF16));
  ASSIGN_OR_RETURN(LinkRuntime rt,
                   StartLinkRuntime(world, topology, scale, window, config.wake_lead_ns));

  const std::vector<Run> runs = RunsOf(config);
  const int total = static_cast<int>(runs.size()) * config.repeats;
  // Per run: this rank's actual begin (after its sleep) and end, ns.
  std::vector<double> my_begin(static_cast<size_t>(total)), my_end(my_begin.size());
  std::vector<comm::Bf16> send(static_cast<size_t>(n * max_count)), recv(send.size());
  const int64_t wall0 = comm::NowNs();
  const int64_t cpu0 = rt.engine->stats().cpu_ns;
  Status failure = Status::Ok();
  int done = 0;
  for (int rep = 0; rep < config.repeats; ++rep) {
    for (size_t ri = 0; ri < runs.size(); ++ri) {
      const Run& run = runs[ri];
      const int64_t c = run.bytes / 2;
      const bool ag = run.kind == CollectiveKind::kAllGather;
      const int64_t in_count = ag ? c : n * c, out_count = ag ? n * c : c;
      for (int64_t i = 0; i < in_count; ++i) send[i] = comm::FloatToBf16(Value(me, i, rep));
      comm::LinkCollectives& lc = run.algo == LinkAlgo::kRing2 ? *rt.dual : *rt.single;
      ASSIGN_OR_RETURN(int64_t start, rt.barrier->Arrive(2'000'000, 600.0));
      comm::SleepUntilNs(start);
      const int64_t begin = comm::NowNs();
      const comm::ConstBuffer in{send.data(), in_count, comm::DType::kBF16};
      const comm::MutableBuffer out{recv.data(), out_count, comm::DType::kBF16};
      Status st = ag ? lc.AllGather(in, out, run.algo) : lc.ReduceScatter(in, out, run.algo);
      my_end[rep * runs.size() + ri] = static_cast<double>(comm::NowNs() - start);
      my_begin[rep * runs.size() + ri] = static_cast<double>(begin - start);
      RETURN_IF_ERROR(st);
      // Check against the plain reference (outside the timed region), once every rank is done:
      // a rank that finished first must not take the cores of ranks still being timed.
      RETURN_IF_ERROR(rt.barrier->Arrive(0, 600.0).status());
      if (failure.ok()) failure = CompareWithReference(run, n, me, rep, recv);
      ++done;
      if (me == 0 && config.progress) config.progress(done, total);
    }
  }
  const double cpu_fraction = static_cast<double>(rt.engine->stats().cpu_ns - cpu0) /
                              static_cast<double>(comm::NowNs() - wall0);
  // Any rank's mismatch fails the bench on every rank.
  double bad = failure.ok() ? 0 : 1;
  RETURN_IF_ERROR(world.AllReduceSum(std::span<double>(&bad, 1)));
  if (!failure.ok()) return failure;
  if (bad > 0) return core::Internal("collective bench: a result differed from the reference");
  ASSIGN_OR_RETURN(std::vector<double> times_s,
                   GatherRunTimesS(world, my_begin, my_end, scale.scale));
  std::vector<double> cpu_all(n);
  RETURN_IF_ERROR(
      world.AllGather(std::span<const double>(&cpu_fraction, 1), std::span<double>(cpu_all)));

  CollectiveBench out;
  out.topology = topology.name();
  out.ranks = n;
  out.scale = scale;
  for (int r : rt.ring1.order) out.ring1_order.push_back(rt.devices[r]);
  for (int r : rt.ring2.order) out.ring2_order.push_back(rt.devices[r]);
  out.engine_cpu_fraction = *std::max_element(cpu_all.begin(), cpu_all.end());
  out.wake_lead_ns = rt.engine->wake_lead_ns();
  out.rows = RowsOf(topology, out, runs, config.repeats, times_s);
  return out;
}

Status CheckAgainstBound(const CollectiveBench& b, double tolerance) {
  std::string below;
  for (const CollectiveRow& r : b.rows) {
    if (r.bound.bound_s <= 0 || r.median_s >= r.bound.bound_s * (1 - tolerance)) continue;
    below += std::string(below.empty() ? "" : "; ") + CollectiveKindName(r.kind) + " " +
             comm::LinkAlgoName(r.algo) + " " + std::to_string(r.block_wire_bytes / 1024) +
             " KiB: " + core::Fixed(r.over_bound(), 3) + "x its bound (median " +
             core::Fixed(r.median_s * 1e3, 4) + " ms, bound " +
             core::Fixed(r.bound.bound_s * 1e3, 4) + " ms)";
  }
  if (below.empty()) return Status::Ok();
  return core::FailedPrecondition("measured below the topology's lower bound by more than " +
                                  core::Fixed(100 * tolerance, 0) +
                                  "% (the emulator delivered early): " + below);
}

double Ring2Speedup(const CollectiveBench& b, CollectiveKind kind, int64_t block_wire_bytes) {
  double t1 = 0, t2 = 0;
  for (const CollectiveRow& r : b.rows) {
    if (r.kind != kind || r.block_wire_bytes != block_wire_bytes) continue;
    if (r.algo == comm::LinkAlgo::kRing1) t1 = r.median_s;
    if (r.algo == comm::LinkAlgo::kRing2) t2 = r.median_s;
  }
  return t1 > 0 && t2 > 0 ? t1 / t2 : 0;
}

core::Json ToJson(const CollectiveBench& b) {
  core::Json rows = core::Json::array();
  for (const CollectiveRow& r : b.rows) {
    rows.push_back({{"collective", CollectiveKindName(r.kind)},
                    {"algo", comm::LinkAlgoName(r.algo)},
                    {"block_wire_bytes", r.block_wire_bytes},
                    {"measured_median_s", r.median_s},
                    {"measured_min_s", r.min_s},
                    {"measured_max_s", r.max_s},
                    {"modeled_s", r.modeled_s},
                    {"error", r.error()},
                    {"bound_s", r.bound.bound_s},
                    {"bound_t_bw_s", r.bound.t_bw_s},
                    {"bound_t_chain_s", r.bound.t_chain_s},
                    {"bound_t_port_s", r.bound.t_port_s},
                    {"bound_binding", r.bound.binding},
                    {"measured_over_bound", r.over_bound()},
                    {"measured_bandwidth_bytes_per_s", r.bandwidth_bytes_per_s(b.ranks)}});
  }
  return {{"topology", b.topology},
          {"ranks", b.ranks},
          {"time_scale", b.scale.scale},
          {"time_scale_source", b.scale.source},
          {"ring1_order", b.ring1_order},
          {"ring2_order", b.ring2_order},
          {"engine_cpu_fraction", b.engine_cpu_fraction},
          {"wake_lead_ns", b.wake_lead_ns},
          {"times", "device seconds: measured = emulated wall time / time_scale"},
          {"rows", rows}};
}

}  // namespace tessera::compass
