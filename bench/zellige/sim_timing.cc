// Simulate (on sim::Simulator) vs SimulateReference (the plain loops) on one random
// N-rank plan, profile-priced, without and with contention: checks that both give the
// same makespan, then times them interleaved and prints the medians and their ratio.
//   bench_sim_timing [--ranks 256] [--seqs 1024] [--layers 28] [--repeats 21]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <vector>

#include "core/rng.h"
#include "zellige/cost_model_profile.h"
#include "zellige/profile.h"
#include "zellige/simulator.h"
#include "zellige/simulator_reference.h"

using namespace tessera;
using namespace tessera::zellige;

namespace {

Profile MakeProfile(int ranks, int layers, double solo_speedup) {
  Profile p;
  p.provenance = "synthetic timing profile";
  p.ranks = ranks;
  p.repeats = 1;
  p.model = ProfileModel{16, 256, 4, 64, layers, 1024};
  p.base_bytes = 5e7;
  p.usable_bytes_per_rank = 1e12;
  p.solo_speedup = solo_speedup;
  for (int d = 1; d <= 32 && d <= ranks; d *= 2) {
    for (const ParallelConfig& c : ConfigsOfDegree(d, 4)) {
      ConfigPrices cp;
      cp.config = c;
      cp.fwd_fit = {d == 1 ? 0 : 1e-3, 2e-6 / d, 1e-10 / d};
      cp.bwd_fit = {d == 1 ? 0 : 2e-3, 4e-6 / d, 2.5e-10 / d};
      cp.mem_fit = {1e5, 20000.0 / d};
      for (int64_t L : {256, 1024, 4096}) {
        const double l = static_cast<double>(L);
        cp.points.push_back({L, 1, EvalQuadratic(cp.fwd_fit, l), EvalQuadratic(cp.bwd_fit, l),
                             EvalLine(cp.mem_fit, l)});
      }
      p.configs.push_back(cp);
    }
  }
  return p;
}

// Whole sequences on random ranks, one in eight split over an aligned block of 2..32 ranks.
Plan MakePlan(core::Rng& rng, int ranks, int seqs) {
  Plan plan{"timing", ranks, {}};
  for (int s = 0; s < seqs; ++s) {
    int d = rng.Below(8) == 0 ? 2 << rng.Below(5) : 1;
    d = std::min(d, ranks);
    const std::vector<ParallelConfig> configs = ConfigsOfDegree(d, 4);
    std::vector<int> r(d);
    std::iota(r.begin(), r.end(), static_cast<int>(rng.Below(ranks / d)) * d);
    plan.placements.push_back({s, configs[rng.Below(configs.size())], r});
  }
  return plan;
}

template <typename F>
double TimeS(F f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Simulate vs SimulateReference timing"};
  int ranks = 256, seqs = 1024, layers = 28, repeats = 21;
  app.add_option("--ranks", ranks);
  app.add_option("--seqs", seqs);
  app.add_option("--layers", layers);
  app.add_option("--repeats", repeats);
  CLI11_PARSE(app, argc, argv);
  core::Rng rng(5);
  const Plan plan = MakePlan(rng, ranks, seqs);
  workload::Batch batch;
  batch.name = "timing";
  for (int s = 0; s < seqs; ++s) {
    batch.sequences.push_back({});
    batch.sequences.back().id = s;
    batch.sequences.back().tokens = 256 + static_cast<int64_t>(rng.Below(16000));
  }
  std::printf("%d ranks, %d sequences, %d layers, %d repeats (median; interleaved, 1 thread)\n\n",
              ranks, seqs, layers, repeats);
  std::printf("| contention | ops | reference ms | sim/ ms | sim / reference |\n");
  std::printf("|---|---|---|---|---|\n");
  for (double speedup : {1.0, 1.3}) {
    ProfileCostModel cm(std::make_shared<const Profile>(MakeProfile(ranks, layers, speedup)));
    auto a = Simulate(plan, batch, cm);
    auto b = SimulateReference(plan, batch, cm);
    if (!a.ok() || !b.ok()) {
      std::fprintf(stderr, "simulate failed: %s %s\n", a.status().ToString().c_str(),
                   b.status().ToString().c_str());
      return 2;
    }
    if (std::abs(a->makespan_s - b->makespan_s) > 1e-9 * b->makespan_s) {
      std::fprintf(stderr, "makespans differ: %.17g vs %.17g\n", a->makespan_s, b->makespan_s);
      return 2;
    }
    std::vector<double> ta, tb;
    for (int i = 0; i < repeats; ++i) {
      tb.push_back(TimeS([&] { (void)SimulateReference(plan, batch, cm); }));
      ta.push_back(TimeS([&] { (void)Simulate(plan, batch, cm); }));
    }
    std::printf("| %s | %d | %.2f | %.2f | %.3f |\n", cm.HasContention() ? "yes" : "no",
                2 * layers * seqs, 1e3 * Median(tb), 1e3 * Median(ta), Median(ta) / Median(tb));
  }
  return 0;
}
