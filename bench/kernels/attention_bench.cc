// attention_bench: single-threaded SGEMM vs tiled attention forward/backward, side by side.
//
// 1. Validates the tiled kernels against the reference on small varlen problems (exit 1 on a
//    mismatch). 2. Measures SGEMM GFLOP/s on a square and two attention-like shapes for each
//    compiled-in GEMM backend (OpenBLAS, oneDNN); the best is the machine's SGEMM "peak".
//    3. Measures attention forward and backward GFLOP/s at --len tokens (one sequence,
//    --heads heads) for D = 128 and 64 on each backend and prints them as % of that peak,
//    unmasked and causal, with the causal / unmasked time ratio (causal skips the key tiles
//    above the diagonal, so it should take about half the time).
//    --sweep adds a tile-size sweep on the default backend.
// FLOP convention: forward 4 * Lq * Lk * D per head, backward 10 * Lq * Lk * D (see
// attention.h); causal counts only the visible scores, L * (L + 1) / 2 instead of L * L.
// Each figure is the median over --repeats timed runs after one warm-up run.
// BLAS is set to one thread (one core per MPI rank); the process runs on the calling thread.
//
// Usage: bench_attention [--repeats N] [--heads H] [--len L] [--sweep]
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/table.h"
#include "kernels/attention.h"
#include "kernels/attention_reference.h"
#include "kernels/gemm.h"

namespace tessera::kernels {
namespace {

struct Args {
  int repeats = 5;
  int64_t heads = 2;
  int64_t len = 4096;
  bool sweep = false;
};

std::vector<float> Random(core::Rng& rng, int64_t n) {
  std::vector<float> out(n);
  for (float& x : out) x = static_cast<float>(rng.Normal());
  return out;
}

// Median wall-clock and process-CPU seconds over `repeats` calls of fn after one warm-up call.
// CPU time excludes time this process waits while other jobs use the 2 shared cores.
struct Seconds {
  double wall, cpu;
};

double CpuNow() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Seconds MedianSeconds(int repeats, const std::function<void()>& fn) {
  fn();
  std::vector<double> wall, cpu;
  for (int i = 0; i < repeats; ++i) {
    const double c0 = CpuNow();
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    cpu.push_back(CpuNow() - c0);
  }
  return {Median(wall), Median(cpu)};
}

// GFLOP/s for `flops` from wall and CPU seconds.
struct Rate {
  double wall, cpu;
};
Rate ToRate(double flops, Seconds s) { return {flops / s.wall * 1e-9, flops / s.cpu * 1e-9}; }

double MaxRelErr(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0.0, ref = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isinf(b[i]) && a[i] == b[i]) continue;
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    ref = std::max(ref, std::abs(static_cast<double>(b[i])));
  }
  return ref > 0.0 ? diff / ref : diff;
}

void Check(const core::Status& st, const char* what) {
  if (!st.ok()) {
    std::fprintf(stderr, "%s failed: %s\n", what, st.ToString().c_str());
    std::exit(2);
  }
}

// Tiled vs reference on a small varlen problem; returns false (and prints) on a mismatch.
bool Validate(int64_t d) {
  const int64_t h = 2;
  const std::vector<int64_t> cu_q = {0, 100, 137, 300}, cu_k = {0, 90, 300, 301};
  const AttentionShape shape{h, d, cu_q, cu_k, std::nullopt};
  core::Rng rng(7);
  const int64_t nq = cu_q.back() * h * d, nk = cu_k.back() * h * d;
  const std::vector<float> q = Random(rng, nq), k = Random(rng, nk), v = Random(rng, nk),
                           d_o = Random(rng, nq);
  std::vector<float> o(nq), lse(cu_q.back() * h), o_ref(nq), lse_ref(lse.size());
  Check(AttentionForward(shape, q.data(), k.data(), v.data(), o.data(), lse.data()), "forward");
  Check(AttentionForwardReference<float>(shape, q.data(), k.data(), v.data(), o_ref.data(),
                                         lse_ref.data()),
        "reference forward");
  std::vector<float> dq(nq), dk(nk), dv(nk), dq_ref(nq), dk_ref(nk), dv_ref(nk);
  Check(AttentionBackward(shape, q.data(), k.data(), v.data(), o.data(), d_o.data(), lse.data(),
                          dq.data(), dk.data(), dv.data()),
        "backward");
  Check(AttentionBackwardReference<float>(shape, q.data(), k.data(), v.data(), o.data(), d_o.data(),
                                          lse.data(), dq_ref.data(), dk_ref.data(), dv_ref.data()),
        "reference backward");
  const double errs[] = {MaxRelErr(o, o_ref), MaxRelErr(lse, lse_ref), MaxRelErr(dq, dq_ref),
                         MaxRelErr(dk, dk_ref), MaxRelErr(dv, dv_ref)};
  const double worst = *std::max_element(std::begin(errs), std::end(errs));
  std::printf("validate D=%-3ld: max rel err o %.1e lse %.1e dq %.1e dk %.1e dv %.1e -> %s\n",
              static_cast<long>(d), errs[0], errs[1], errs[2], errs[3], errs[4],
              worst < 1e-5 ? "ok" : "MISMATCH");
  return worst < 1e-5;
}

struct GemmShape {
  const char* name;
  int64_t m, n, k;
  Transpose tb;
};

Rate GemmRate(const Args& args, const GemmShape& s) {
  core::Rng rng(1);
  const std::vector<float> a = Random(rng, s.m * s.k), b = Random(rng, s.k * s.n);
  std::vector<float> c(s.m * s.n);
  const int64_t ldb = s.tb == Transpose::kNo ? s.n : s.k;
  // Small shapes repeat inside one timed sample so that each sample is ~4 GFLOP.
  const double flops = 2.0 * s.m * s.n * s.k;
  const int inner = std::max(1, static_cast<int>(4e9 / flops));
  const Seconds sec = MedianSeconds(args.repeats, [&] {
    for (int i = 0; i < inner; ++i) {
      Check(Gemm(Transpose::kNo, s.tb, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), ldb, 0.0f,
                 c.data(), s.n),
            "gemm");
    }
  });
  return ToRate(flops * inner, sec);
}

struct AttentionRates {
  Rate fwd{0.0, 0.0}, bwd{0.0, 0.0};
  Seconds fwd_s{0.0, 0.0}, bwd_s{0.0, 0.0};
};

AttentionRates TimeAttention(const Args& args, int64_t d, const AttentionTiling& fwd_tiling,
                             const AttentionBackwardOptions& bwd_options, bool run_fwd = true,
                             bool run_bwd = true, bool causal = false) {
  const int64_t h = args.heads, l = args.len;
  const std::vector<int64_t> cu = {0, l};
  const AttentionShape shape{h, d, cu, cu, std::nullopt, causal};
  core::Rng rng(3);
  const int64_t n = l * h * d;
  const std::vector<float> q = Random(rng, n), k = Random(rng, n), v = Random(rng, n),
                           d_o = Random(rng, n);
  std::vector<float> o(n), lse(l * h), dq(n), dk(n), dv(n);
  Check(AttentionForward(shape, q.data(), k.data(), v.data(), o.data(), lse.data()), "forward");
  const double scores =
      causal ? 0.5 * static_cast<double>(l) * (l + 1) : static_cast<double>(l) * l;
  const double flops = scores * d * h;
  AttentionRates out;
  if (run_fwd) {
    out.fwd_s = MedianSeconds(args.repeats, [&] {
      Check(AttentionForward(shape, q.data(), k.data(), v.data(), o.data(), lse.data(), fwd_tiling),
            "forward");
    });
    out.fwd = ToRate(4.0 * flops, out.fwd_s);
  }
  if (run_bwd) {
    out.bwd_s = MedianSeconds(args.repeats, [&] {
      Check(AttentionBackward(shape, q.data(), k.data(), v.data(), o.data(), d_o.data(), lse.data(),
                              dq.data(), dk.data(), dv.data(), bwd_options),
            "backward");
    });
    out.bwd = ToRate(10.0 * flops, out.bwd_s);
  }
  return out;
}

std::string Pct(double part, double whole) { return core::Fixed(100.0 * part / whole, 1) + "%"; }

// Tile sweep on the current backend, in CPU-time GFLOP/s (steadier on a shared machine).
void Sweep(const Args& args, double peak_cpu) {
  core::Table fwd({"D", "block_q", "block_k", "fwd GFLOP/s (cpu)", "% best SGEMM"});
  core::Table bwd({"D", "block_q", "block_k", "bwd GFLOP/s (cpu)", "% best SGEMM"});
  for (int64_t d : {128, 64}) {
    for (int64_t bq : {64, 128, 256}) {
      for (int64_t bk : {256, 512, 1024}) {
        const AttentionRates t = TimeAttention(args, d, {bq, bk}, {}, true, false);
        fwd.AddRow({std::to_string(d), std::to_string(bq), std::to_string(bk),
                    core::Fixed(t.fwd.cpu, 1), Pct(t.fwd.cpu, peak_cpu)});
      }
    }
    for (int64_t bq : {128, 256, 512}) {
      for (int64_t bk : {128, 256, 512}) {
        AttentionBackwardOptions opts;
        opts.tiling = {bq, bk};
        const AttentionRates t = TimeAttention(args, d, {}, opts, false, true);
        bwd.AddRow({std::to_string(d), std::to_string(bq), std::to_string(bk),
                    core::Fixed(t.bwd.cpu, 1), Pct(t.bwd.cpu, peak_cpu)});
      }
    }
  }
  std::printf("\nTile sweep, backend %s (forward)\n%s\nTile sweep (backward)\n%s",
              GemmBackendName(CurrentGemmBackend()), fwd.Render().c_str(), bwd.Render().c_str());
}

std::string LoadAverage() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (f == nullptr) return "?";
  char buf[64] = {0};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  std::string out(buf, n);
  // First three fields: 1, 5 and 15 minute load averages.
  size_t pos = 0;
  for (int i = 0; i < 3 && pos != std::string::npos; ++i) pos = out.find(' ', pos + 1);
  return out.substr(0, pos);
}

int Main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--repeats" && has_value) {
      args.repeats = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--heads" && has_value) {
      args.heads = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--len" && has_value) {
      args.len = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--sweep") {
      args.sweep = true;
    } else {
      std::fprintf(stderr, "usage: %s [--repeats N] [--heads H] [--len L] [--sweep]\n", argv[0]);
      return 1;
    }
  }
  Check(SetBlasNumThreads(1), "SetBlasNumThreads");
  std::printf(
      "attention_bench, measured on this machine (%ld online CPUs, load average %s at "
      "start: other jobs may share the cores, see the cpu-time columns)\n"
      "BLAS: %s; %d BLAS thread(s); median of %d repeats\n",
      sysconf(_SC_NPROCESSORS_ONLN), LoadAverage().c_str(), BlasDescription().c_str(),
      BlasNumThreads(), args.repeats);
  if (!Validate(128) || !Validate(64)) return 1;

  const GemmBackend default_backend = CurrentGemmBackend();
  std::vector<GemmBackend> backends;
  for (GemmBackend b : {GemmBackend::kOpenBlas, GemmBackend::kOneDnn}) {
    if (GemmBackendAvailable(b)) backends.push_back(b);
  }
  const GemmShape shapes[] = {
      {"sgemm 1024x1024x1024 NN", 1024, 1024, 1024, Transpose::kNo},
      {"sgemm 2048x2048x2048 NN", 2048, 2048, 2048, Transpose::kNo},
      {"sgemm 128x512x128 NT (one S tile)", 128, 512, 128, Transpose::kYes},
      {"sgemm 4096x4096x128 NT (QK^T-like)", 4096, 4096, 128, Transpose::kYes},
      {"sgemm 4096x128x4096 NN (PV-like)", 4096, 128, 4096, Transpose::kNo}};
  struct Row {
    std::string kernel;
    GemmBackend backend;
    Rate rate;
  };
  std::vector<Row> rows;
  Rate best{0.0, 0.0};
  std::vector<Rate> backend_best(2, Rate{0.0, 0.0});
  for (GemmBackend b : backends) {
    Check(SetGemmBackend(b), "SetGemmBackend");
    for (const GemmShape& s : shapes) {
      const Rate r = GemmRate(args, s);
      rows.push_back({s.name, b, r});
      Rate& bb = backend_best[static_cast<int>(b)];
      bb = {std::max(bb.wall, r.wall), std::max(bb.cpu, r.cpu)};
      best = {std::max(best.wall, r.wall), std::max(best.cpu, r.cpu)};
    }
  }
  std::string causal_times;
  for (GemmBackend b : backends) {
    Check(SetGemmBackend(b), "SetGemmBackend");
    for (int64_t d : {128, 64}) {
      const AttentionRates t = TimeAttention(args, d, {}, {});
      const AttentionRates tc = TimeAttention(args, d, {}, {}, true, true, /*causal=*/true);
      const std::string tag = "L=" + std::to_string(args.len) + " H=" + std::to_string(args.heads) +
                              " D=" + std::to_string(d);
      rows.push_back({"attention fwd " + tag, b, t.fwd});
      rows.push_back({"attention bwd " + tag, b, t.bwd});
      rows.push_back({"attention fwd causal " + tag, b, tc.fwd});
      rows.push_back({"attention bwd causal " + tag, b, tc.bwd});
      causal_times += std::string("  ") + GemmBackendName(b) + " " + tag + ": fwd " +
                      core::Fixed(1e3 * t.fwd_s.wall, 2) + " ms unmasked, " +
                      core::Fixed(1e3 * tc.fwd_s.wall, 2) + " ms causal (" +
                      core::Fixed(tc.fwd_s.wall / t.fwd_s.wall, 2) + "x); bwd " +
                      core::Fixed(1e3 * t.bwd_s.wall, 2) + " ms unmasked, " +
                      core::Fixed(1e3 * tc.bwd_s.wall, 2) + " ms causal (" +
                      core::Fixed(tc.bwd_s.wall / t.bwd_s.wall, 2) + "x)\n";
    }
  }
  Check(SetGemmBackend(default_backend), "SetGemmBackend");

  core::Table table(
      {"kernel", "backend", "GFLOP/s", "% best SGEMM", "% own SGEMM", "cpu GFLOP/s", "cpu % best"});
  for (const Row& r : rows) {
    const Rate& own = backend_best[static_cast<int>(r.backend)];
    table.AddRow({r.kernel, GemmBackendName(r.backend), core::Fixed(r.rate.wall, 1),
                  Pct(r.rate.wall, best.wall), Pct(r.rate.wall, own.wall),
                  core::Fixed(r.rate.cpu, 1), Pct(r.rate.cpu, best.cpu)});
  }
  std::printf("\n%s", table.Render().c_str());
  std::printf(
      "GFLOP/s from the median wall time (cpu: median process CPU time). %% best SGEMM: of the\n"
      "best SGEMM above over all backends; %% own SGEMM: of the same backend's best. FLOPs: fwd\n"
      "4*Lq*Lk*D per head, bwd 10*Lq*Lk*D per head (causal: Lq*Lk -> L*(L+1)/2, the visible\n"
      "scores). Single-threaded. Default backend: %s.\n",
      GemmBackendName(default_backend));
  std::printf("\nMedian wall time, causal vs unmasked:\n%s", causal_times.c_str());
  if (args.sweep) Sweep(args, best.cpu);
  return 0;
}

}  // namespace
}  // namespace tessera::kernels

int main(int argc, char** argv) { return tessera::kernels::Main(argc, argv); }
