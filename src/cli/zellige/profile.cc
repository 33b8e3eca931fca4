// `tessera zellige profile`: measures this machine's prices for one SmallDit shape through
// the engine's real kernels and real MPI, and writes a profile JSON (zellige/profile.h).
//
//   tessera zellige profile [--ranks 2] --out FILE [--buckets 8,16,...] [--whole-tokens 2048]
//       [--repeats 5] [--hidden 256 --heads 4 --layers 4 --ffn 1024 --channels 16]
//
// Typed at a shell it re-runs itself under mpiexec with --ranks ranks (cli/mpi_launch.h).
// Prices are measured with every rank busy, as in a real step (two ranks share the memory
// system): for every config of every power-of-two degree d <= ranks and every bucket L >= d,
// one plan places, on each of the floor(ranks / d) aligned blocks of d ranks, n copies of an
// L-token sequence with that config (n = max(1, whole_tokens / L) for whole sequences, which
// coalesce; 1 otherwise). All plans are measured interleaved (zellige::engine::MeasurePlansInterleaved:
// `repeats` rounds, each running every plan for --warmup steps and one timed step), so a
// burst of interference on a shared machine does not bias one point. A calibration plan (one
// 8-token sequence on rank 0, the other ranks idle; needs
// >= 2 ranks) gives the fixed per-step work of a rank; a solo plan (the whole-config point
// nearest whole_tokens / 4 on rank 0 alone) gives solo_speedup = median forward + backward
// of that point with every rank busy / the same on rank 0 alone. Prices:
//   fixed_fwd_s = median forward time of the idle ranks (zeroing gradients, empty batch),
//                 fixed_bwd_s likewise, fixed_bytes = their median peak above base;
//   fwd_s(L)    = (median over steps of the mean over blocks of the block's slowest member's
//                 forward - fixed_fwd_s) / n; bwd_s(L) likewise from the backward;
//   mem_bytes(L) = (largest participant peak - base - fixed_bytes) / n;
//   step_overhead_s = median over all steps of the fastest rank's tail (all-reduces + AdamW,
//                 no waiting) + fixed_fwd_s + fixed_bwd_s; base_bytes = median base +
//                 fixed_bytes.
// Then all-to-all, all-gather and point-to-point are timed at 4 KiB..4 MiB per rank and
// fitted as alpha + beta * bytes. Rank 0 writes the file atomically (an interrupted run
// leaves no file that looks complete) and prints the fits; a progress bar shows on a tty.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/mpi_launch.h"
#include "cli/zellige/small_dit_args.h"
#include "core/json_util.h"
#include "core/progress.h"
#include "core/table.h"
#include "zellige/engine/engine_check.h"
#include "zellige/engine/plan_measurement.h"
#include "zellige/profile.h"

namespace tessera::cli {

using core::Status;
using core::StatusOr;

namespace {

struct ProfileArgs {
  int ranks = 2;
  std::string out;
  std::vector<int64_t> buckets;
  int64_t whole_tokens = 2048;
  int repeats = 5;
  int warmup = 1;
  uint64_t seed = 1;
  SmallDitArgs model;
  double op_timeout_s = 300;
};

// 8, 11, 16, 23, ... (x sqrt 2) up to 2048.
std::vector<int64_t> DefaultBuckets() {
  std::vector<int64_t> b;
  for (int i = 0; i <= 16; ++i) b.push_back(std::llround(8.0 * std::pow(2.0, i / 2.0)));
  return b;
}

std::string ReadFirstMatch(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string v = line.substr(colon + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return "";
}

std::string MachineDescription() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::string cpu = ReadFirstMatch("/proc/cpuinfo", "model name");
  return std::string(host) + " (" + (cpu.empty() ? "unknown CPU" : cpu) + ", " +
         std::to_string(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN))) + " cores)";
}

std::string IsoDate() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

double MemTotalBytes() {
  std::string v = ReadFirstMatch("/proc/meminfo", "MemTotal");  // "24576000 kB"
  return v.empty() ? 8.0 * (1 << 30) : std::stod(v) * 1024.0;
}

constexpr int kCalibration = -1;  // one tiny sequence on rank 0, the others idle
constexpr int kSolo = -2;         // the reference whole load on rank 0, the others idle

struct RawPoint {
  int config = -1;  // index into the config list; kCalibration or kSolo otherwise
  int64_t tokens = 0;
  int64_t count = 1;
  zellige::engine::PlanMeasurement m;
};

// Times one collective `op` (every rank calls it) `reps` times after 2 warm-ups; returns the
// median over repetitions of the slowest rank's time.
StatusOr<double> TimeCollective(comm::Communicator& world, int reps,
                                const std::function<Status()>& op) {
  const int n = world.size();
  std::vector<double> mine;
  for (int i = 0; i < reps + 2; ++i) {
    RETURN_IF_ERROR(world.Barrier());
    auto t0 = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(op());
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (i >= 2) mine.push_back(t);
  }
  std::vector<double> all(static_cast<size_t>(reps) * n, 0.0);
  std::copy(mine.begin(), mine.end(), all.begin() + static_cast<size_t>(reps) * world.rank());
  RETURN_IF_ERROR(world.AllReduceSum(std::span<double>(all)));
  std::vector<double> slowest(reps, 0.0);
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < reps; ++i) slowest[i] = std::max(slowest[i], all[r * reps + i]);
  return zellige::engine::Median(slowest);
}

// alpha-beta of all-to-all, all-gather and point-to-point (bytes = per rank sent).
StatusOr<std::vector<zellige::CommFit>> MeasureComm(comm::Communicator& world, int reps) {
  const int n = world.size(), me = world.rank();
  std::vector<zellige::CommFit> fits;
  if (n < 2) return fits;
  const std::vector<int64_t> sizes = {4096, 16384, 65536, 262144, 1048576, 4194304};
  for (const std::string prim : {"all_to_all", "all_gather", "p2p"}) {
    zellige::CommFit f;
    f.primitive = prim;
    f.ranks = prim == "p2p" ? 2 : n;
    std::vector<double> xs, ys;
    for (int64_t bytes : sizes) {
      const int64_t floats = bytes / 4;
      const int64_t chunk = std::max<int64_t>(1, floats / (n - 1));
      std::vector<float> send(chunk * n, 1.0f), recv(chunk * n, 0.0f);
      std::vector<int64_t> counts(n, chunk), displs(n);
      for (int j = 0; j < n; ++j) displs[j] = j * chunk;
      std::function<Status()> op;
      if (prim == "all_to_all") {
        op = [&] { return world.AllToAllV(send, counts, displs, recv, counts, displs); };
      } else if (prim == "all_gather") {
        op = [&] { return world.AllGather(std::span<const float>(send.data(), chunk), recv); };
      } else {
        std::vector<float>* buf = &send;
        op = [&, buf] {
          std::span<float> s(buf->data(), floats);
          if (me == 0) {
            RETURN_IF_ERROR(world.Send(s, 1, 7));
            return world.Recv(s, 1, 8);
          }
          if (me == 1) {
            RETURN_IF_ERROR(world.Recv(s, 0, 7));
            return world.Send(s, 0, 8);
          }
          return Status::Ok();
        };
        if (static_cast<int64_t>(send.size()) < floats) send.resize(floats, 1.0f);
      }
      ASSIGN_OR_RETURN(double t, TimeCollective(world, reps, op));
      if (prim == "p2p") t /= 2;  // one way of the round trip
      const double sent = prim == "p2p" ? static_cast<double>(floats * 4)
                                        : static_cast<double>(chunk * (n - 1) * 4);
      f.points.push_back({sent, t});
      xs.push_back(sent);
      ys.push_back(t);
    }
    ASSIGN_OR_RETURN(auto line, zellige::FitLine(xs, ys));
    f.alpha_s = std::max(0.0, line[0]);
    f.beta_s_per_byte = std::max(0.0, line[1]);
    fits.push_back(std::move(f));
  }
  return fits;
}

// Rank 0: turns the raw measurements into the profile (see the file comment).
StatusOr<zellige::Profile> BuildProfile(const ProfileArgs& a, int n,
                                        const std::vector<zellige::ParallelConfig>& configs,
                                        const std::vector<RawPoint>& raw) {
  std::vector<double> idle_fwd, idle_bwd, idle_bytes, tails, bases;
  for (const RawPoint& p : raw) {
    for (const zellige::engine::RankMeasurement& r : p.m.ranks) {
      bases.push_back(static_cast<double>(r.base_bytes));
      if (p.config == kCalibration && r.local_tokens == 0) {
        idle_fwd.insert(idle_fwd.end(), r.forward_s.begin(), r.forward_s.end());
        idle_bwd.insert(idle_bwd.end(), r.backward_s.begin(), r.backward_s.end());
        idle_bytes.push_back(static_cast<double>(r.peak_bytes - r.base_bytes));
      }
    }
    for (int s = 0; s < p.m.steps(); ++s) {
      double mn = INFINITY;
      for (const zellige::engine::RankMeasurement& r : p.m.ranks) mn = std::min(mn, r.tail_s[s]);
      tails.push_back(mn);
    }
  }
  const double fixed_fwd = zellige::engine::Median(idle_fwd), fixed_bwd = zellige::engine::Median(idle_bwd);
  const double fixed_bytes = zellige::engine::Median(idle_bytes);
  zellige::Profile prof;
  prof.machine = MachineDescription();
  prof.date = IsoDate();
  prof.provenance = "measured on " + prof.machine + ", " + prof.date;
  prof.ranks = n;
  prof.repeats = a.repeats;
  prof.model = ToProfileModel(a.model);
  prof.step_overhead_s = zellige::engine::Median(tails) + fixed_fwd + fixed_bwd;
  prof.base_bytes = zellige::engine::Median(bases) + fixed_bytes;
  prof.usable_bytes_per_rank = 0.9 * MemTotalBytes() / n;
  // Contention: the reference whole load on every rank (its whole-config point) vs on rank 0
  // alone (the solo plan), raw forward + backward per step, medians.
  for (const RawPoint& solo : raw) {
    if (solo.config != kSolo) continue;
    for (const RawPoint& all : raw) {
      if (all.config < 0 || !configs[all.config].whole() || all.tokens != solo.tokens) continue;
      std::vector<double> busy, alone;
      for (int s = 0; s < all.m.steps(); ++s) {
        double sum = 0;
        for (const zellige::engine::RankMeasurement& r : all.m.ranks)
          sum += r.forward_s[s] + r.backward_s[s];
        busy.push_back(sum / n);
      }
      for (int s = 0; s < solo.m.steps(); ++s) {
        alone.push_back(solo.m.ranks[0].forward_s[s] + solo.m.ranks[0].backward_s[s]);
      }
      const double a = zellige::engine::Median(alone);
      if (a > 0) prof.solo_speedup = std::clamp(zellige::engine::Median(busy) / a, 0.25, 8.0);
    }
  }
  for (size_t c = 0; c < configs.size(); ++c) {
    zellige::ConfigPrices cp;
    cp.config = configs[c];
    const int degree = configs[c].degree();
    const int blocks = n / degree;
    std::vector<double> xs, fw, bw, mem;
    for (const RawPoint& p : raw) {
      if (p.config != static_cast<int>(c)) continue;
      std::vector<double> f, b;
      double peak = 0;
      for (int s = 0; s < p.m.steps(); ++s) {
        double sf = 0, sb = 0;
        for (int blk = 0; blk < blocks; ++blk) {
          double mf = 0, mb = 0;
          for (int r = blk * degree; r < (blk + 1) * degree; ++r) {
            mf = std::max(mf, p.m.ranks[r].forward_s[s]);
            mb = std::max(mb, p.m.ranks[r].backward_s[s]);
          }
          sf += mf;
          sb += mb;
        }
        f.push_back(sf / blocks);
        b.push_back(sb / blocks);
      }
      for (int r = 0; r < blocks * degree; ++r) {
        peak =
            std::max(peak, static_cast<double>(p.m.ranks[r].peak_bytes - p.m.ranks[r].base_bytes));
      }
      zellige::PricePoint pt;
      pt.tokens = p.tokens;
      pt.count = p.count;
      const double cnt = static_cast<double>(p.count);
      pt.fwd_s = std::max(1e-9, (zellige::engine::Median(f) - fixed_fwd) / cnt);
      pt.bwd_s = std::max(1e-9, (zellige::engine::Median(b) - fixed_bwd) / cnt);
      pt.mem_bytes = std::max(0.0, (peak - fixed_bytes) / cnt);
      cp.points.push_back(pt);
      xs.push_back(static_cast<double>(p.tokens));
      fw.push_back(pt.fwd_s);
      bw.push_back(pt.bwd_s);
      mem.push_back(pt.mem_bytes);
    }
    ASSIGN_OR_RETURN(cp.fwd_fit, zellige::FitQuadraticRelative(xs, fw));
    ASSIGN_OR_RETURN(cp.bwd_fit, zellige::FitQuadraticRelative(xs, bw));
    ASSIGN_OR_RETURN(cp.mem_fit, zellige::FitLine(xs, mem));
    prof.configs.push_back(std::move(cp));
  }
  return prof;
}

void PrintSummary(const zellige::Profile& p, const std::string& out) {
  std::printf(
      "profile of %s\n%d ranks, SmallDit hidden %lld heads %lld layers %lld ffn %lld, %d "
      "timed steps per point (median)\n",
      p.provenance.c_str(), p.ranks, static_cast<long long>(p.model.hidden),
      static_cast<long long>(p.model.heads), static_cast<long long>(p.model.layers),
      static_cast<long long>(p.model.ffn), p.repeats);
  std::printf("step overhead %.2f ms, base %.1f MiB per rank\n", p.step_overhead_s * 1e3,
              p.base_bytes / (1024.0 * 1024.0));
  std::printf("solo speed-up %.3f (a rank working alone vs every rank busy)\n", p.solo_speedup);
  core::Table t({"config", "points", "fwd+bwd @min L ms", "fwd+bwd @max L ms", "max fit err %",
                 "MiB per 1K tokens"});
  for (const zellige::ConfigPrices& c : p.configs) {
    double worst = 0;
    for (const zellige::PricePoint& pt : c.points) {
      double fit = zellige::EvalQuadratic(c.fwd_fit, pt.tokens) +
                   zellige::EvalQuadratic(c.bwd_fit, pt.tokens);
      worst = std::max(worst, std::fabs(fit / (pt.fwd_s + pt.bwd_s) - 1));
    }
    const auto& lo = c.points.front();
    const auto& hi = c.points.back();
    t.AddRow({c.config.ToString(), std::to_string(c.points.size()),
              core::Fixed((lo.fwd_s + lo.bwd_s) * 1e3, 3),
              core::Fixed((hi.fwd_s + hi.bwd_s) * 1e3, 1), core::Fixed(100 * worst, 2),
              core::Fixed(c.mem_fit[1] * 1000 / (1024.0 * 1024.0), 2)});
  }
  std::printf("%s", t.Render().c_str());
  core::Table ct({"primitive", "ranks", "alpha us", "GB/s"});
  for (const zellige::CommFit& f : p.comm) {
    ct.AddRow({f.primitive, std::to_string(f.ranks), core::Fixed(f.alpha_s * 1e6, 1),
               core::Fixed(f.beta_s_per_byte > 0 ? 1e-9 / f.beta_s_per_byte : 0, 2)});
  }
  std::printf("%s(measured) wrote %s\n", ct.Render().c_str(), out.c_str());
}

Status ProfileOnWorld(const ProfileArgs& a, comm::Communicator& world) {
  const int n = world.size(), me = world.rank();
  const models::SmallDitConfig cfg = ToSmallDitConfig(a.model);
  std::vector<int64_t> buckets = a.buckets.empty() ? DefaultBuckets() : a.buckets;
  std::sort(buckets.begin(), buckets.end());
  buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
  std::vector<zellige::ParallelConfig> configs;
  for (int d = 1; d <= n; d *= 2) {
    for (const auto& c : zellige::ConfigsOfDegree(d, static_cast<int>(a.model.heads)))
      configs.push_back(c);
  }
  for (const auto& c : configs) {
    int usable = 0;
    for (int64_t L : buckets) usable += L >= c.degree() ? 1 : 0;
    if (usable < 3) {
      return core::InvalidArgument("--buckets: config " + c.ToString() +
                                   " needs >= 3 buckets of >= " + std::to_string(c.degree()) +
                                   " tokens to fit its prices");
    }
  }
  zellige::engine::MeasureOptions mo;
  mo.warmup_steps = a.warmup;
  mo.steps = a.repeats;
  mo.seed = a.seed;
  std::vector<RawPoint> raw;
  std::vector<zellige::Plan> plans;
  std::vector<workload::Batch> batches;
  if (n >= 2) {  // calibration: one tiny sequence on rank 0, the others idle
    RawPoint p;
    p.config = kCalibration;
    p.tokens = 8;
    batches.push_back(zellige::engine::MakeBatch({8}));
    plans.push_back(zellige::Plan{"profile", n, {{0, zellige::ParallelConfig{}, {0}}}, -1});
    raw.push_back(std::move(p));
  }
  if (n >= 2) {  // solo: the whole-config point nearest whole_tokens / 4, on rank 0 only
    RawPoint p;
    p.config = kSolo;
    p.tokens = buckets.front();
    for (int64_t L : buckets) {
      if (std::abs(L - a.whole_tokens / 4) < std::abs(p.tokens - a.whole_tokens / 4)) p.tokens = L;
    }
    p.count = std::max<int64_t>(1, a.whole_tokens / p.tokens);
    batches.push_back(zellige::engine::MakeBatch(std::vector<int64_t>(p.count, p.tokens)));
    zellige::Plan plan{"profile", n, {}, -1};
    for (int64_t i = 0; i < p.count; ++i) {
      plan.placements.push_back({static_cast<int>(i), zellige::ParallelConfig{}, {0}});
    }
    plans.push_back(std::move(plan));
    raw.push_back(std::move(p));
  }
  for (size_t c = 0; c < configs.size(); ++c) {
    const zellige::ParallelConfig& pc = configs[c];
    const int d = pc.degree();
    for (int64_t L : buckets) {
      if (L < d) continue;
      RawPoint p;
      p.config = static_cast<int>(c);
      p.tokens = L;
      p.count = pc.whole() ? std::max<int64_t>(1, a.whole_tokens / L) : 1;
      const int blocks = n / d;
      batches.push_back(
          zellige::engine::MakeBatch(std::vector<int64_t>(static_cast<size_t>(p.count * blocks), L)));
      zellige::Plan plan;
      plan.planner = "profile";
      plan.num_ranks = n;
      for (int blk = 0; blk < blocks; ++blk) {
        std::vector<int> ranks(d);
        for (int i = 0; i < d; ++i) ranks[i] = blk * d + i;
        for (int64_t i = 0; i < p.count; ++i) {
          plan.placements.push_back({static_cast<int>(blk * p.count + i), pc, ranks});
        }
      }
      plans.push_back(std::move(plan));
      raw.push_back(std::move(p));
    }
  }
  std::vector<zellige::engine::PlanCase> cases;
  for (size_t i = 0; i < plans.size(); ++i) cases.push_back({&plans[i], &batches[i]});
  std::unique_ptr<core::ProgressBar> bar;
  if (me == 0) {
    bar =
        std::make_unique<core::ProgressBar>("profile", static_cast<long>(cases.size()) * a.repeats);
  }
  ASSIGN_OR_RETURN(std::vector<zellige::engine::PlanMeasurement> measured,
                   zellige::engine::MeasurePlansInterleaved(cases, cfg, world, mo, [&](int done, int) {
                     if (bar) bar->Update(done);
                   }));
  if (bar) bar->Done();
  for (size_t i = 0; i < raw.size(); ++i) raw[i].m = std::move(measured[i]);
  ASSIGN_OR_RETURN(std::vector<zellige::CommFit> comm, MeasureComm(world, 2 * a.repeats));
  if (me != 0) return Status::Ok();
  if (!raw.empty() && !raw[0].m.memory_measured) {
    return core::FailedPrecondition(
        "this build does not count heap allocations (sanitizer build?); profile with the "
        "release build");
  }
  ASSIGN_OR_RETURN(zellige::Profile prof, BuildProfile(a, n, configs, raw));
  prof.comm = std::move(comm);
  RETURN_IF_ERROR(core::WriteJsonFile(a.out, zellige::ToJson(prof)));
  PrintSummary(prof, a.out);
  std::fflush(stdout);
  return Status::Ok();
}

Status RunProfile(const ProfileArgs& a) {
  if (a.out.empty()) return core::InvalidArgument("--out: required (the profile JSON to write)");
  RETURN_IF_ERROR(ValidateSmallDitArgs(a.model));
  if (a.repeats < 1 || a.warmup < 0 || a.whole_tokens < 1) {
    return core::InvalidArgument("--repeats / --warmup / --whole-tokens: got " +
                                 std::to_string(a.repeats) + " / " + std::to_string(a.warmup) +
                                 " / " + std::to_string(a.whole_tokens) +
                                 ", must be >= 1 / >= 0 / >= 1");
  }
  for (int64_t b : a.buckets) {
    if (b < 1)
      return core::InvalidArgument("--buckets: got " + std::to_string(b) + ", must be >= 1");
  }
  return RunMpiJob(a.ranks, a.op_timeout_s,
                   [&](comm::Communicator& world) { return ProfileOnWorld(a, world); });
}

}  // namespace

void AddZelligeProfile(CLI::App* z, Action* action) {
  auto a = std::make_shared<ProfileArgs>();
  CLI::App* c = z->add_subcommand(
      "profile",
      "Measure this machine's per-(length bucket, config) prices, communication alpha-beta and "
      "memory constants for a SmallDit; writes a profile JSON for --profile");
  c->add_option("--ranks", a->ranks, "MPI ranks (relaunches under mpiexec when typed at a shell)")
      ->capture_default_str();
  c->add_option("--out", a->out, "profile JSON to write")->required();
  c->add_option("--buckets", a->buckets, "sequence lengths to measure (default 8..2048, x sqrt 2)")
      ->delimiter(',');
  c->add_option("--whole-tokens", a->whole_tokens,
                "whole sequences are measured as max(1, this / L) coalesced copies")
      ->capture_default_str();
  c->add_option("--repeats", a->repeats, "timed steps per point (median)")->capture_default_str();
  c->add_option("--warmup", a->warmup, "untimed steps per point")->capture_default_str();
  c->add_option("--seed", a->seed, "data seed")->capture_default_str();
  c->add_option("--op-timeout", a->op_timeout_s, "seconds before a stuck op aborts the job")
      ->capture_default_str();
  AddSmallDitOptions(c, &a->model);
  c->callback([action, a] { *action = [a] { return RunProfile(*a); }; });
}

}  // namespace tessera::cli
