// Topology: a directed-link graph of one machine (GPUs, switches, host CPUs / root complexes),
// beside hw::Cluster, whose single intra-node Link cannot express NVLink pairs, switches or
// sockets.
//
// Units: bytes, bytes per second PER DIRECTION (a duplex link is two independent directed
// links), seconds.
//
// Vertices are devices (GPUs; they never forward traffic), switches and hosts. A switch or
// host may carry a capacity (bw_bytes_per_s > 0: every byte routed THROUGH it, in any
// direction, shares that bandwidth, e.g. a host bounce buffer) and a latency added to every
// route that passes through it. Links are directed; each has a kind ("nvlink", "pcie", "upi",
// ...), a bandwidth and a latency.
// Resources are what concurrent flows share: every directed link (in links() order), then
// every capacity vertex (in vertices() order). A route from device a to device b is the list
// of resources in path order: link, [capacity of the next vertex], link, ...
// Computed routes take the path with the fewest hops, ties broken by the larger bottleneck
// bandwidth, then by the vertex-name sequence (lexicographically smallest); a device is never an
// intermediate vertex. A file may override the route of a (src, dst) device pair ("routes").
//
// Files are versioned data files like clusters (data/hw/topologies/<name>.json, see
// data_files.h for where presets are found):
//   {"kind": "topology", "version": 1, "provenance": "...", "sources": ["notes", ...],
//    "name": "a6000x8", "device": "rtx-a6000-48gb" (a device preset) or {inline device},
//    "vertices": [{"name": "gpu0", "kind": "device"|"switch"|"host",
//                  "bw_bytes_per_s": 0 (optional, switch/host only), "latency_s": 0 (optional)}],
//    "links": [{"src": "gpu0", "dst": "cpu0", "kind": "pcie", "bw_bytes_per_s": 24e9,
//               "latency_s": 7.5e-6, "duplex": true (optional, default false: adds the reverse
//               directed link with the same numbers)}],
//    "routes": [{"src": "gpu0", "dst": "gpu4", "via": ["cpu0", "cpu1"]}] (optional)}
// Devices are numbered 0..num_devices()-1 in the JSON order of the vertices of kind "device".
// A Topology is a plain value, validated when built; thread-safe to read.
#pragma once

#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "hw/cluster.h"
#include "hw/device.h"

namespace tessera::hw {

enum class VertexKind { kDevice, kSwitch, kHost };  // JSON "device" | "switch" | "host"

// "device", "switch", "host".
const char* VertexKindName(VertexKind k);

struct TopoVertex {
  std::string name;
  VertexKind kind = VertexKind::kDevice;
  // > 0: traffic routed THROUGH this vertex is limited (e.g. a host bounce buffer, a root
  // complex); 0 = non-blocking. Always 0 for devices.
  double bw_bytes_per_s = 0;
  double latency_s = 0;  // added to routes that pass through it; 0 for devices
};

// A directed link between vertex ids.
struct TopoLink {
  std::string kind;  // "nvlink", "pcie", "upi", ...
  int src = 0;
  int dst = 0;
  double bw_bytes_per_s = 0;
  double latency_s = 0;
};

// A directed link ("pcie:gpu1->cpu0") or a capacity vertex ("host:cpu0").
struct Resource {
  std::string name;
  double bw_bytes_per_s = 0;
};

struct Route {
  std::vector<int> resources;  // resource ids, in path order
  std::vector<int> vertices;   // vertex ids, src first, dst last
  double latency_s = 0;        // links' latencies + intermediate vertices' latencies
  double bw_bytes_per_s = 0;   // the smallest resource bandwidth on the route (alone)
};

// Current schema version of topology files (and of ToJson's output).
inline constexpr int kTopologyFileVersion = 1;
// Bounds checked before anything is allocated or looped over.
inline constexpr int kMaxTopologyDevices = 64;
inline constexpr int kMaxTopologyVertices = 1024;
inline constexpr int kMaxTopologyLinks = 8192;   // entries of "links" (duplex ones count once)
inline constexpr int kMaxTopologyRoutes = 4096;  // entries of "routes"

class Topology {
 public:
  const std::string& name() const { return name_; }
  const std::string& provenance() const { return provenance_; }
  const std::vector<std::string>& sources() const { return sources_; }
  // Where it was read from (a data file origin or a user path); empty when built in code.
  const std::string& source() const { return source_; }
  const Device& device() const { return device_; }

  int num_devices() const { return static_cast<int>(device_vertices_.size()); }
  // Vertex id of device index `device` (0 <= device < num_devices()).
  int device_vertex(int device) const;
  const std::string& device_name(int device) const;
  // Device index of the device vertex named `name`, or -1.
  int FindDevice(const std::string& name) const;

  const std::vector<TopoVertex>& vertices() const { return vertices_; }
  const std::vector<TopoLink>& links() const { return links_; }
  // Every directed link (resource id = link id), then every capacity vertex.
  const std::vector<Resource>& resources() const { return resources_; }
  // The route from device `src_device` to device `dst_device` (src != dst, device indices).
  const Route& route(int src_device, int dst_device) const;
  // Whether the file overrode this route ("routes").
  bool route_overridden(int src_device, int dst_device) const;

 private:
  friend struct TopologyAccess;  // parser, ToJson, routes (topology_access.h)

  struct RouteOverride {
    int src_device = 0;
    int dst_device = 0;
    std::vector<int> via;  // vertex ids
  };

  std::string name_, provenance_, source_;
  std::vector<std::string> sources_;
  Device device_;
  std::vector<TopoVertex> vertices_;
  std::vector<TopoLink> links_;
  std::vector<Resource> resources_;
  std::vector<int> device_vertices_;      // device index -> vertex id
  std::vector<Route> routes_;             // src * n + dst
  std::vector<RouteOverride> overrides_;  // in file order, for ToJson
};

// Parses and validates; `source` prefixes messages and becomes Topology::source() unless the
// JSON has its own "source". "kind", "version" and "provenance" are optional in user files but
// checked when present. Messages name the field and value, e.g.
// `t.json: links[3].dst: got 'gpu9', not a vertex (vertices: gpu0, gpu1, cpu0)`.
core::StatusOr<Topology> TopologyFromJson(const core::Json& j, const std::string& source);
// Self-contained JSON (device inline, every link directed with "duplex": false, overridden
// routes); TopologyFromJson(ToJson(t)) gives back the same topology.
core::Json ToJson(const Topology& t);

// Names of the topology presets (data/hw/topologies): a6000x8, h100x8, rtx4090x4, plus any
// extra files in $TESSERA_DATA_DIR/hw/topologies or the install dir.
std::vector<std::string> TopologyPresetNames();
// A preset by name (kind and version required), or NotFound listing the presets.
core::StatusOr<Topology> TopologyPreset(const std::string& name);
// A preset name, or else a path to a topology JSON file.
core::StatusOr<Topology> LoadTopology(const std::string& name_or_file);

// One node with ranks_per_node = num_devices(): intra = the best single ring's (ring_order.h,
// over all devices) bottleneck bandwidth and step latency, inter = intra, so that Zellige's
// cost models run on the topology. InvalidArgument for a one-device topology (no ring).
core::StatusOr<Cluster> ToCluster(const Topology& t);

}  // namespace tessera::hw
