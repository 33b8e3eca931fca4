// runtime_dit_training_mpi_test: DistributedTrainStep under real MPI (2 ranks) against the
// single-process SmallDit loss curve (recomputed on every rank).
//
//   mpirun -np 2 runtime_dit_training_mpi_test
// Checks per step |loss - reference| <= 1e-5 * reference, that the loss falls, that the
// parameters are the same bits on both ranks, element-wise within lr * steps of the
// reference and norm-wise ||p - p_ref|| <= 1e-2 ||p_ref - p_init|| (see dit_training_test.cc
// for the justification). Prints PASS/FAIL on rank 0; exits 1 on
// any failure anywhere.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "comm/mpi_environment.h"
#include "kernels/gemm.h"
#include "zellige/engine/dit_training_test_util.h"

namespace tessera::zellige::engine {
namespace {

int Run(comm::Communicator& world) {
  using namespace testing;
  if (world.size() != 2) {
    std::fprintf(stderr, "runtime_dit_training_mpi_test: needs 2 ranks, got %d\n", world.size());
    return 1;
  }
  const TrainCase c = MixedCase();
  auto ref = ReferenceRun(c, kSteps);
  if (!ref.ok()) {
    std::fprintf(stderr, "reference: %s\n", ref.status().ToString().c_str());
    return 1;
  }
  auto dist = DistributedRun(c, kSteps, world);
  if (!dist.ok()) {
    std::fprintf(stderr, "distributed: %s\n", dist.status().ToString().c_str());
    world.Abort(dist.status());
    return 1;
  }
  auto init = models::SmallDit::Create(TinyConfig());
  if (!init.ok()) return 1;
  double worst_loss_rel = 0, worst_param = 0, diff2 = 0, update2 = 0;
  for (int s = 0; s < kSteps; ++s) {
    worst_loss_rel =
        std::max(worst_loss_rel, std::fabs(dist->losses[s] - ref->losses[s]) / ref->losses[s]);
  }
  for (size_t i = 0; i < ref->params.size(); ++i) {
    const double d = dist->params[i] - ref->params[i];
    const double u = ref->params[i] - init->Parameters()[i];
    worst_param = std::max(worst_param, std::fabs(d));
    diff2 += d * d;
    update2 += u * u;
  }
  const double norm_rel = std::sqrt(diff2 / update2);
  // Parameters equal across ranks: the sum over ranks of (p - p_rank0) must be 0.
  std::vector<float> p0 = dist->params;
  if (!world.Broadcast(p0, 0).ok()) return 1;
  double rank_diff = 0;
  for (size_t i = 0; i < p0.size(); ++i) rank_diff += std::fabs(p0[i] - dist->params[i]);
  const double bound = TinyAdamW().learning_rate * kSteps;
  const bool falls = dist->losses.back() < 0.9 * dist->losses.front();
  double fail = (worst_loss_rel <= 1e-5 && worst_param <= bound && norm_rel <= 1e-2 &&
                 rank_diff == 0 && falls)
                    ? 0.0
                    : 1.0;
  double v[1] = {fail};
  if (!world.AllReduceSum(std::span<double>(v, 1)).ok()) return 1;
  if (world.rank() == 0) {
    std::printf(
        "loss %.5f -> %.5f over %d steps; max loss rel diff %.3g (<= 1e-5); max param "
        "abs diff %.3g (<= %.3g), ||diff|| / ||update|| %.3g (<= 1e-2); ranks' params "
        "differ: %s\n%s\n",
        dist->losses.front(), dist->losses.back(), kSteps, worst_loss_rel, worst_param, bound,
        norm_rel, rank_diff == 0 ? "no" : "YES", v[0] == 0 ? "PASS" : "FAIL");
  }
  return v[0] == 0 ? 0 : 1;
}

}  // namespace
}  // namespace tessera::zellige::engine

int main(int argc, char** argv) {
  auto env = tessera::comm::MpiEnvironment::Create(&argc, &argv);
  if (!env.ok()) {
    std::fprintf(stderr, "%s\n", env.status().ToString().c_str());
    return 1;
  }
  (*env)->world().set_op_timeout_s(60);
  if (!tessera::kernels::SetBlasNumThreads(1).ok()) return 1;
  return tessera::zellige::engine::Run((*env)->world());
}
