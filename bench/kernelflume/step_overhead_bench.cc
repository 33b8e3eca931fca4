// step_overhead_bench: what a KernelFlume disaggregated decode step costs over the monolithic
// step, per layer, at several context lengths.
//
// Shape: one decoder layer's attention, llama-3.1-8b-like (32 query heads, 8 KV heads, D 128;
// --shape llama8b, the default) or the tiny-gqa preset's (8 heads, 2 KV heads, D 64).
// For each --context N:
//   monolithic     a local token-major KV cache of N random tokens; a step does what
//                  models::LocalKvCache does for one new token: copy its K and V into the cache
//                  and run kernels::PartialAttention (Tq = 1, causal) over the N + 1 tokens.
//   disaggregated  an AttentionCluster with one attention node (a process, or in this one);
//                  the same N tokens stored on the node through DisaggregatedAttention::
//                  AppendOnly (the normal kAppend protocol, chunks of 1024); a step is
//                  BeginLayer (query sent) + FinishLayer (self partial, append, the node's
//                  partial awaited, LSE merge).
// Placement ("1 core per process, 2 processes"): with --node-command TESSERA_BIN (ucx) the node
// is a `tessera kernelflume attn-node` process on CPU 1 and every thread of this process is on
// CPU 0. Without it the node is in this process: the calling thread (weight side: query, self
// partial, merge) on CPU 0, every other thread -- the transports' progress threads, including
// the node's, which runs its PartialAttention -- on CPU 1.
// Validation first: one step of each must agree within 1e-5 (relative, norm-wise), else exit 1.
// Then --steps steps of each, interleaved (mono, disagg, mono, ...), each appending one token;
// p50 and p99 of the per-step wall time. A transport that cannot start (ucx where it is a stub)
// is reported as unavailable and the run ends with exit code 0.
//
// Usage: bench_step_overhead [--context 4096,16384,65536] [--steps 40] [--transport fake|ucx]
//                            [--shape llama8b|tiny-gqa] [--node-command TESSERA_BIN]
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "core/tensor_error.h"
#include "kernelflume/attention_cluster.h"
#include "kernelflume/disaggregated_attention.h"
#include "kernels/decode_attention.h"

namespace tessera::kernelflume {
namespace {

struct Args {
  std::vector<int64_t> contexts = {4096, 16384, 65536};
  int steps = 40;
  std::string transport = "fake";
  std::string shape = "llama8b";
  std::string node_command;  // `tessera` binary: the node runs as `tessera kernelflume attn-node`
};

constexpr int64_t kFillChunk = 1024;

// Uniform floats in [-1, 1) from splitmix64: fast enough to fill hundreds of MB.
class FastRandom {
 public:
  explicit FastRandom(uint64_t seed) : s_(seed) {}
  float Next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
  }
  void Fill(float* p, int64_t n) {
    for (int64_t i = 0; i < n; ++i) p[i] = Next();
  }

 private:
  uint64_t s_;
};

bool PinThread(pid_t tid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(tid, sizeof(set), &set) == 0;
}

// Calling thread -> CPU 0; every other thread of the process -> `others_cpu`.
bool PinThreads(int others_cpu) {
  bool ok = PinThread(0, 0);
  const pid_t self = static_cast<pid_t>(gettid());
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    const pid_t tid = static_cast<pid_t>(std::atoi(e.path().filename().c_str()));
    if (tid != self) ok = PinThread(tid, others_cpu) && ok;
  }
  return ok;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

// The monolithic side: a token-major cache (capacity, Hkv, D) as LocalKvCache holds it.
struct Monolithic {
  kernels::DecodeAttentionShape shape;
  int64_t len = 0, row = 0;
  std::vector<float> k, v;

  core::Status Step(const float* q, const float* nk, const float* nv, float* o, float* lse) {
    std::memcpy(k.data() + len * row, nk, row * sizeof(float));
    std::memcpy(v.data() + len * row, nv, row * sizeof(float));
    ++len;
    const kernels::KvSegment seg{k.data(), v.data(), len, row, shape.head_dim};
    return kernels::PartialAttention(shape, q, std::span(&seg, 1), o, lse);
  }
};

void Die(const core::Status& st, const char* what) {
  std::fprintf(stderr, "%s: %s\n", what, st.ToString().c_str());
  std::exit(2);
}

// Runs one context length; false when the transport is unavailable (reported on stdout).
bool RunContext(const Args& args, const AttentionShape& s, int64_t n, FastRandom& rng) {
  const int64_t h = s.num_heads, hkv = s.num_kv_heads, d = s.head_dim, row = hkv * d;
  const int64_t capacity = n + args.steps + 2;
  AttentionClusterOptions co;
  co.num_nodes = 1;
  co.transport = args.transport;
  co.capacity_tokens = capacity;
  co.page_tokens = 256;
  const bool process = !args.node_command.empty();
  if (process) {
    // The node process inherits the spawning thread's CPU set: CPU 1. This process then moves
    // every one of its threads to CPU 0 (below), so each process has a core of its own.
    co.processes = true;
    co.node_command = {args.node_command, "kernelflume", "attn-node"};
    PinThread(0, 1);
  }
  auto cluster = AttentionCluster::Start(s, "bench", co);
  if (!cluster.ok()) {
    std::printf("| %ld | transport %s unavailable: %s | | | | | |\n", static_cast<long>(n),
                args.transport.c_str(), cluster.status().ToString().c_str());
    return false;
  }
  auto attn_or = (*cluster)->weight_node().OpenRequest(1);
  if (!attn_or.ok()) Die(attn_or.status(), "OpenRequest");
  DisaggregatedAttention& attn = **attn_or;

  Monolithic mono;
  mono.shape = {1, h, hkv, d, s.scale, true};
  mono.row = row;
  mono.k.resize(capacity * row);
  mono.v.resize(capacity * row);
  rng.Fill(mono.k.data(), n * row);
  rng.Fill(mono.v.data(), n * row);
  mono.len = n;
  for (int64_t pos = 0; pos < n; pos += kFillChunk) {
    const int64_t t = std::min(kFillChunk, n - pos);
    const core::Status st =
        attn.AppendOnly(0, pos, t, mono.k.data() + pos * row, mono.v.data() + pos * row);
    if (!st.ok()) Die(st, "AppendOnly");
  }
  PinThreads(process ? 0 : 1);

  std::vector<float> q(h * d), nk(row), nv(row), o_mono(h * d), lse(h), o_dis(h * d);
  auto disagg_step = [&](int64_t pos) {
    core::Status st = attn.BeginLayer(0, pos, 1, q.data());
    if (st.ok()) st = attn.FinishLayer(0, nk.data(), nv.data(), o_dis.data());
    if (!st.ok()) Die(st, "disaggregated step");
  };
  // Validation step (also the warm-up).
  rng.Fill(q.data(), h * d);
  rng.Fill(nk.data(), row);
  rng.Fill(nv.data(), row);
  int64_t pos = n;
  disagg_step(pos);
  if (core::Status st = mono.Step(q.data(), nk.data(), nv.data(), o_mono.data(), lse.data());
      !st.ok()) {
    Die(st, "monolithic step");
  }
  const double err = core::CompareTensors(o_dis, o_mono).max_rel;
  if (!(err <= 1e-5)) {
    std::fprintf(stderr, "validation failed at context %ld: max rel err %.2e > 1e-5\n",
                 static_cast<long>(n), err);
    std::exit(1);
  }
  ++pos;

  using Clock = std::chrono::steady_clock;
  std::vector<double> t_mono, t_dis;
  for (int i = 0; i < args.steps; ++i, ++pos) {
    rng.Fill(q.data(), h * d);
    rng.Fill(nk.data(), row);
    rng.Fill(nv.data(), row);
    const auto t0 = Clock::now();
    if (core::Status st = mono.Step(q.data(), nk.data(), nv.data(), o_mono.data(), lse.data());
        !st.ok()) {
      Die(st, "monolithic step");
    }
    const auto t1 = Clock::now();
    disagg_step(pos);
    const auto t2 = Clock::now();
    t_mono.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    t_dis.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
  }
  const double m50 = Percentile(t_mono, 0.5), m99 = Percentile(t_mono, 0.99);
  const double d50 = Percentile(t_dis, 0.5), d99 = Percentile(t_dis, 0.99);
  std::printf("| %ld | %.2e | %.0f | %.0f | %.0f | %.0f | %+.0f us (%+.1f%%) | %+.0f us |\n",
              static_cast<long>(n), err, m50, m99, d50, d99, d50 - m50, 100.0 * (d50 - m50) / m50,
              d99 - m99);
  return true;
}

std::vector<int64_t> ParseList(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::max<int64_t>(1, std::atoll(item.c_str())));
  return out;
}

bool ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--context") {
      a->contexts = ParseList(v);
    } else if (k == "--steps") {
      a->steps = std::max(1, std::atoi(v.c_str()));
    } else if (k == "--transport") {
      a->transport = v;
    } else if (k == "--shape") {
      a->shape = v;
    } else if (k == "--node-command") {
      a->node_command = v;
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && !a->contexts.empty() &&
         (a->shape == "llama8b" || a->shape == "tiny-gqa") &&
         (a->node_command.empty() || a->transport == "ucx");
}

int Main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) {
    std::fprintf(
        stderr,
        "usage: %s [--context 4096,16384,65536] [--steps 40] [--transport fake|ucx] "
        "[--shape llama8b|tiny-gqa] [--node-command TESSERA_BIN (ucx: the node as a process)]\n",
        argv[0]);
    return 1;
  }
  AttentionShape s;
  s.num_layers = 1;
  const bool llama = args.shape == "llama8b";
  s.num_heads = llama ? 32 : 8;
  s.num_kv_heads = llama ? 8 : 2;
  s.head_dim = llama ? 128 : 64;
  s.scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  std::printf(
      "\n### Disaggregated vs monolithic decode step (one layer), measured (this machine)\n"
      "shape %s: H=%d Hkv=%d D=%d; transport %s; %s; %d steps each, interleaved\n\n",
      llama ? "llama-3.1-8b-like" : "tiny-gqa", s.num_heads, s.num_kv_heads, s.head_dim,
      args.transport.c_str(),
      args.node_command.empty()
          ? "one in-process attention node; weight side pinned to CPU 0, transport/node "
            "threads to CPU 1"
          : "one attention-node process on CPU 1, this process (all threads) on CPU 0",
      args.steps);
  std::printf(
      "| context | max rel err | mono p50 us | mono p99 us | disagg p50 us | disagg p99 us | "
      "overhead p50 | overhead p99 |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  FastRandom rng(42);
  for (int64_t n : args.contexts) {
    if (!RunContext(args, s, n, rng)) return 0;
  }
  std::printf(
      "\nmono: copy K, V into a local cache + PartialAttention over context + 1 tokens. disagg: "
      "BeginLayer + FinishLayer of DisaggregatedAttention (query, node partial, reply, merge).\n");
  return 0;
}

}  // namespace
}  // namespace tessera::kernelflume

int main(int argc, char** argv) { return tessera::kernelflume::Main(argc, argv); }
