#include "hw/cluster.h"

#include <filesystem>

#include "core/units.h"

namespace tessera::hw {

using core::Json;
using core::Status;
using core::StatusOr;

namespace {

Status Positive(double v, const std::string& field) {
  if (!(v > 0))
    return core::InvalidArgument(field + ": got " + std::to_string(v) + ", must be > 0");
  return Status::Ok();
}

Status Fraction(double v, const std::string& field) {
  if (!(v > 0 && v <= 1)) {
    return core::InvalidArgument(field + ": got " + std::to_string(v) + ", must be in (0, 1]");
  }
  return Status::Ok();
}

Json LinkJson(const Link& l) {
  return {{"name", l.name}, {"bw_bytes_per_s", l.bw_bytes_per_s}, {"latency_s", l.latency_s}};
}

StatusOr<Link> LinkFromJson(const Json& j, const std::string& path) {
  Link l;
  ASSIGN_OR_RETURN(l.name, core::GetString(j, path, "name"));
  ASSIGN_OR_RETURN(l.bw_bytes_per_s, core::GetPositiveDouble(j, path, "bw_bytes_per_s"));
  ASSIGN_OR_RETURN(l.latency_s, core::GetNonNegativeDouble(j, path, "latency_s"));
  return l;
}

using core::kGB;
using core::kGiB;
const char* kDatasheet = "modeled from datasheets";

// A800 SXM 80GB: 312 TFLOP/s dense bf16, 2.04 TB/s HBM2e, NVLink 400 GB/s bidirectional.
Device A800() { return {"A800-SXM4-80GB", 312e12, 2.039e12, 80 * kGiB, 0.90, 0.50}; }
// RTX A6000 48GB: 154.8 TFLOP/s dense bf16 (tensor cores), 768 GB/s GDDR6.
Device A6000() { return {"RTX-A6000-48GB", 154.8e12, 768e9, 48 * kGiB, 0.90, 0.50}; }
// H100 SXM 80GB: 989 TFLOP/s dense bf16, 3.35 TB/s HBM3, NVLink4 900 GB/s bidirectional.
Device H100() { return {"H100-SXM5-80GB", 989e12, 3.35e12, 80 * kGiB, 0.90, 0.50}; }

Link NvlinkA800() { return {"nvlink3-a800", 200 * kGB, 10e-6}; }
Link NvlinkH100() { return {"nvlink4", 450 * kGB, 8e-6}; }
Link PcieGen4() { return {"pcie4-x16", 24 * kGB, 15e-6}; }
// HDR InfiniBand, 200 Gb/s per GPU (one NIC per GPU).
Link IbHdrPerGpu() { return {"ib-hdr-200g", 25 * kGB, 20e-6}; }
// 4x HDR per 8-GPU node: 12.5 GB/s per GPU.
Link IbHdrShared() { return {"ib-hdr-4x200g-per-node", 12.5 * kGB, 20e-6}; }
// NDR InfiniBand, 400 Gb/s per GPU.
Link IbNdrPerGpu() { return {"ib-ndr-400g", 50 * kGB, 15e-6}; }

}  // namespace

Status Validate(const Cluster& c) {
  if (c.name.empty()) return core::InvalidArgument("name: must be a non-empty string");
  RETURN_IF_ERROR(Positive(c.device.peak_flops, "device.peak_flops"));
  RETURN_IF_ERROR(Positive(c.device.mem_bw_bytes_per_s, "device.mem_bw_bytes_per_s"));
  RETURN_IF_ERROR(Positive(c.device.memory_bytes, "device.memory_bytes"));
  RETURN_IF_ERROR(Fraction(c.device.memory_usable_fraction, "device.memory_usable_fraction"));
  RETURN_IF_ERROR(Fraction(c.device.compute_efficiency, "device.compute_efficiency"));
  if (c.nodes < 1)
    return core::InvalidArgument("nodes: got " + std::to_string(c.nodes) + ", must be >= 1");
  if (c.ranks_per_node < 1) {
    return core::InvalidArgument("ranks_per_node: got " + std::to_string(c.ranks_per_node) +
                                 ", must be >= 1");
  }
  RETURN_IF_ERROR(Positive(c.intra.bw_bytes_per_s, "intra.bw_bytes_per_s"));
  RETURN_IF_ERROR(Positive(c.inter.bw_bytes_per_s, "inter.bw_bytes_per_s"));
  if (c.intra.latency_s < 0 || c.inter.latency_s < 0) {
    return core::InvalidArgument("latency_s: must be >= 0");
  }
  return Status::Ok();
}

Json ToJson(const Cluster& c) {
  return {{"name", c.name},
          {"provenance", c.provenance},
          {"device",
           {{"name", c.device.name},
            {"peak_flops", c.device.peak_flops},
            {"mem_bw_bytes_per_s", c.device.mem_bw_bytes_per_s},
            {"memory_bytes", c.device.memory_bytes},
            {"memory_usable_fraction", c.device.memory_usable_fraction},
            {"compute_efficiency", c.device.compute_efficiency}}},
          {"nodes", c.nodes},
          {"ranks_per_node", c.ranks_per_node},
          {"intra", LinkJson(c.intra)},
          {"inter", LinkJson(c.inter)}};
}

StatusOr<Cluster> ClusterFromJson(const Json& j, const std::string& source) {
  auto parse = [&]() -> StatusOr<Cluster> {
    Cluster c;
    ASSIGN_OR_RETURN(c.name, core::GetString(j, "", "name"));
    c.provenance = j.is_object() && j.contains("provenance") && j["provenance"].is_string()
                       ? j["provenance"].get<std::string>()
                       : "user file";
    ASSIGN_OR_RETURN(const Json* d, core::Member(j, "", "device"));
    ASSIGN_OR_RETURN(c.device.name, core::GetString(*d, "device", "name"));
    ASSIGN_OR_RETURN(c.device.peak_flops, core::GetPositiveDouble(*d, "device", "peak_flops"));
    ASSIGN_OR_RETURN(c.device.mem_bw_bytes_per_s,
                     core::GetPositiveDouble(*d, "device", "mem_bw_bytes_per_s"));
    ASSIGN_OR_RETURN(c.device.memory_bytes, core::GetPositiveDouble(*d, "device", "memory_bytes"));
    ASSIGN_OR_RETURN(c.device.memory_usable_fraction,
                     core::GetFraction(*d, "device", "memory_usable_fraction"));
    ASSIGN_OR_RETURN(c.device.compute_efficiency,
                     core::GetFraction(*d, "device", "compute_efficiency"));
    ASSIGN_OR_RETURN(int64_t nodes, core::GetPositiveInt(j, "", "nodes"));
    ASSIGN_OR_RETURN(int64_t rpn, core::GetPositiveInt(j, "", "ranks_per_node"));
    if (nodes * rpn > 65536) {
      return core::InvalidArgument("nodes * ranks_per_node: got " + std::to_string(nodes * rpn) +
                                   ", must be <= 65536");
    }
    c.nodes = static_cast<int>(nodes);
    c.ranks_per_node = static_cast<int>(rpn);
    ASSIGN_OR_RETURN(const Json* intra, core::Member(j, "", "intra"));
    ASSIGN_OR_RETURN(c.intra, LinkFromJson(*intra, "intra"));
    ASSIGN_OR_RETURN(const Json* inter, core::Member(j, "", "inter"));
    ASSIGN_OR_RETURN(c.inter, LinkFromJson(*inter, "inter"));
    RETURN_IF_ERROR(Validate(c));
    return c;
  };
  auto r = parse();
  if (!r.ok()) return r.status().WithPrefix(source);
  return r;
}

std::vector<std::string> ClusterPresetNames() {
  return {"a800x8", "a800x16", "a6000x32", "h100x64"};
}

StatusOr<Cluster> ClusterPreset(const std::string& name) {
  if (name == "a800x8") return Cluster{name, kDatasheet, A800(), 1, 8, NvlinkA800(), IbHdrPerGpu()};
  if (name == "a800x16")
    return Cluster{name, kDatasheet, A800(), 2, 8, NvlinkA800(), IbHdrPerGpu()};
  if (name == "a6000x32")
    return Cluster{name, kDatasheet, A6000(), 4, 8, PcieGen4(), IbHdrShared()};
  if (name == "h100x64")
    return Cluster{name, kDatasheet, H100(), 8, 8, NvlinkH100(), IbNdrPerGpu()};
  std::string all;
  for (const auto& n : ClusterPresetNames()) all += (all.empty() ? "" : ", ") + n;
  return core::NotFound("cluster: got '" + name + "', must be one of " + all + " or a JSON file");
}

StatusOr<Cluster> LoadCluster(const std::string& name_or_path) {
  auto preset = ClusterPreset(name_or_path);
  if (preset.ok()) return preset;
  if (!std::filesystem::exists(name_or_path)) return preset.status();
  ASSIGN_OR_RETURN(Json j, core::ReadJsonFile(name_or_path));
  return ClusterFromJson(j, name_or_path);
}

}  // namespace tessera::hw
