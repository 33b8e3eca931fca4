// TimeScale: how much slower than an emulated GPU this machine runs, so that an emulated link
// keeps the GPU's communication-to-computation ratio. One core here computes a GEMM `s` times
// slower than the device, so every link is emulated `s` times slower too:
//     s = device bf16 peak FLOP/s x compute_efficiency / measured 1-core GEMM FLOP/s
//     emulated bandwidth = bandwidth / s,   emulated latency = latency x s.
// The GEMM rate is measured with kernels::Gemm (the build's backend, one thread) on a square
// fp32 GEMM, best of a few runs. A user may fix s instead (--time-scale) to compare runs.
// Shared by every emulated link of every system (today Compass's emulated topology links and
// Xema's device<->host link).
// Errors: InvalidArgument (naming the figures) for non-positive or out-of-range inputs.
// Thread-safety: MeasureCoreGemmFlops changes the BLAS thread count to 1 (process-wide).
#pragma once

#include <string>

#include "core/status.h"
#include "hw/device.h"

namespace tessera::runtime {

struct TimeScale {
  double device_flops = 0;     // device bf16 peak x compute efficiency
  double core_gemm_flops = 0;  // measured on one core here (0 when fixed by the user)
  double scale = 1;            // s: emulated seconds per device second
  std::string source;          // "measured: ..." or "fixed by --time-scale"
};

// fp32 GEMM FLOP/s of one core: best of `repeats` n x n x n GEMMs.
core::StatusOr<double> MeasureCoreGemmFlops(int n = 768, int repeats = 5);

// s from the device and a measured core rate; InvalidArgument for non-positive inputs.
core::StatusOr<TimeScale> MakeTimeScale(const hw::Device& device, double core_gemm_flops);
// A fixed s (>= 1e-3, <= 1e7).
core::StatusOr<TimeScale> FixedTimeScale(const hw::Device& device, double scale);

}  // namespace tessera::runtime
