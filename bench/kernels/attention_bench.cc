// attention_bench: single-threaded SGEMM vs tiled attention forward/backward, side by side.
//
// 1. Validates the tiled kernels against the reference on small varlen problems (exit 1 on a
//    mismatch). 2. Measures SGEMM GFLOP/s on a square and two attention-like shapes; the best
//    is "peak". 3. Measures attention forward and backward GFLOP/s at --len tokens (one
//    sequence, --heads heads) for D = 128 and 64 and prints them as % of peak.
// FLOP convention: forward 4 * Lq * Lk * D per head, backward 10 * Lq * Lk * D (see
// attention.h). Each figure is the median over --repeats timed runs after one warm-up run.
// BLAS is set to one thread (one core per MPI rank); the process runs on the calling thread.
//
// Usage: bench_attention [--repeats N] [--heads H] [--len L] [--sweep]
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

// Median wall time in seconds of `repeats` calls of fn after one warm-up call.
double MedianSeconds(int repeats, const std::function<void()>& fn) {
  fn();
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  const size_t n = times.size();
  return n % 2 == 1 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
}

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

double GemmGflops(const Args& args, const GemmShape& s) {
  core::Rng rng(1);
  const std::vector<float> a = Random(rng, s.m * s.k), b = Random(rng, s.k * s.n);
  std::vector<float> c(s.m * s.n);
  const int64_t ldb = s.tb == Transpose::kNo ? s.n : s.k;
  const double sec = MedianSeconds(args.repeats, [&] {
    Check(Gemm(Transpose::kNo, s.tb, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), ldb, 0.0f,
               c.data(), s.n),
          "gemm");
  });
  return 2.0 * s.m * s.n * s.k / sec * 1e-9;
}

struct AttentionTimes {
  double fwd_gflops, bwd_gflops;
};

AttentionTimes TimeAttention(const Args& args, int64_t d, const AttentionTiling& fwd_tiling,
                             const AttentionBackwardOptions& bwd_options, bool run_fwd = true,
                             bool run_bwd = true) {
  const int64_t h = args.heads, l = args.len;
  const std::vector<int64_t> cu = {0, l};
  const AttentionShape shape{h, d, cu, cu, std::nullopt};
  core::Rng rng(3);
  const int64_t n = l * h * d;
  const std::vector<float> q = Random(rng, n), k = Random(rng, n), v = Random(rng, n),
                           d_o = Random(rng, n);
  std::vector<float> o(n), lse(l * h), dq(n), dk(n), dv(n);
  Check(AttentionForward(shape, q.data(), k.data(), v.data(), o.data(), lse.data()), "forward");
  const double flops = static_cast<double>(l) * l * d * h;
  AttentionTimes out{0.0, 0.0};
  if (run_fwd) {
    const double sec = MedianSeconds(args.repeats, [&] {
      Check(AttentionForward(shape, q.data(), k.data(), v.data(), o.data(), lse.data(), fwd_tiling),
            "forward");
    });
    out.fwd_gflops = 4.0 * flops / sec * 1e-9;
  }
  if (run_bwd) {
    const double sec = MedianSeconds(args.repeats, [&] {
      Check(AttentionBackward(shape, q.data(), k.data(), v.data(), o.data(), d_o.data(), lse.data(),
                              dq.data(), dk.data(), dv.data(), bwd_options),
            "backward");
    });
    out.bwd_gflops = 10.0 * flops / sec * 1e-9;
  }
  return out;
}

std::string Pct(double part, double whole) { return core::Fixed(100.0 * part / whole, 1) + "%"; }

void Sweep(const Args& args, double peak) {
  core::Table fwd({"D", "block_q", "block_k", "fwd GFLOP/s", "% peak"});
  core::Table bwd({"D", "block_q", "block_k", "bwd GFLOP/s", "% peak"});
  for (int64_t d : {128, 64}) {
    for (int64_t bq : {64, 128, 256}) {
      for (int64_t bk : {256, 512, 1024}) {
        const AttentionTimes t = TimeAttention(args, d, {bq, bk}, {}, true, false);
        fwd.AddRow({std::to_string(d), std::to_string(bq), std::to_string(bk),
                    core::Fixed(t.fwd_gflops, 1), Pct(t.fwd_gflops, peak)});
      }
    }
    for (int64_t bq : {128, 256, 512}) {
      for (int64_t bk : {128, 256, 512}) {
        AttentionBackwardOptions opts;
        opts.tiling = {bq, bk};
        const AttentionTimes t = TimeAttention(args, d, {}, opts, false, true);
        bwd.AddRow({std::to_string(d), std::to_string(bq), std::to_string(bk),
                    core::Fixed(t.bwd_gflops, 1), Pct(t.bwd_gflops, peak)});
      }
    }
  }
  std::printf("\nTile sweep (forward)\n%s\nTile sweep (backward)\n%s", fwd.Render().c_str(),
              bwd.Render().c_str());
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
      "attention_bench (measured on this machine): BLAS %s, %d BLAS thread(s), median of "
      "%d repeats\n",
      BlasDescription().c_str(), BlasNumThreads(), args.repeats);
  if (!Validate(128) || !Validate(64)) return 1;

  const GemmShape shapes[] = {
      {"sgemm 2048x2048x2048 NN", 2048, 2048, 2048, Transpose::kNo},
      {"sgemm 4096x4096x128 NT (QK^T-like)", 4096, 4096, 128, Transpose::kYes},
      {"sgemm 4096x128x4096 NN (PV-like)", 4096, 128, 4096, Transpose::kNo}};
  std::vector<double> gemm_gflops;
  for (const GemmShape& s : shapes) gemm_gflops.push_back(GemmGflops(args, s));
  const double peak = *std::max_element(gemm_gflops.begin(), gemm_gflops.end());

  core::Table table({"kernel", "GFLOP/s", "% of best SGEMM"});
  for (size_t i = 0; i < gemm_gflops.size(); ++i) {
    table.AddRow({shapes[i].name, core::Fixed(gemm_gflops[i], 1), Pct(gemm_gflops[i], peak)});
  }
  for (int64_t d : {128, 64}) {
    const AttentionTimes t = TimeAttention(args, d, {}, {});
    const std::string tag = "L=" + std::to_string(args.len) + " H=" + std::to_string(args.heads) +
                            " D=" + std::to_string(d);
    table.AddRow({"attention fwd " + tag, core::Fixed(t.fwd_gflops, 1), Pct(t.fwd_gflops, peak)});
    table.AddRow({"attention bwd " + tag, core::Fixed(t.bwd_gflops, 1), Pct(t.bwd_gflops, peak)});
  }
  std::printf("\n%s", table.Render().c_str());
  std::printf("FLOPs: fwd 4*Lq*Lk*D per head, bwd 10*Lq*Lk*D per head; single-threaded.\n");
  if (args.sweep) Sweep(args, peak);
  return 0;
}

}  // namespace
}  // namespace tessera::kernels

int main(int argc, char** argv) { return tessera::kernels::Main(argc, argv); }
