#include "hw/cluster.h"

#include <cmath>

#include "core/input_file.h"
#include "core/parse_number.h"
#include "hw/data_files.h"

namespace tessera::hw {

using core::Json;
using core::Status;
using core::StatusOr;

namespace {

std::string RanksLimit() {
  return "must be <= " + std::to_string(kMaxClusterRanks) + " (the largest cluster tessera models)";
}

Json LinkJson(const Link& l) {
  return {{"name", l.name}, {"bw_bytes_per_s", l.bw_bytes_per_s}, {"latency_s", l.latency_s}};
}

StatusOr<Link> LinkFromJson(const Json& j, const std::string& path) {
  RETURN_IF_ERROR(core::CheckKnownKeys(j, path, {"name", "bw_bytes_per_s", "latency_s"}));
  Link l;
  ASSIGN_OR_RETURN(l.name, core::GetString(j, path, "name"));
  ASSIGN_OR_RETURN(l.bw_bytes_per_s, core::GetPositiveDouble(j, path, "bw_bytes_per_s"));
  ASSIGN_OR_RETURN(l.latency_s, core::GetNonNegativeDouble(j, path, "latency_s"));
  RETURN_IF_ERROR(Validate(l, path));
  return l;
}

StatusOr<Cluster> ParseCluster(const Json& j, const std::string& source,
                               std::string* device_origin) {
  RETURN_IF_ERROR(CheckDataFileHeader(j, "cluster", kClusterFileVersion, /*required=*/false));
  RETURN_IF_ERROR(
      core::CheckKnownKeys(j, "",
                           {"kind", "version", "name", "provenance", "sources", "source", "device",
                            "nodes", "ranks_per_node", "intra", "inter"}));
  Cluster c;
  ASSIGN_OR_RETURN(c.name, core::GetString(j, "", "name"));
  c.provenance = j.contains("provenance") && j["provenance"].is_string()
                     ? j["provenance"].get<std::string>()
                     : "user file";
  c.source =
      j.contains("source") && j["source"].is_string() ? j["source"].get<std::string>() : source;
  ASSIGN_OR_RETURN(const Json* d, core::Member(j, "", "device"));
  if (d->is_string()) {
    auto device = DevicePreset(d->get<std::string>(), device_origin);
    if (!device.ok() && device.status().code() == core::StatusCode::kNotFound) {
      // A missing device preset is a bad field of this file, not a missing cluster.
      return core::InvalidArgument(device.status().message());
    }
    ASSIGN_OR_RETURN(c.device, std::move(device));
  } else {
    ASSIGN_OR_RETURN(c.device, DeviceFromJson(*d, "device"));
  }
  // Each factor is bounded before the product, which then fits easily in 64 bits.
  ASSIGN_OR_RETURN(int64_t nodes, core::GetPositiveInt(j, "", "nodes"));
  if (nodes > kMaxClusterRanks) {
    return core::InvalidArgument("nodes: got " + std::to_string(nodes) + ", " + RanksLimit());
  }
  ASSIGN_OR_RETURN(int64_t rpn, core::GetPositiveInt(j, "", "ranks_per_node"));
  if (rpn > kMaxClusterRanks) {
    return core::InvalidArgument("ranks_per_node: got " + std::to_string(rpn) + ", " +
                                 RanksLimit());
  }
  if (nodes * rpn > kMaxClusterRanks) {
    return core::InvalidArgument("nodes * ranks_per_node: got " + std::to_string(nodes) + " * " +
                                 std::to_string(rpn) + " = " + std::to_string(nodes * rpn) +
                                 " ranks, " + RanksLimit());
  }
  c.nodes = static_cast<int>(nodes);
  c.ranks_per_node = static_cast<int>(rpn);
  ASSIGN_OR_RETURN(const Json* intra, core::Member(j, "", "intra"));
  ASSIGN_OR_RETURN(c.intra, LinkFromJson(*intra, "intra"));
  ASSIGN_OR_RETURN(const Json* inter, core::Member(j, "", "inter"));
  ASSIGN_OR_RETURN(c.inter, LinkFromJson(*inter, "inter"));
  RETURN_IF_ERROR(Validate(c));
  return c;
}

}  // namespace

Status Validate(const Link& l, const std::string& path) {
  const std::string bw = core::JoinPath(path, "bw_bytes_per_s");
  if (!(l.bw_bytes_per_s > 0) || !std::isfinite(l.bw_bytes_per_s)) {
    return core::InvalidArgument(bw + ": got " + core::ShowNumber(l.bw_bytes_per_s) +
                                 ", must be > 0");
  }
  if (l.bw_bytes_per_s < kMinLinkBwBytesPerS || l.bw_bytes_per_s > kMaxLinkBwBytesPerS) {
    return core::InvalidArgument(bw + ": got " + core::ShowNumber(l.bw_bytes_per_s) +
                                 ", must be in [" + core::ShowNumber(kMinLinkBwBytesPerS) + ", " +
                                 core::ShowNumber(kMaxLinkBwBytesPerS) +
                                 "] bytes/s (a plausible link)");
  }
  if (!(l.latency_s >= 0 && l.latency_s <= kMaxLinkLatencyS)) {
    return core::InvalidArgument(core::JoinPath(path, "latency_s") + ": got " +
                                 core::ShowNumber(l.latency_s) + ", must be in [0, " +
                                 core::ShowNumber(kMaxLinkLatencyS) + "] s (a plausible link)");
  }
  return Status::Ok();
}

Status Validate(const Cluster& c) {
  if (c.name.empty()) return core::InvalidArgument("name: must be a non-empty string");
  RETURN_IF_ERROR(Validate(c.device, "device"));
  if (c.nodes < 1)
    return core::InvalidArgument("nodes: got " + std::to_string(c.nodes) + ", must be >= 1");
  if (c.ranks_per_node < 1) {
    return core::InvalidArgument("ranks_per_node: got " + std::to_string(c.ranks_per_node) +
                                 ", must be >= 1");
  }
  const int64_t ranks = int64_t{c.nodes} * c.ranks_per_node;
  if (ranks > kMaxClusterRanks) {
    return core::InvalidArgument("nodes * ranks_per_node: got " + std::to_string(c.nodes) + " * " +
                                 std::to_string(c.ranks_per_node) + " = " + std::to_string(ranks) +
                                 " ranks, " + RanksLimit());
  }
  RETURN_IF_ERROR(Validate(c.intra, "intra"));
  RETURN_IF_ERROR(Validate(c.inter, "inter"));
  return Status::Ok();
}

Json ToJson(const Cluster& c) {
  Json j = {{"kind", "cluster"},
            {"version", kClusterFileVersion},
            {"name", c.name},
            {"provenance", c.provenance},
            {"device", ToJson(c.device)},
            {"nodes", c.nodes},
            {"ranks_per_node", c.ranks_per_node},
            {"intra", LinkJson(c.intra)},
            {"inter", LinkJson(c.inter)}};
  if (!c.source.empty()) j["source"] = c.source;
  return j;
}

StatusOr<Cluster> ClusterFromJson(const Json& j, const std::string& source) {
  auto r = ParseCluster(j, source, nullptr);
  if (!r.ok()) return r.status().WithPrefix(source);
  return r;
}

std::vector<std::string> ClusterPresetNames() { return ListDataFiles("hw/clusters"); }

StatusOr<Cluster> ClusterPreset(const std::string& name) {
  auto file = LoadDataFile("hw/clusters", name, "cluster", kClusterFileVersion);
  if (!file.ok()) {
    if (file.status().code() != core::StatusCode::kNotFound) return file.status();
    std::string all;
    for (const auto& n : ClusterPresetNames()) all += (all.empty() ? "" : ", ") + n;
    return core::NotFound("cluster: got '" + name + "', must be one of " + all + " or a JSON file");
  }
  std::string device_origin;
  auto c = ParseCluster(file->json, file->origin, &device_origin);
  if (!c.ok()) return c.status().WithPrefix(file->origin);
  if (c->name != name) {
    return core::InvalidArgument(file->origin + ": name: got '" + c->name + "', must be '" + name +
                                 "' (the file's name without .json)");
  }
  c->source = file->origin;  // where it was read, even if the file carries a "source"
  if (!device_origin.empty()) c->source += " (device: " + device_origin + ")";
  return c;
}

StatusOr<Cluster> LoadCluster(const std::string& name_or_path) {
  auto preset = ClusterPreset(name_or_path);
  if (preset.ok() || preset.status().code() != core::StatusCode::kNotFound) return preset;
  if (!core::PathExists(name_or_path)) return preset.status();
  ASSIGN_OR_RETURN(Json j, core::ReadJsonFile(name_or_path));
  return ClusterFromJson(j, name_or_path);
}

}  // namespace tessera::hw
