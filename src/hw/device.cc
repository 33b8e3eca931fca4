#include "hw/device.h"

#include <cmath>

#include "core/parse_number.h"
#include "hw/data_files.h"

namespace tessera::hw {

using core::Json;
using core::Status;
using core::StatusOr;

namespace {

Status Positive(double v, const std::string& field) {
  if (!(v > 0 && std::isfinite(v)))
    return core::InvalidArgument(field + ": got " + core::ShowNumber(v) + ", must be > 0");
  return Status::Ok();
}

Status Fraction(double v, const std::string& field) {
  if (!(v > 0 && v <= 1)) {
    return core::InvalidArgument(field + ": got " + core::ShowNumber(v) + ", must be in (0, 1]");
  }
  if (v < kMinDeviceFraction) {
    return core::InvalidArgument(field + ": got " + core::ShowNumber(v) + ", must be >= " +
                                 core::ShowNumber(kMinDeviceFraction) + " (a plausible device)");
  }
  return Status::Ok();
}

// A positive value inside [lo, hi] (checked after Positive, so the message names the range).
Status Plausible(double v, double lo, double hi, const std::string& field,
                 const std::string& unit) {
  if (v < lo || v > hi) {
    return core::InvalidArgument(field + ": got " + core::ShowNumber(v) + ", must be in [" +
                                 core::ShowNumber(lo) + ", " + core::ShowNumber(hi) + "] " + unit +
                                 " (a plausible device)");
  }
  return Status::Ok();
}

StatusOr<DtypePeaks> PeaksFromJson(const Json& obj, const std::string& path) {
  const std::string field = core::JoinPath(path, "peak_flops");
  ASSIGN_OR_RETURN(const Json* v, core::Member(obj, path, "peak_flops"));
  DtypePeaks p;
  if (v->is_number()) {  // before per-dtype peaks: the dense bf16 peak
    ASSIGN_OR_RETURN(p.bf16, core::GetPositiveDouble(obj, path, "peak_flops"));
    return p;
  }
  if (!v->is_object()) {
    return core::InvalidArgument(field + ": got " + core::ShowJson(*v) +
                                 ", must be an object {\"fp32\": ..., \"tf32\": ..., \"bf16\": "
                                 "..., \"fp8\": ...} of dense FLOP/s (0 = unsupported) or one "
                                 "number (the dense bf16 peak)");
  }
  for (const auto& [key, value] : v->items()) {
    bool known = false;
    for (Dtype d : AllDtypes()) known = known || key == DtypeName(d);
    if (!known) {
      return core::InvalidArgument(core::JoinPath(field, key) +
                                   ": unknown dtype, must be one of fp32, tf32, bf16, fp8");
    }
  }
  for (Dtype d : AllDtypes()) {
    ASSIGN_OR_RETURN(p.Get(d), core::GetNonNegativeDouble(*v, field, DtypeName(d)));
  }
  return p;
}

}  // namespace

const char* DtypeName(Dtype d) {
  switch (d) {
    case Dtype::kFP32:
      return "fp32";
    case Dtype::kTF32:
      return "tf32";
    case Dtype::kBF16:
      return "bf16";
    case Dtype::kFP8:
      return "fp8";
  }
  return "?";
}

std::vector<Dtype> AllDtypes() { return {Dtype::kFP32, Dtype::kTF32, Dtype::kBF16, Dtype::kFP8}; }

double DtypePeaks::Get(Dtype d) const { return const_cast<DtypePeaks*>(this)->Get(d); }

double& DtypePeaks::Get(Dtype d) {
  switch (d) {
    case Dtype::kFP32:
      return fp32;
    case Dtype::kTF32:
      return tf32;
    case Dtype::kBF16:
      return bf16;
    case Dtype::kFP8:
      return fp8;
  }
  return bf16;
}

Status Validate(const Device& d, const std::string& path) {
  auto f = [&](const std::string& key) { return core::JoinPath(path, key); };
  if (d.name.empty()) return core::InvalidArgument(f("name") + ": must be a non-empty string");
  for (Dtype t : AllDtypes()) {
    const double v = d.PeakFlops(t);
    if (!(v >= 0 && std::isfinite(v))) {
      return core::InvalidArgument(f("peak_flops.") + DtypeName(t) + ": got " +
                                   core::ShowNumber(v) +
                                   ", must be >= 0 (dense FLOP/s, 0 = unsupported)");
    }
  }
  if (!(d.peak_flops.bf16 > 0)) {
    return core::InvalidArgument(f("peak_flops.bf16") + ": got " +
                                 core::ShowNumber(d.peak_flops.bf16) +
                                 ", must be > 0 (the cost models price bf16 training)");
  }
  for (Dtype t : AllDtypes()) {
    const double v = d.PeakFlops(t);
    if (v != 0 && (v < kMinPeakFlops || v > kMaxPeakFlops)) {
      return core::InvalidArgument(
          f("peak_flops.") + DtypeName(t) + ": got " + core::ShowNumber(v) + ", must be " +
          (t == Dtype::kBF16 ? "" : "0 (unsupported) or ") + "in [" +
          core::ShowNumber(kMinPeakFlops) + ", " + core::ShowNumber(kMaxPeakFlops) +
          "] FLOP/s (a plausible device)");
    }
  }
  RETURN_IF_ERROR(Positive(d.mem_bw_bytes_per_s, f("mem_bw_bytes_per_s")));
  RETURN_IF_ERROR(Plausible(d.mem_bw_bytes_per_s, kMinMemBwBytesPerS, kMaxMemBwBytesPerS,
                            f("mem_bw_bytes_per_s"), "bytes/s"));
  RETURN_IF_ERROR(Positive(d.memory_bytes, f("memory_bytes")));
  RETURN_IF_ERROR(
      Plausible(d.memory_bytes, kMinMemoryBytes, kMaxMemoryBytes, f("memory_bytes"), "bytes"));
  RETURN_IF_ERROR(Fraction(d.memory_usable_fraction, f("memory_usable_fraction")));
  RETURN_IF_ERROR(Fraction(d.compute_efficiency, f("compute_efficiency")));
  if (!(d.price_usd_per_hour >= 0 && d.price_usd_per_hour <= kMaxPriceUsdPerHour)) {
    return core::InvalidArgument(f("price.usd_per_hour") + ": got " +
                                 core::ShowNumber(d.price_usd_per_hour) + ", must be in [0, " +
                                 core::ShowNumber(kMaxPriceUsdPerHour) + "] (0 = unknown)");
  }
  return Status::Ok();
}

Json ToJson(const Device& d) {
  Json peaks = Json::object();
  for (Dtype t : AllDtypes()) peaks[DtypeName(t)] = d.PeakFlops(t);
  Json j = {{"name", d.name},
            {"peak_flops", peaks},
            {"mem_bw_bytes_per_s", d.mem_bw_bytes_per_s},
            {"memory_bytes", d.memory_bytes},
            {"memory_usable_fraction", d.memory_usable_fraction},
            {"compute_efficiency", d.compute_efficiency}};
  if (d.sm_count > 0) j["sm_count"] = d.sm_count;
  if (d.price_usd_per_hour > 0 || !d.price_source.empty()) {
    j["price"] = {{"usd_per_hour", d.price_usd_per_hour}, {"source", d.price_source}};
  }
  return j;
}

StatusOr<Device> DeviceFromJson(const Json& j, const std::string& path) {
  RETURN_IF_ERROR(core::CheckKnownKeys(
      j, path,
      {"kind", "version", "provenance", "sources", "name", "peak_flops", "mem_bw_bytes_per_s",
       "memory_bytes", "memory_usable_fraction", "sm_count", "compute_efficiency", "price"}));
  Device d;
  ASSIGN_OR_RETURN(d.name, core::GetString(j, path, "name"));
  ASSIGN_OR_RETURN(d.peak_flops, PeaksFromJson(j, path));
  ASSIGN_OR_RETURN(d.mem_bw_bytes_per_s, core::GetPositiveDouble(j, path, "mem_bw_bytes_per_s"));
  ASSIGN_OR_RETURN(d.memory_bytes, core::GetPositiveDouble(j, path, "memory_bytes"));
  ASSIGN_OR_RETURN(d.memory_usable_fraction, core::GetFraction(j, path, "memory_usable_fraction"));
  ASSIGN_OR_RETURN(d.compute_efficiency, core::GetFraction(j, path, "compute_efficiency"));
  if (j.contains("sm_count")) {
    ASSIGN_OR_RETURN(int64_t sms, core::GetIntInRange(j, path, "sm_count", 1, 4096));
    d.sm_count = static_cast<int>(sms);
  }
  if (j.contains("price")) {
    const std::string pp = core::JoinPath(path, "price");
    const Json& p = j["price"];
    if (!p.is_object())
      return core::InvalidArgument(pp + ": must be an object {usd_per_hour, source}");
    RETURN_IF_ERROR(core::CheckKnownKeys(p, pp, {"usd_per_hour", "source"}));
    ASSIGN_OR_RETURN(d.price_usd_per_hour,
                     core::GetDoubleInRange(p, pp, "usd_per_hour", 0, kMaxPriceUsdPerHour));
    ASSIGN_OR_RETURN(d.price_source, core::GetString(p, pp, "source"));
  }
  RETURN_IF_ERROR(Validate(d, path));
  return d;
}

std::vector<std::string> DevicePresetNames() { return ListDataFiles("hw/devices"); }

StatusOr<Device> DevicePreset(const std::string& name, std::string* origin) {
  auto file = LoadDataFile("hw/devices", name, "device", kDeviceFileVersion);
  if (!file.ok()) {
    if (file.status().code() != core::StatusCode::kNotFound) return file.status();
    std::string all;
    for (const auto& n : DevicePresetNames()) all += (all.empty() ? "" : ", ") + n;
    return core::NotFound("device: got '" + name + "', must be one of " + all +
                          " or an inline device object");
  }
  auto d = DeviceFromJson(file->json, "");
  if (!d.ok()) return d.status().WithPrefix(file->origin);
  if (origin != nullptr) *origin = file->origin;
  return d;
}

}  // namespace tessera::hw
