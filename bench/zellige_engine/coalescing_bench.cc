// bench_coalescing: what coalescing a rank's whole sequences into ONE varlen attention call
// (the AttentionEngine's segments, attention_engine.h) buys over one kernel call per sequence.
//
//   mpirun -np 2 bench_coalescing [--repeats N] [--seed S]
//
// Batch (CPU-scaled, seeded): 50 images of 64..256 tokens and 2 videos of 2000..4000 tokens,
// H = 4 heads of D = 64; every sequence is whole (config (1,1,1)) and placed on the rank with
// the least attention work so far (greedy on L^2, longest first). Per repeat, every rank times
//   (a) coalesced: AttentionEngine::Forward + Backward (one varlen call per rank each way),
//   (b) per-sequence: kernels::AttentionForward once per local sequence, then
//       AttentionBackward once per local sequence, on the same packed buffers
//       (single-sequence shapes at each sequence's row offset),
//   (c) kernel only: ONE varlen AttentionForward + AttentionBackward over the same packed
//       buffers without the engine (separates the kernel's coalescing from the engine's
//       buffer work).
// A repeat's time is the slowest rank's (a step waits for it); the headline figure is the
// median over repeats of (b) / (a). Per rank, the median ratios (b)/(a) and (b)/(c) of wall
// time and of process CPU time are printed too (CPU time is less disturbed by other jobs on a
// shared machine; the load average is printed at start and end). Before timing, all
// variants' O, dQ, dK, dV are compared with (a) (max abs difference must be <= 1e-6 * max
// |value|); the bench exits 1 otherwise. Prints markdown tables on rank 0, labelled as
// measured on this machine.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "comm/mpi_environment.h"
#include "core/rng.h"
#include "kernels/attention.h"
#include "kernels/gemm.h"
#include "zellige/engine/attention_engine.h"
#include "zellige/engine/engine_check.h"

namespace tessera::zellige::engine {
namespace {

constexpr int kHeads = 4;
constexpr int kHeadDim = 64;

struct Outputs {
  std::vector<float> o, dq, dk, dv;
};

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

core::Status RunCoalesced(AttentionEngine& engine, const LocalData& d, Outputs* out) {
  ForwardState state;
  RETURN_IF_ERROR(engine.Forward(d.q, d.k, d.v, out->o, &state));
  return engine.Backward(state, d.q, d.k, d.v, out->o, d.d_o, out->dq, out->dk, out->dv);
}

core::Status RunPerSequence(const AttentionEngine& engine, const LocalData& d,
                            std::vector<float>* lse, Outputs* out) {
  const int64_t row = static_cast<int64_t>(kHeads) * kHeadDim;
  // All forwards, then all backwards, as a model's step orders them (running each sequence's
  // backward right after its forward would keep its data in cache, which no real step does).
  for (int pass = 0; pass < 2; ++pass) {
    for (const LocalPlacement& lp : engine.local_placements()) {
      const int64_t cu[2] = {0, lp.size()};
      kernels::AttentionShape shape;
      shape.num_heads = kHeads;
      shape.head_dim = kHeadDim;
      shape.cu_seqlens_q = cu;
      shape.cu_seqlens_k = cu;
      const int64_t off = lp.offset * row;
      float* l = lse->data() + lp.offset * kHeads;
      if (pass == 0) {
        RETURN_IF_ERROR(kernels::AttentionForward(shape, d.q.data() + off, d.k.data() + off,
                                                  d.v.data() + off, out->o.data() + off, l));
      } else {
        RETURN_IF_ERROR(kernels::AttentionBackward(shape, d.q.data() + off, d.k.data() + off,
                                                   d.v.data() + off, out->o.data() + off,
                                                   d.d_o.data() + off, l, out->dq.data() + off,
                                                   out->dk.data() + off, out->dv.data() + off));
      }
    }
  }
  return core::Status::Ok();
}

// (c): one varlen call over the rank's packed buffers (the local placements are contiguous).
core::Status RunOneVarlenCall(const AttentionEngine& engine, const LocalData& d,
                              std::vector<float>* lse, Outputs* out) {
  std::vector<int64_t> cu = {0};
  for (const LocalPlacement& lp : engine.local_placements()) cu.push_back(cu.back() + lp.size());
  kernels::AttentionShape shape;
  shape.num_heads = kHeads;
  shape.head_dim = kHeadDim;
  shape.cu_seqlens_q = cu;
  shape.cu_seqlens_k = cu;
  RETURN_IF_ERROR(kernels::AttentionForward(shape, d.q.data(), d.k.data(), d.v.data(),
                                            out->o.data(), lse->data()));
  return kernels::AttentionBackward(shape, d.q.data(), d.k.data(), d.v.data(), out->o.data(),
                                    d.d_o.data(), lse->data(), out->dq.data(), out->dk.data(),
                                    out->dv.data());
}

// max |a - b| / max |a| over the four tensors (worst tensor).
double MaxRelDiff(const Outputs& a, const Outputs& b) {
  double worst = 0;
  for (auto [x, y] : {std::pair{&a.o, &b.o}, {&a.dq, &b.dq}, {&a.dk, &b.dk}, {&a.dv, &b.dv}}) {
    double diff = 0, norm = 0;
    for (size_t i = 0; i < x->size(); ++i) {
      diff = std::max(diff, static_cast<double>(std::fabs((*x)[i] - (*y)[i])));
      norm = std::max(norm, static_cast<double>(std::fabs((*x)[i])));
    }
    worst = std::max(worst, norm > 0 ? diff / norm : diff);
  }
  return worst;
}

double CpuNow() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::string LoadAverage() {
  double l[3] = {0, 0, 0};
  if (getloadavg(l, 3) != 3) return "unknown";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f %.2f %.2f", l[0], l[1], l[2]);
  return buf;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int Run(comm::Communicator& world, int repeats, uint64_t seed) {
  const int n = world.size();
  const std::string load_start = LoadAverage();
  core::Rng rng(seed);
  std::vector<int64_t> tokens;
  for (int i = 0; i < 50; ++i) tokens.push_back(64 + static_cast<int64_t>(rng.Below(193)));
  for (int i = 0; i < 2; ++i) tokens.push_back(2000 + static_cast<int64_t>(rng.Below(2001)));
  workload::Batch batch = MakeBatch(tokens);
  zellige::Plan plan;
  plan.planner = "greedy-whole";
  plan.num_ranks = n;
  std::vector<int> order(tokens.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return tokens[a] > tokens[b]; });
  std::vector<double> work(n, 0.0);
  std::vector<int64_t> rank_tokens(n, 0);
  std::vector<int> rank_seqs(n, 0);
  for (int s : order) {
    const int r = static_cast<int>(std::min_element(work.begin(), work.end()) - work.begin());
    work[r] += static_cast<double>(tokens[s]) * static_cast<double>(tokens[s]);
    rank_tokens[r] += tokens[s];
    ++rank_seqs[r];
    zellige::Placement p;
    p.seq = s;
    p.ranks = {r};
    plan.placements.push_back(p);
  }

  auto engine_or = AttentionEngine::Create(plan, batch, kHeads, kHeadDim, &world);
  if (!engine_or.ok()) {
    std::fprintf(stderr, "bench_coalescing: %s\n", engine_or.status().ToString().c_str());
    return 1;
  }
  AttentionEngine& engine = **engine_or;
  const LocalData data = MakeLocalData(engine, seed);
  const size_t elems = static_cast<size_t>(engine.local_tokens()) * kHeads * kHeadDim;
  Outputs a{std::vector<float>(elems), std::vector<float>(elems), std::vector<float>(elems),
            std::vector<float>(elems)};
  Outputs b = a, c = a;
  std::vector<float> lse(static_cast<size_t>(engine.local_tokens()) * kHeads);

  // Validate first.
  core::Status st = RunCoalesced(engine, data, &a);
  if (st.ok()) st = RunPerSequence(engine, data, &lse, &b);
  if (st.ok()) st = RunOneVarlenCall(engine, data, &lse, &c);
  if (!st.ok()) world.Abort(st);
  std::vector<double> rels(n, 0.0);
  rels[world.rank()] = std::max(MaxRelDiff(a, b), MaxRelDiff(a, c));
  if (!world.AllReduceSum(std::span<double>(rels)).ok()) return 1;
  const double worst_rel = *std::max_element(rels.begin(), rels.end());
  if (!(worst_rel <= 1e-6)) {
    if (world.rank() == 0)
      std::fprintf(stderr, "bench_coalescing: coalesced vs per-sequence differ: rel %.3g\n",
                   worst_rel);
    return 1;
  }

  // Time: per repeat, (a), (b), (c), each started after a barrier; slowest rank counts.
  constexpr int kVariants = 3;
  const char* names[kVariants] = {"(a) coalesced (engine, one varlen call per rank)",
                                  "(b) one kernel call per sequence",
                                  "(c) one varlen kernel call, no engine"};
  const char* calls[kVariants] = {"2", "2 x sequences", "2"};
  std::vector<std::vector<double>> slowest(kVariants);  // per variant, per repeat
  std::vector<double> ratio;                            // (b)/(a), slowest rank
  // Per rank: ratios (b)/(a) and (b)/(c), wall and CPU.
  std::vector<std::vector<double>> ba_wall(n), ba_cpu(n), bc_wall(n), bc_cpu(n);
  for (int r = 0; r < repeats; ++r) {
    std::vector<double> t(2 * kVariants * n, 0.0);  // [variant][rank] wall, then cpu
    for (int v = 0; v < kVariants && st.ok(); ++v) {
      st = world.Barrier();
      const double t0 = Now(), c0 = CpuNow();
      if (st.ok() && v == 0) st = RunCoalesced(engine, data, &a);
      if (st.ok() && v == 1) st = RunPerSequence(engine, data, &lse, &b);
      if (st.ok() && v == 2) st = RunOneVarlenCall(engine, data, &lse, &c);
      t[v * n + world.rank()] = Now() - t0;
      t[(kVariants + v) * n + world.rank()] = CpuNow() - c0;
    }
    if (st.ok()) st = world.AllReduceSum(std::span<double>(t));
    if (!st.ok()) world.Abort(st);
    for (int v = 0; v < kVariants; ++v)
      slowest[v].push_back(*std::max_element(t.begin() + v * n, t.begin() + (v + 1) * n));
    ratio.push_back(slowest[1].back() / slowest[0].back());
    auto wall = [&](int v, int q) { return t[v * n + q]; };
    auto cpu = [&](int v, int q) { return t[(kVariants + v) * n + q]; };
    for (int q = 0; q < n; ++q) {
      ba_wall[q].push_back(wall(1, q) / wall(0, q));
      ba_cpu[q].push_back(cpu(1, q) / cpu(0, q));
      bc_wall[q].push_back(wall(1, q) / wall(2, q));
      bc_cpu[q].push_back(cpu(1, q) / cpu(2, q));
    }
  }

  if (world.rank() == 0) {
    std::printf("## Coalesced vs per-sequence attention (measured on this machine)\n\n");
    std::printf(
        "%d ranks (MPI), H = %d, D = %d, fp32, forward + backward; batch: 50 images of "
        "64..256 tokens + 2 videos of 2000..4000 tokens (seed %llu), whole sequences, "
        "greedy placement; %d repeats, slowest rank per repeat.\n\n",
        n, kHeads, kHeadDim, static_cast<unsigned long long>(seed), repeats);
    std::printf(
        "| rank | sequences | tokens | (b)/(a) wall | (b)/(a) CPU | (b)/(c) wall | (b)/(c) CPU "
        "|\n"
        "|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int r = 0; r < n; ++r)
      std::printf("| %d | %d | %lld | %.3f | %.3f | %.3f | %.3f |\n", r, rank_seqs[r],
                  static_cast<long long>(rank_tokens[r]), Median(ba_wall[r]), Median(ba_cpu[r]),
                  Median(bc_wall[r]), Median(bc_cpu[r]));
    std::printf("\n(per-rank medians over repeats)\n\n");
    std::printf(
        "| variant | median time (ms), slowest rank | kernel calls per rank (fwd+bwd) |\n"
        "|---|---:|---|\n");
    for (int v = 0; v < kVariants; ++v)
      std::printf("| %s | %.2f | %s |\n", names[v], 1e3 * Median(slowest[v]), calls[v]);
    std::printf(
        "\nmedian ratio (b)/(a) over repeats: **%.3f** (min %.3f, max %.3f); "
        "validation: max rel diff %.2g\n",
        Median(ratio), *std::min_element(ratio.begin(), ratio.end()),
        *std::max_element(ratio.begin(), ratio.end()), worst_rel);
    std::printf("load average (1, 5, 15 min): %s at start, %s at end\n", load_start.c_str(),
                LoadAverage().c_str());
  }
  return 0;
}

}  // namespace
}  // namespace tessera::zellige::engine

int main(int argc, char** argv) {
  int repeats = 7;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--repeats" && i + 1 < argc) {
      repeats = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: mpirun -np 2 bench_coalescing [--repeats N] [--seed S]\n");
      return 2;
    }
  }
  auto env = tessera::comm::MpiEnvironment::Create(&argc, &argv);
  if (!env.ok()) {
    std::fprintf(stderr, "bench_coalescing: %s\n", env.status().ToString().c_str());
    return 1;
  }
  if (!tessera::kernels::SetBlasNumThreads(1).ok()) return 1;
  return tessera::zellige::engine::Run((*env)->world(), repeats, seed);
}
