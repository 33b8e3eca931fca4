// A device SKU for the cost models: per-dtype dense peak FLOP/s, memory bandwidth and size,
// and the modeling assumptions (usable memory share, achieved/peak efficiency).
//
// Units: FLOP/s (dense, no structured sparsity), bytes, bytes per second. A peak of 0 means the
// dtype is unsupported (e.g. fp8 before Hopper/Ada); bf16 must be supported because the cost
// models price bf16 training. Device presets are versioned JSON data files
// (data/hw/devices/<name>.json, kind "device"; see data_files.h for where they are found).
// Plain values; thread-safe to read.
#pragma once

#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"

namespace tessera::hw {

enum class Dtype { kFP32, kTF32, kBF16, kFP8 };

// "fp32", "tf32", "bf16", "fp8": the JSON keys of DtypePeaks.
const char* DtypeName(Dtype d);
// Every Dtype, in the order above.
std::vector<Dtype> AllDtypes();

// Dense peak FLOP/s per dtype (tensor cores where the device has them); 0 = unsupported.
struct DtypePeaks {
  double fp32 = 0;  // plain FP32 (CUDA cores)
  double tf32 = 0;  // TF32 tensor cores
  double bf16 = 0;  // BF16 tensor cores, FP32 accumulate
  double fp8 = 0;   // FP8 tensor cores, FP32 accumulate

  double Get(Dtype d) const;
  double& Get(Dtype d);
  bool operator==(const DtypePeaks&) const = default;
};

struct Device {
  std::string name;
  DtypePeaks peak_flops;              // dense FLOP/s per dtype
  double mem_bw_bytes_per_s = 0;      // HBM bandwidth
  double memory_bytes = 0;            // device memory
  double memory_usable_fraction = 0;  // share of memory_bytes a job may allocate, (0, 1]
  double compute_efficiency = 0;      // achieved / peak FLOP/s for training kernels, (0, 1]
  int sm_count = 0;                   // streaming multiprocessors (GEMM tile waves); 0: unknown
  double price_usd_per_hour = 0;      // renting one, on demand; 0: unknown
  std::string price_source;           // where and when that price was read

  // Dense peak FLOP/s of `d`; 0 when unsupported.
  double PeakFlops(Dtype d) const { return peak_flops.Get(d); }
};

// Current schema version of device data files.
inline constexpr int kDeviceFileVersion = 1;

// Plausible ranges, checked by Validate: a value outside them describes no device that trains
// a model and would drive the cost models' times to 0, infinity or NaN (a peak of 1e-300
// FLOP/s once printed `inf` as a feasible makespan).
inline constexpr double kMinPeakFlops = 1e6;   // 1 MFLOP/s per supported dtype (0 = unsupported)
inline constexpr double kMaxPeakFlops = 1e19;  // 10 EFLOP/s
inline constexpr double kMinMemBwBytesPerS = 1e6;    // 1 MB/s
inline constexpr double kMaxMemBwBytesPerS = 1e16;   // 10 PB/s
inline constexpr double kMinMemoryBytes = 1e6;       // 1 MB
inline constexpr double kMaxMemoryBytes = 1e15;      // 1 PB
inline constexpr double kMinDeviceFraction = 1e-3;   // memory_usable_fraction, compute_efficiency
inline constexpr double kMaxPriceUsdPerHour = 1000;  // one device, on demand

// Validates every field (signs, fractions in (0, 1], then the plausible ranges above); `path`
// prefixes field names ("device" -> "device.peak_flops.bf16").
core::Status Validate(const Device& d, const std::string& path = "device");

// The inline JSON form: {name, peak_flops: {fp32, tf32, bf16, fp8}, mem_bw_bytes_per_s, ...,
// optional price: {usd_per_hour, source}}.
core::Json ToJson(const Device& d);
// Parses the device object `j` located at `path` ("device" inside a cluster, "" for a device
// file) and validates it. "peak_flops" is either an object with all four dtypes or, as in
// files written before per-dtype peaks, one number: the dense bf16 peak (other dtypes 0).
core::StatusOr<Device> DeviceFromJson(const core::Json& j, const std::string& path);

// Names of the device data files (file stems), e.g. a800-sxm4-80gb, h100-sxm5-80gb.
std::vector<std::string> DevicePresetNames();
// Loads data file hw/devices/<name>.json (kind "device", version <= kDeviceFileVersion).
// NotFound lists the presets; a malformed file is InvalidArgument naming the file and field.
// `origin`, when given, receives where the file was read from (DataFile::origin).
core::StatusOr<Device> DevicePreset(const std::string& name, std::string* origin = nullptr);

}  // namespace tessera::hw
