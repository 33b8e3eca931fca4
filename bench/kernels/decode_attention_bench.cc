// decode_attention_bench: how close single-threaded decode attention (PartialAttention, one
// query token) comes to the memory bandwidth one core can stream.
//
// 1. Validates PartialAttention against PartialAttentionReference on small problems (both KV
//    layouts, several segments, causal and not, Tq = 1 and 5; exit 1 on a mismatch).
// 2. For each --context length and both layouts (token-major: one (L, Hkv, D) buffer;
//    head-major: pages of --page-tokens tokens, each (Hkv, page, D)), times one decode call
//    (Tq = 1) and reports the KV bytes it reads (K and V, 2 * L * Hkv * D * 4), the median time
//    and GB/s; then times a plain vectorised sum over a separate buffer of the same size (one
//    core's streaming-read bandwidth) and prints kernel GB/s / streaming GB/s.
// Caches are flushed (a 256 MiB buffer is read) before every timed call of either kind, so
// both read from DRAM. Each figure is the median over --repeats timed calls after a warm-up.
// BLAS is set to one thread; everything runs on the calling thread.
//
// Usage: bench_decode_attention [--context 32768,65536] [--heads 8 --kv-heads 2 --head-dim 64]
//                               [--page-tokens 256] [--repeats N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "core/rng.h"
#include "kernels/decode_attention.h"
#include "kernels/gemm.h"

namespace tessera::kernels {
namespace {

struct Args {
  std::vector<int64_t> contexts = {32768, 65536};
  int64_t heads = 8, kv_heads = 2, head_dim = 64, page_tokens = 256;
  int repeats = 9;
};

void Check(const core::Status& st, const char* what) {
  if (!st.ok()) {
    std::fprintf(stderr, "%s failed: %s\n", what, st.ToString().c_str());
    std::exit(2);
  }
}

std::vector<float> Random(core::Rng& rng, int64_t n) {
  std::vector<float> out(n);
  for (float& x : out) x = static_cast<float>(rng.Normal());
  return out;
}

// Sum of n floats, vectorised (AVX-512 / AVX2 / baseline chosen at load time). Also used to
// flush the caches.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) float StreamSum(
    const float* x, int64_t n) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  return sum;
}

volatile float g_sink = 0.0f;

class CacheFlusher {
 public:
  CacheFlusher() : buf_(64 << 20, 1.0f) {}  // 256 MiB
  void Flush() { g_sink = g_sink + StreamSum(buf_.data(), static_cast<int64_t>(buf_.size())); }

 private:
  std::vector<float> buf_;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Median seconds of fn over `repeats` calls after one warm-up, each preceded by a cache flush.
double MedianSeconds(int repeats, CacheFlusher& flusher, const std::function<void()>& fn) {
  fn();
  std::vector<double> s;
  for (int i = 0; i < repeats; ++i) {
    flusher.Flush();
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return Median(s);
}

// A KV cache of `len` tokens: token-major in one buffer, or head-major pages.
struct Cache {
  std::vector<float> k, v;
  std::vector<KvSegment> segments;
};

Cache MakeCache(core::Rng& rng, int64_t len, int64_t hkv, int64_t d, bool head_major,
                int64_t page) {
  Cache c;
  if (!head_major) {
    c.k = Random(rng, len * hkv * d);
    c.v = Random(rng, len * hkv * d);
    c.segments.push_back({c.k.data(), c.v.data(), len, hkv * d, d});
    return c;
  }
  const int64_t pages = (len + page - 1) / page;
  c.k = Random(rng, pages * page * hkv * d);
  c.v = Random(rng, pages * page * hkv * d);
  for (int64_t p = 0; p < pages; ++p) {
    const int64_t off = p * page * hkv * d;
    c.segments.push_back(
        {c.k.data() + off, c.v.data() + off, std::min(page, len - p * page), d, page * d});
  }
  return c;
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

bool Validate(const Args& args) {
  core::Rng rng(5);
  bool ok = true;
  for (bool head_major : {false, true}) {
    for (int64_t tq : {1, 5}) {
      for (bool causal : {false, true}) {
        const int64_t h = args.heads, hkv = args.kv_heads, d = args.head_dim;
        const Cache c = MakeCache(rng, 1000, hkv, d, head_major, 300);
        const std::vector<float> q = Random(rng, tq * h * d);
        const DecodeAttentionShape shape{tq, h, hkv, d, std::nullopt, causal};
        std::vector<float> o(q.size()), lse(tq * h), o_ref(q.size()), lse_ref(tq * h);
        Check(PartialAttention(shape, q.data(), c.segments, o.data(), lse.data()), "kernel");
        Check(PartialAttentionReference(shape, q.data(), c.segments, o_ref.data(), lse_ref.data()),
              "reference");
        const double err = std::max(MaxRelErr(o, o_ref), MaxRelErr(lse, lse_ref));
        std::printf("validate %s Tq=%ld %s: max rel err %.1e -> %s\n",
                    head_major ? "head-major " : "token-major", static_cast<long>(tq),
                    causal ? "causal" : "full  ", err, err <= 1e-5 ? "ok" : "MISMATCH");
        ok = ok && err <= 1e-5;
      }
    }
  }
  return ok;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

std::vector<int64_t> ParseList(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::max<int64_t>(1, std::atoll(item.c_str())));
  return out;
}

bool ParseArgs(int argc, char** argv, Args* args) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return false;
    const char* value = argv[++i];
    if (a == "--context") {
      args->contexts = ParseList(value);
    } else if (a == "--heads") {
      args->heads = std::max(1, std::atoi(value));
    } else if (a == "--kv-heads") {
      args->kv_heads = std::max(1, std::atoi(value));
    } else if (a == "--head-dim") {
      args->head_dim = std::max(1, std::atoi(value));
    } else if (a == "--page-tokens") {
      args->page_tokens = std::max(1, std::atoi(value));
    } else if (a == "--repeats") {
      args->repeats = std::max(1, std::atoi(value));
    } else {
      return false;
    }
  }
  return !args->contexts.empty() && args->heads % args->kv_heads == 0;
}

int Main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) {
    std::fprintf(stderr,
                 "usage: %s [--context 32768,65536] [--heads 8 --kv-heads 2 --head-dim 64] "
                 "[--page-tokens 256] [--repeats N]\n",
                 argv[0]);
    return 1;
  }
  Check(SetBlasNumThreads(1), "SetBlasNumThreads");
  if (!Validate(args)) return 1;
  const int64_t h = args.heads, hkv = args.kv_heads, d = args.head_dim;
  std::printf(
      "\n### Decode attention (Tq = 1), measured (this machine): %s, 1 thread\n"
      "H=%ld Hkv=%ld D=%ld, head-major pages of %ld tokens; median of %d calls, caches flushed "
      "before each\n\n",
      CpuModel().c_str(), static_cast<long>(h), static_cast<long>(hkv), static_cast<long>(d),
      static_cast<long>(args.page_tokens), args.repeats);
  std::printf(
      "| context | layout | KV MB read | median ms | kernel GB/s | stream GB/s | kernel / stream "
      "|\n|---:|---|---:|---:|---:|---:|---:|\n");
  CacheFlusher flusher;
  core::Rng rng(9);
  for (int64_t len : args.contexts) {
    const double bytes = 2.0 * static_cast<double>(len) * hkv * d * sizeof(float);
    // Streaming baseline over a separate buffer of the same size.
    const std::vector<float> stream(static_cast<size_t>(bytes / sizeof(float)), 0.5f);
    const double stream_s = MedianSeconds(args.repeats, flusher, [&] {
      g_sink = g_sink + StreamSum(stream.data(), static_cast<int64_t>(stream.size()));
    });
    for (bool head_major : {false, true}) {
      const Cache c = MakeCache(rng, len, hkv, d, head_major, args.page_tokens);
      const std::vector<float> q = Random(rng, h * d);
      std::vector<float> o(h * d), lse(h);
      const DecodeAttentionShape shape{1, h, hkv, d, std::nullopt, false};
      const double s = MedianSeconds(args.repeats, flusher, [&] {
        Check(PartialAttention(shape, q.data(), c.segments, o.data(), lse.data()), "kernel");
      });
      const double gbs = bytes / s * 1e-9, stream_gbs = bytes / stream_s * 1e-9;
      std::printf("| %ld | %s | %.1f | %.3f | %.1f | %.1f | %.0f%% |\n", static_cast<long>(len),
                  head_major ? "head-major pages" : "token-major", bytes * 1e-6, s * 1e3, gbs,
                  stream_gbs, 100.0 * gbs / stream_gbs);
    }
  }
  std::printf(
      "\nKV MB read: K and V, 2 * context * Hkv * D * 4 bytes. stream GB/s: a vectorised sum over "
      "a separate buffer of the same size (one core's streaming-read bandwidth).\n");
  return 0;
}

}  // namespace
}  // namespace tessera::kernels

int main(int argc, char** argv) { return tessera::kernels::Main(argc, argv); }
