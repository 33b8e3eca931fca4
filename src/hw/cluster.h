// Hardware descriptions used by every cost model: a device SKU (device.h), link classes and a
// cluster topology (homogeneous nodes, ranks numbered node-major: rank r lives on node
// r / ranks_per_node).
//
// Units: FLOP/s, bytes, bytes per second (per direction, per rank), seconds.
// A Cluster is a plain value; its `provenance` says whether the numbers are
// "modeled from datasheets" (presets) or "measured" (a profile, with machine and date), and
// its `source` which file they were read from.
// Presets are versioned JSON data files, data/hw/clusters/<name>.json:
//   {"kind": "cluster", "version": 1, "provenance": "...", "sources": ["notes", ...],
//    "name": "a800x16", "device": "a800-sxm4-80gb" (a device preset) or {inline device},
//    "nodes": 2, "ranks_per_node": 8, "intra": {link}, "inter": {link}}
// found as data_files.h describes ($TESSERA_DATA_DIR, install dir, embedded copy).
// Thread-safe to read.
#pragma once

#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "hw/device.h"

namespace tessera::hw {

// A link class: what one rank can send to a peer over this fabric.
struct Link {
  std::string name;
  double bw_bytes_per_s = 0;  // per direction, per rank
  double latency_s = 0;       // per message / collective step
};

struct Cluster {
  std::string name;
  std::string provenance;  // "modeled from datasheets" or "measured on <machine>, <date>"
  Device device;
  int nodes = 0;
  int ranks_per_node = 0;
  Link intra;  // inside a node
  Link inter;  // across nodes
  // Where the numbers were read from: a data file origin ("embedded: hw/clusters/a800x16.json
  // (device: embedded: hw/devices/a800-sxm4-80gb.json)", "$TESSERA_DATA_DIR: <path>",
  // "install dir: <path>"), a user file path, or empty for a value built in code.
  std::string source;

  int num_ranks() const { return nodes * ranks_per_node; }
  int NodeOf(int rank) const { return rank / ranks_per_node; }
  // Bytes a rank may allocate: memory_bytes * memory_usable_fraction.
  double usable_memory_bytes() const { return device.memory_bytes * device.memory_usable_fraction; }
};

// Current schema version of cluster data files (and of ToJson's output).
inline constexpr int kClusterFileVersion = 1;

// The largest cluster tessera models: nodes * ranks_per_node <= kMaxClusterRanks (plans and
// profiles are bounded the same way). Each factor is bounded before they are multiplied.
inline constexpr int kMaxClusterRanks = 65536;
// Plausible link ranges (per direction, per rank): 1 kB/s (a slow wide-area what-if) to
// 10 PB/s, latency 0 to 10 s. Outside them a collective's modeled time is nonsense.
inline constexpr double kMinLinkBwBytesPerS = 1e3;
inline constexpr double kMaxLinkBwBytesPerS = 1e16;
inline constexpr double kMaxLinkLatencyS = 10;

// Validates a link; `path` names it in messages ("intra").
core::Status Validate(const Link& l, const std::string& path);
// Validates every field: the device (device.h's ranges), nodes and ranks_per_node >= 1 with
// at most kMaxClusterRanks ranks, and both links.
core::Status Validate(const Cluster& c);

// Self-contained JSON: kind, version, the device inline, and `source` when set.
core::Json ToJson(const Cluster& c);
// Parses and validates; `source` prefixes messages (e.g. the file name) and becomes
// Cluster::source unless the JSON has its own "source". "kind" and "version" are optional
// (files written before versioning) but checked when present; "device" is an inline object or
// the name of a device preset.
core::StatusOr<Cluster> ClusterFromJson(const core::Json& j, const std::string& source);

// Names of the cluster presets (data files): a800x8, a800x16, a6000x32, h100x64, plus any
// extra files in $TESSERA_DATA_DIR/hw/clusters or the install dir.
std::vector<std::string> ClusterPresetNames();
// A preset by name (kind and version required), or NotFound listing the presets; a malformed
// data file is InvalidArgument naming the file and field.
core::StatusOr<Cluster> ClusterPreset(const std::string& name);
// A preset name, or else a path to a cluster JSON file.
core::StatusOr<Cluster> LoadCluster(const std::string& name_or_path);

}  // namespace tessera::hw
