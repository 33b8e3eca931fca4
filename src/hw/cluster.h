// Hardware descriptions used by every cost model: a device SKU, link classes and a
// cluster topology (homogeneous nodes, ranks numbered node-major: rank r lives on node
// r / ranks_per_node).
//
// Units: FLOP/s, bytes, bytes per second (per direction, per rank), seconds.
// A Cluster is a plain value; its `provenance` says whether the numbers are
// "modeled from datasheets" (presets) or "measured" (a profile, with machine and date).
// Thread-safe to read.
#pragma once

#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"

namespace tessera::hw {

struct Device {
  std::string name;
  double peak_flops = 0;              // dense bf16 FLOP/s
  double mem_bw_bytes_per_s = 0;      // HBM bandwidth
  double memory_bytes = 0;            // device memory
  double memory_usable_fraction = 0;  // share of memory_bytes a job may allocate, (0, 1]
  double compute_efficiency = 0;      // achieved / peak FLOP/s for training kernels, (0, 1]
};

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

  int num_ranks() const { return nodes * ranks_per_node; }
  int NodeOf(int rank) const { return rank / ranks_per_node; }
  // Bytes a rank may allocate: memory_bytes * memory_usable_fraction.
  double usable_memory_bytes() const { return device.memory_bytes * device.memory_usable_fraction; }
};

// Validates every field (positive sizes and rates, fractions in (0,1]).
core::Status Validate(const Cluster& c);

core::Json ToJson(const Cluster& c);
// Parses and validates; `source` prefixes messages (e.g. the file name).
core::StatusOr<Cluster> ClusterFromJson(const core::Json& j, const std::string& source);

// Names of the built-in presets: a800x8, a800x16, a6000x32, h100x64.
std::vector<std::string> ClusterPresetNames();
// A preset by name, or NotFound listing the presets.
core::StatusOr<Cluster> ClusterPreset(const std::string& name);
// A preset name, or else a path to a cluster JSON file.
core::StatusOr<Cluster> LoadCluster(const std::string& name_or_path);

}  // namespace tessera::hw
