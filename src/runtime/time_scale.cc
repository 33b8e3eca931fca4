#include "runtime/time_scale.h"

#include <chrono>
#include <cmath>
#include <vector>

#include "core/parse_number.h"
#include "kernels/gemm.h"

namespace tessera::runtime {

core::StatusOr<double> MeasureCoreGemmFlops(int n, int repeats) {
  if (n < 16 || n > 8192 || repeats < 1) {
    return core::InvalidArgument("GEMM probe: n must be in [16, 8192] and repeats >= 1");
  }
  RETURN_IF_ERROR(kernels::SetBlasNumThreads(1));
  std::vector<float> a(static_cast<size_t>(n) * n, 0.5f), b(a.size(), 0.25f), c(a.size());
  double best_s = 1e300;
  for (int r = 0; r < repeats + 1; ++r) {  // the first run warms up
    const auto t0 = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(kernels::Gemm(kernels::Transpose::kNo, kernels::Transpose::kNo, n, n, n, 1.0f,
                                  a.data(), n, b.data(), n, 0.0f, c.data(), n));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) best_s = std::min(best_s, s);
  }
  return 2.0 * n * n * static_cast<double>(n) / best_s;
}

core::StatusOr<TimeScale> MakeTimeScale(const hw::Device& device, double core_gemm_flops) {
  TimeScale t;
  t.device_flops = device.PeakFlops(hw::Dtype::kBF16) * device.compute_efficiency;
  if (!(t.device_flops > 0) || !(core_gemm_flops > 0) || !std::isfinite(core_gemm_flops)) {
    return core::InvalidArgument("time scale: device bf16 FLOP/s " +
                                 core::ShowNumber(t.device_flops) + " and core GEMM FLOP/s " +
                                 core::ShowNumber(core_gemm_flops) + " must both be > 0");
  }
  t.core_gemm_flops = core_gemm_flops;
  t.scale = t.device_flops / core_gemm_flops;
  t.source = "measured: " + device.name + " bf16 " + core::ShowNumber(t.device_flops / 1e12) +
             " TFLOP/s effective vs " + core::ShowNumber(core_gemm_flops / 1e9) +
             " GFLOP/s fp32 GEMM on one core here";
  return t;
}

core::StatusOr<TimeScale> FixedTimeScale(const hw::Device& device, double scale) {
  if (!(scale >= 1e-3 && scale <= 1e7)) {
    return core::InvalidArgument("time_scale: got " + core::ShowNumber(scale) +
                                 ", must be in [0.001, 1e7]");
  }
  TimeScale t;
  t.device_flops = device.PeakFlops(hw::Dtype::kBF16) * device.compute_efficiency;
  t.scale = scale;
  t.source = "fixed by --time-scale";
  return t;
}

}  // namespace tessera::runtime
