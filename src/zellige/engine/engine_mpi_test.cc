// runtime_mpi_test: the AttentionEngine under real MPI against the reference.
//
//   mpirun -np N runtime_mpi_test --mode=plans          fixed plans mixing whole, Ulysses,
//                                                       all-gather, ring and multi-axis
//                                                       configs over overlapping rank sets
//   mpirun -np 4 runtime_mpi_test --mode=random --count=200
//                                                       seeded random legal plans (no-deadlock)
// Every op has a 20 s watchdog (set_op_timeout_s): a deadlock becomes DeadlineExceeded and
// the job aborts. Each plan's verdict is reduced over all ranks; rank 0 prints PASS/FAIL;
// every rank exits 1 if any plan failed anywhere.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "comm/mpi_environment.h"
#include "kernels/gemm.h"
#include "zellige/engine/engine_check.h"

namespace tessera::zellige::engine {
namespace {

using zellige::ParallelConfig;
using zellige::Placement;
using zellige::Plan;

constexpr int kHeadDim = 64;
constexpr double kTol = 1e-5;

const auto P = &MakePlacement;

struct NamedCase {
  std::string name;
  RandomCase c;
};

std::vector<int> Range(int first, int n) {
  std::vector<int> r;
  for (int i = 0; i < n; ++i) r.push_back(first + i);
  return r;
}

// Fixed plans for n ranks (2, 4 or 8), 4 heads.
std::vector<NamedCase> FixedPlans(int n) {
  std::vector<NamedCase> out;
  // 1. Every config of degree n on all ranks, plus a whole sequence on each rank.
  {
    NamedCase nc{"all configs of degree " + std::to_string(n), {}};
    std::vector<int64_t> tokens;
    for (const ParallelConfig& c : zellige::ConfigsOfDegree(n, 4)) {
      nc.c.plan.placements.push_back(
          P(static_cast<int>(tokens.size()), c.q, c.h, c.k, Range(0, n)));
      tokens.push_back(97 + 61 * static_cast<int64_t>(tokens.size()) % 400);
    }
    for (int r = 0; r < n; ++r) {
      nc.c.plan.placements.push_back(P(static_cast<int>(tokens.size()), 1, 1, 1, {r}));
      tokens.push_back(16 + 37 * r);
    }
    nc.c.batch = MakeBatch(tokens);
    out.push_back(std::move(nc));
  }
  // 2. Overlapping sets, mixed primitives, reversed orders.
  {
    NamedCase nc{"mixed overlapping", {}};
    auto& ps = nc.c.plan.placements;
    std::vector<int64_t> tokens;
    auto add = [&](int q, int h, int k, std::vector<int> ranks, int64_t len) {
      ps.push_back(P(static_cast<int>(tokens.size()), q, h, k, std::move(ranks)));
      tokens.push_back(len);
    };
    add(1, 2, 1, {0, 1}, 200);
    add(1, 1, 2, {1, 0}, 131);
    add(2, 1, 1, {0, 1}, 64);
    add(1, 1, 1, {0}, 16);
    add(1, 1, 1, {1}, 45);
    add(1, 2, 1, {0, 1}, 90);  // coalesces with the first
    if (n >= 4) {
      add(1, 2, 2, {0, 1, 2, 3}, 512);
      add(2, 2, 1, {3, 2, 1, 0}, 257);
      add(2, 1, 2, {0, 1, 2, 3}, 180);
      add(1, 1, 2, {2, 3}, 77);
      add(1, 4, 1, {0, 1, 2, 3}, 100);
      add(1, 1, 1, {3}, 300);
    }
    if (n >= 8) {
      add(2, 2, 2, Range(0, 8), 400);
      add(1, 2, 2, {4, 5, 6, 7}, 150);
      add(1, 1, 8, Range(0, 8), 256);
      add(4, 1, 2, {7, 6, 5, 4, 3, 2, 1, 0}, 333);
      add(1, 1, 1, {6}, 64);
    }
    nc.c.batch = MakeBatch(tokens);
    out.push_back(std::move(nc));
  }
  // 3. A few seeded random plans.
  core::Rng rng(99 + n);
  for (int i = 0; i < 3; ++i)
    out.push_back({"random " + std::to_string(i), RandomPlan(rng, n, 4, 8, 16, 512)});
  for (auto& nc : out) {
    nc.c.plan.num_ranks = n;
    nc.c.plan.planner = "test";
  }
  return out;
}

bool RunCase(comm::Communicator& world, const std::string& name, const RandomCase& c, uint64_t seed,
             bool verbose) {
  auto res = RunEngineCheck(c.plan, c.batch, 4, kHeadDim, seed, &world);
  if (!res.ok()) {
    const auto code = res.status().code();
    if (code != core::StatusCode::kInvalidArgument) world.Abort(res.status().WithPrefix(name));
  }
  const bool ok = res.ok() && res->max_rel < kTol;
  if (!ok) {
    std::fprintf(stderr, "FAIL %s on rank %d: %s\n", name.c_str(), world.rank(),
                 res.ok() ? ("rel error " + std::to_string(res->max_rel)).c_str()
                          : res.status().ToString().c_str());
  }
  double v[2] = {ok ? 0.0 : 1.0, res.ok() ? res->max_rel : 0.0};
  // Failures are counted; the summed max_rel is an upper bound of the worst rank's error.
  core::Status st = world.AllReduceSum(std::span<double>(v, 2));
  if (!st.ok()) world.Abort(st);
  if (world.rank() == 0 && (verbose || v[0] > 0)) {
    std::printf("%s %s (sum of per-rank max rel err %.2e)\n", v[0] > 0 ? "FAIL" : "PASS",
                name.c_str(), v[1]);
    std::fflush(stdout);
  }
  return v[0] > 0;
}

int Main(int argc, char** argv) {
  auto env = comm::MpiEnvironment::Create(&argc, &argv);
  if (!env.ok()) {
    std::fprintf(stderr, "%s\n", env.status().ToString().c_str());
    return 2;
  }
  comm::Communicator& world = (*env)->world();
  world.set_op_timeout_s(20);
  if (!kernels::SetBlasNumThreads(1).ok()) return 2;  // one BLAS thread per rank
  std::string mode = "plans";
  int count = 200;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--mode=", 7) == 0) mode = argv[i] + 7;
    if (std::strncmp(argv[i], "--count=", 8) == 0) count = std::atoi(argv[i] + 8);
  }
  int failures = 0;
  if (mode == "plans") {
    for (const NamedCase& nc : FixedPlans(world.size()))
      failures += RunCase(world, nc.name, nc.c, 5, true);
  } else {
    core::Rng rng(2026);
    for (int i = 0; i < count; ++i) {
      RandomCase c = RandomPlan(rng, world.size(), 4, 8, 16, 256);
      failures += RunCase(world, "random plan " + std::to_string(i), c, 1000 + i, false);
    }
    if (world.rank() == 0) std::printf("%d random plans, %d failed\n", count, failures);
  }
  if (world.rank() == 0) std::printf("%s\n", failures == 0 ? "ALL PASS" : "FAILURES");
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace tessera::zellige::engine

int main(int argc, char** argv) { return tessera::zellige::engine::Main(argc, argv); }
