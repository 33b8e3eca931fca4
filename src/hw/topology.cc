#include "hw/topology.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "core/infinity.h"
#include "core/input_file.h"
#include "core/parse_number.h"
#include "hw/data_files.h"
#include "hw/ring_order.h"
#include "hw/topology_access.h"

namespace tessera::hw {

using core::Json;
using core::Status;
using core::StatusOr;

const char* VertexKindName(VertexKind k) {
  switch (k) {
    case VertexKind::kDevice:
      return "device";
    case VertexKind::kSwitch:
      return "switch";
    case VertexKind::kHost:
      return "host";
  }
  return "device";
}

int Topology::device_vertex(int device) const {
  CHECK(device >= 0 && device < num_devices()) << "device " << device;
  return device_vertices_[device];
}

const std::string& Topology::device_name(int device) const {
  return vertices_[device_vertex(device)].name;
}

int Topology::FindDevice(const std::string& name) const {
  for (int d = 0; d < num_devices(); ++d) {
    if (vertices_[device_vertices_[d]].name == name) return d;
  }
  return -1;
}

const Route& Topology::route(int src_device, int dst_device) const {
  const int n = num_devices();
  CHECK(src_device >= 0 && src_device < n && dst_device >= 0 && dst_device < n &&
        src_device != dst_device)
      << "route(" << src_device << ", " << dst_device << ") of " << n << " devices";
  return routes_[static_cast<size_t>(src_device) * n + dst_device];
}

bool Topology::route_overridden(int src_device, int dst_device) const {
  for (const auto& o : overrides_) {
    if (o.src_device == src_device && o.dst_device == dst_device) return true;
  }
  return false;
}

namespace {

using core::kInf;

// "gpu0, gpu1, cpu0", cut to the first 10 and the last when there are more than 12.
std::string ListNames(const std::vector<std::string>& names) {
  std::string out;
  const size_t n = names.size();
  for (size_t i = 0; i < n; ++i) {
    if (n > 12 && i == 10) {
      out += ", ...";
      i = n - 1;
    }
    out += (out.empty() ? "" : ", ") + names[i];
  }
  return out;
}

std::string Quote(const std::string& s) { return "'" + s + "'"; }

std::string Show(double v) { return core::ShowNumber(v); }

StatusOr<VertexKind> ParseVertexKind(const Json& obj, const std::string& path) {
  ASSIGN_OR_RETURN(std::string k, core::GetString(obj, path, "kind"));
  if (k == "device") return VertexKind::kDevice;
  if (k == "switch") return VertexKind::kSwitch;
  if (k == "host") return VertexKind::kHost;
  return core::InvalidArgument(core::JoinPath(path, "kind") + ": got " + Quote(k) +
                               ", must be device, switch or host");
}

// A bandwidth that is 0 (none) or a plausible link bandwidth.
StatusOr<double> GetOptionalCapacity(const Json& obj, const std::string& path) {
  if (!obj.contains("bw_bytes_per_s")) return 0.0;
  ASSIGN_OR_RETURN(double bw, core::GetNonNegativeDouble(obj, path, "bw_bytes_per_s"));
  if (bw != 0 && (bw < kMinLinkBwBytesPerS || bw > kMaxLinkBwBytesPerS)) {
    return core::InvalidArgument(core::JoinPath(path, "bw_bytes_per_s") + ": got " + Show(bw) +
                                 ", must be 0 (non-blocking) or in [" + Show(kMinLinkBwBytesPerS) +
                                 ", " + Show(kMaxLinkBwBytesPerS) + "] bytes/s");
  }
  return bw;
}

StatusOr<const Json*> GetArray(const Json& obj, const std::string& key, size_t max_size) {
  ASSIGN_OR_RETURN(const Json* a, core::Member(obj, "", key));
  if (!a->is_array()) {
    return core::InvalidArgument(key + ": got " + core::ShowJson(*a) + ", must be an array");
  }
  if (a->size() > max_size) {
    return core::InvalidArgument(key + ": got " + std::to_string(a->size()) +
                                 " entries, must be at most " + std::to_string(max_size));
  }
  return a;
}

}  // namespace

Status TopologyAccess::ParseVertices(const Json& j, Topology* t, std::map<std::string, int>* ids) {
  ASSIGN_OR_RETURN(const Json* vs, GetArray(j, "vertices", kMaxTopologyVertices));
  for (size_t i = 0; i < vs->size(); ++i) {
    const Json& v = (*vs)[i];
    const std::string path = "vertices[" + std::to_string(i) + "]";
    RETURN_IF_ERROR(core::CheckKnownKeys(v, path, {"name", "kind", "bw_bytes_per_s", "latency_s"}));
    TopoVertex x;
    ASSIGN_OR_RETURN(x.name, core::GetString(v, path, "name"));
    if (!IsPresetName(x.name)) {
      return core::InvalidArgument(core::JoinPath(path, "name") + ": got " + Quote(x.name) +
                                   ", must be a non-empty name of [A-Za-z0-9._-], e.g. gpu0");
    }
    if (auto it = ids->find(x.name); it != ids->end()) {
      return core::InvalidArgument(core::JoinPath(path, "name") + ": got " + Quote(x.name) +
                                   ", already the name of vertices[" + std::to_string(it->second) +
                                   "] (names must be unique)");
    }
    ASSIGN_OR_RETURN(x.kind, ParseVertexKind(v, path));
    ASSIGN_OR_RETURN(x.bw_bytes_per_s, GetOptionalCapacity(v, path));
    if (v.contains("latency_s")) {
      ASSIGN_OR_RETURN(x.latency_s,
                       core::GetDoubleInRange(v, path, "latency_s", 0, kMaxLinkLatencyS));
    }
    if (x.kind == VertexKind::kDevice && (x.bw_bytes_per_s != 0 || x.latency_s != 0)) {
      const char* field = x.bw_bytes_per_s != 0 ? "bw_bytes_per_s" : "latency_s";
      const double got = x.bw_bytes_per_s != 0 ? x.bw_bytes_per_s : x.latency_s;
      return core::InvalidArgument(core::JoinPath(path, field) + ": got " + Show(got) +
                                   ", must be 0 for a device (devices do not forward traffic; "
                                   "put a capacity on a switch or host)");
    }
    if (x.kind == VertexKind::kDevice) {
      if (t->num_devices() == kMaxTopologyDevices) {
        return core::InvalidArgument(path + ": device " + Quote(x.name) + " is one too many, " +
                                     "a topology has at most " +
                                     std::to_string(kMaxTopologyDevices) + " devices");
      }
      t->device_vertices_.push_back(static_cast<int>(i));
    }
    (*ids)[x.name] = static_cast<int>(i);
    t->vertices_.push_back(std::move(x));
  }
  if (t->num_devices() == 0) {
    return core::InvalidArgument("vertices: no vertex of kind device, need at least 1");
  }
  return Status::Ok();
}

Status TopologyAccess::ParseLinks(const Json& j, Topology* t, const std::map<std::string, int>& ids,
                                  std::map<std::pair<int, int>, int>* link_of) {
  ASSIGN_OR_RETURN(const Json* ls, GetArray(j, "links", kMaxTopologyLinks));
  std::vector<std::string> names;
  for (const TopoVertex& v : t->vertices_) names.push_back(v.name);
  std::map<std::pair<int, int>, size_t> entry_of;  // directed pair -> links[] entry
  for (size_t i = 0; i < ls->size(); ++i) {
    const Json& l = (*ls)[i];
    const std::string path = "links[" + std::to_string(i) + "]";
    RETURN_IF_ERROR(core::CheckKnownKeys(
        l, path, {"src", "dst", "kind", "bw_bytes_per_s", "latency_s", "duplex"}));
    int ends[2] = {0, 0};
    const char* keys[2] = {"src", "dst"};
    for (int e = 0; e < 2; ++e) {
      ASSIGN_OR_RETURN(std::string name, core::GetString(l, path, keys[e]));
      auto it = ids.find(name);
      if (it == ids.end()) {
        return core::InvalidArgument(core::JoinPath(path, keys[e]) + ": got " + Quote(name) +
                                     ", not a vertex (vertices: " + ListNames(names) + ")");
      }
      ends[e] = it->second;
    }
    if (ends[0] == ends[1]) {
      return core::InvalidArgument(path + ": src and dst are both " + Quote(names[ends[0]]) +
                                   " (a link joins two vertices)");
    }
    TopoLink link;
    link.src = ends[0];
    link.dst = ends[1];
    ASSIGN_OR_RETURN(link.kind, core::GetString(l, path, "kind"));
    if (!IsPresetName(link.kind)) {
      return core::InvalidArgument(core::JoinPath(path, "kind") + ": got " + Quote(link.kind) +
                                   ", must be a non-empty name of [A-Za-z0-9._-], e.g. nvlink");
    }
    ASSIGN_OR_RETURN(link.bw_bytes_per_s,
                     core::GetDoubleInRange(l, path, "bw_bytes_per_s", kMinLinkBwBytesPerS,
                                            kMaxLinkBwBytesPerS));
    ASSIGN_OR_RETURN(link.latency_s,
                     core::GetDoubleInRange(l, path, "latency_s", 0, kMaxLinkLatencyS));
    bool duplex = false;
    if (l.contains("duplex")) {
      if (!l["duplex"].is_boolean()) {
        return core::InvalidArgument(core::JoinPath(path, "duplex") + ": got " +
                                     core::ShowJson(l["duplex"]) +
                                     ", must be true (adds the reverse link) or false");
      }
      duplex = l["duplex"].get<bool>();
    }
    for (int dir = 0; dir < (duplex ? 2 : 1); ++dir) {
      TopoLink d = link;
      if (dir == 1) std::swap(d.src, d.dst);
      const std::pair<int, int> key{d.src, d.dst};
      if (auto it = entry_of.find(key); it != entry_of.end()) {
        return core::InvalidArgument(path + ": duplicates the directed link " + names[d.src] +
                                     "->" + names[d.dst] + " of links[" +
                                     std::to_string(it->second) +
                                     "] (one link per direction: put the combined bandwidth on "
                                     "it)");
      }
      entry_of[key] = i;
      (*link_of)[key] = static_cast<int>(t->links_.size());
      t->links_.push_back(std::move(d));
    }
  }
  return Status::Ok();
}

Status TopologyAccess::ParseRoutes(const Json& j, Topology* t,
                                   const std::map<std::string, int>& ids,
                                   const std::map<std::pair<int, int>, int>& link_of) {
  if (!j.contains("routes")) return Status::Ok();
  ASSIGN_OR_RETURN(const Json* rs, GetArray(j, "routes", kMaxTopologyRoutes));
  std::vector<std::string> device_names;
  for (int d = 0; d < t->num_devices(); ++d) device_names.push_back(t->device_name(d));
  std::map<std::pair<int, int>, size_t> seen;
  for (size_t i = 0; i < rs->size(); ++i) {
    const Json& r = (*rs)[i];
    const std::string path = "routes[" + std::to_string(i) + "]";
    RETURN_IF_ERROR(core::CheckKnownKeys(r, path, {"src", "dst", "via"}));
    Topology::RouteOverride o;
    int* ends[2] = {&o.src_device, &o.dst_device};
    const char* keys[2] = {"src", "dst"};
    for (int e = 0; e < 2; ++e) {
      ASSIGN_OR_RETURN(std::string name, core::GetString(r, path, keys[e]));
      *ends[e] = t->FindDevice(name);
      if (*ends[e] < 0) {
        return core::InvalidArgument(core::JoinPath(path, keys[e]) + ": got " + Quote(name) +
                                     ", not a device (devices: " + ListNames(device_names) + ")");
      }
    }
    if (o.src_device == o.dst_device) {
      return core::InvalidArgument(path + ": src and dst are both " +
                                   Quote(device_names[o.src_device]) +
                                   " (a route joins two devices)");
    }
    if (auto it = seen.find({o.src_device, o.dst_device}); it != seen.end()) {
      return core::InvalidArgument(path + ": a second route from " + device_names[o.src_device] +
                                   " to " + device_names[o.dst_device] + " (first: routes[" +
                                   std::to_string(it->second) + "])");
    }
    seen[{o.src_device, o.dst_device}] = i;
    ASSIGN_OR_RETURN(const Json* via, core::Member(r, path, "via"));
    const std::string via_path = core::JoinPath(path, "via");
    if (!via->is_array() || via->size() >= t->vertices_.size()) {
      return core::InvalidArgument(via_path + ": got " + core::ShowJson(*via) +
                                   ", must be an array of at most " +
                                   std::to_string(t->vertices_.size() - 1) +
                                   " vertex names (the vertices between src and dst)");
    }
    std::vector<int> path_vertices = {t->device_vertex(o.src_device)};
    for (size_t k = 0; k < via->size(); ++k) {
      const std::string vp = via_path + "[" + std::to_string(k) + "]";
      const Json& name = (*via)[k];
      if (!name.is_string()) {
        return core::InvalidArgument(vp + ": got " + core::ShowJson(name) +
                                     ", must be a vertex name");
      }
      auto it = ids.find(name.get<std::string>());
      if (it == ids.end()) {
        return core::InvalidArgument(vp + ": got " + Quote(name.get<std::string>()) +
                                     ", not a vertex");
      }
      if (t->vertices_[it->second].kind == VertexKind::kDevice) {
        return core::InvalidArgument(vp + ": got " + Quote(name.get<std::string>()) +
                                     ", a device (devices do not forward traffic)");
      }
      o.via.push_back(it->second);
      path_vertices.push_back(it->second);
    }
    path_vertices.push_back(t->device_vertex(o.dst_device));
    std::vector<int> sorted = path_vertices;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      return core::InvalidArgument(via_path + ": visits a vertex twice (a route is a simple path)");
    }
    for (size_t k = 0; k + 1 < path_vertices.size(); ++k) {
      const int a = path_vertices[k], b = path_vertices[k + 1];
      if (!link_of.contains({a, b})) {
        return core::InvalidArgument(via_path + ": no link " + t->vertices_[a].name + "->" +
                                     t->vertices_[b].name);
      }
    }
    t->overrides_.push_back(std::move(o));
  }
  return Status::Ok();
}

StatusOr<Topology> TopologyAccess::Parse(const Json& j, const std::string& source,
                                         std::string* device_origin) {
  RETURN_IF_ERROR(CheckDataFileHeader(j, "topology", kTopologyFileVersion, /*required=*/false));
  RETURN_IF_ERROR(core::CheckKnownKeys(j, "",
                                       {"kind", "version", "name", "provenance", "sources",
                                        "source", "device", "vertices", "links", "routes"}));
  Topology t;
  ASSIGN_OR_RETURN(t.name_, core::GetString(j, "", "name"));
  if (t.name_.empty()) return core::InvalidArgument("name: must be a non-empty string");
  t.provenance_ = j.contains("provenance") && j["provenance"].is_string()
                      ? j["provenance"].get<std::string>()
                      : "user file";
  if (j.contains("sources")) {
    const Json& s = j["sources"];
    // get<> would throw on anything but an array of strings.
    if (!s.is_array() ||
        !std::all_of(s.begin(), s.end(), [](const Json& x) { return x.is_string(); })) {
      return core::InvalidArgument("sources: got " + core::ShowJson(s) +
                                   ", must be an array of strings");
    }
    t.sources_ = s.get<std::vector<std::string>>();
  }
  t.source_ =
      j.contains("source") && j["source"].is_string() ? j["source"].get<std::string>() : source;
  ASSIGN_OR_RETURN(const Json* d, core::Member(j, "", "device"));
  if (d->is_string()) {
    auto device = DevicePreset(d->get<std::string>(), device_origin);
    if (!device.ok() && device.status().code() == core::StatusCode::kNotFound) {
      return core::InvalidArgument(device.status().message());  // a bad field of this file
    }
    ASSIGN_OR_RETURN(t.device_, std::move(device));
  } else {
    ASSIGN_OR_RETURN(t.device_, DeviceFromJson(*d, "device"));
  }
  std::map<std::string, int> ids;
  RETURN_IF_ERROR(ParseVertices(j, &t, &ids));
  std::map<std::pair<int, int>, int> link_of;
  RETURN_IF_ERROR(ParseLinks(j, &t, ids, &link_of));
  RETURN_IF_ERROR(ParseRoutes(j, &t, ids, link_of));
  RETURN_IF_ERROR(ComputeRoutes(&t, link_of));
  return t;
}

Json TopologyAccess::ToJson(const Topology& t) {
  Json vertices = Json::array();
  for (const TopoVertex& v : t.vertices_) {
    Json x = {{"name", v.name}, {"kind", VertexKindName(v.kind)}};
    if (v.bw_bytes_per_s != 0) x["bw_bytes_per_s"] = v.bw_bytes_per_s;
    if (v.latency_s != 0) x["latency_s"] = v.latency_s;
    vertices.push_back(std::move(x));
  }
  Json links = Json::array();
  for (const TopoLink& l : t.links_) {
    links.push_back({{"src", t.vertices_[l.src].name},
                     {"dst", t.vertices_[l.dst].name},
                     {"kind", l.kind},
                     {"bw_bytes_per_s", l.bw_bytes_per_s},
                     {"latency_s", l.latency_s},
                     {"duplex", false}});
  }
  Json j = {{"kind", "topology"},    {"version", kTopologyFileVersion},
            {"name", t.name_},       {"provenance", t.provenance_},
            {"sources", t.sources_}, {"device", hw::ToJson(t.device_)},
            {"vertices", vertices},  {"links", links}};
  if (!t.overrides_.empty()) {
    Json routes = Json::array();
    for (const auto& o : t.overrides_) {
      Json via = Json::array();
      for (int v : o.via) via.push_back(t.vertices_[v].name);
      routes.push_back({{"src", t.device_name(o.src_device)},
                        {"dst", t.device_name(o.dst_device)},
                        {"via", via}});
    }
    j["routes"] = routes;
  }
  if (!t.source_.empty()) j["source"] = t.source_;
  return j;
}

StatusOr<Topology> TopologyFromJson(const Json& j, const std::string& source) {
  auto r = TopologyAccess::Parse(j, source, nullptr);
  if (!r.ok()) return r.status().WithPrefix(source);
  return r;
}

Json ToJson(const Topology& t) { return TopologyAccess::ToJson(t); }

std::vector<std::string> TopologyPresetNames() { return ListDataFiles("hw/topologies"); }

StatusOr<Topology> TopologyPreset(const std::string& name) {
  auto file = LoadDataFile("hw/topologies", name, "topology", kTopologyFileVersion);
  if (!file.ok()) {
    if (file.status().code() != core::StatusCode::kNotFound) return file.status();
    std::string all;
    for (const auto& n : TopologyPresetNames()) all += (all.empty() ? "" : ", ") + n;
    return core::NotFound("topology: got " + Quote(name) + ", must be one of " + all +
                          " or a JSON file");
  }
  std::string device_origin;
  auto t = TopologyAccess::Parse(file->json, file->origin, &device_origin);
  if (!t.ok()) return t.status().WithPrefix(file->origin);
  if (t->name() != name) {
    return core::InvalidArgument(file->origin + ": name: got " + Quote(t->name()) + ", must be " +
                                 Quote(name) + " (the file's name without .json)");
  }
  return t;
}

StatusOr<Topology> LoadTopology(const std::string& name_or_file) {
  auto preset = TopologyPreset(name_or_file);
  if (preset.ok() || preset.status().code() != core::StatusCode::kNotFound) return preset;
  if (!core::PathExists(name_or_file)) return preset.status();
  ASSIGN_OR_RETURN(Json j, core::ReadJsonFile(name_or_file));
  return TopologyFromJson(j, name_or_file);
}

StatusOr<Cluster> ToCluster(const Topology& t) {
  if (t.num_devices() < 2) {
    return core::InvalidArgument("topology " + t.name() +
                                 ": has one device, no ring to model as a cluster link");
  }
  std::vector<int> all(t.num_devices());
  for (int d = 0; d < t.num_devices(); ++d) all[d] = d;
  ASSIGN_OR_RETURN(RingAnalysis ring, BestRing(t, all, RingKind::kSingle));
  Cluster c;
  c.name = t.name();
  c.provenance = t.provenance();
  c.device = t.device();
  c.nodes = 1;
  c.ranks_per_node = t.num_devices();
  c.intra = {t.name() + "-best-ring", ring.bottleneck_bytes_per_s, ring.step_latency_s};
  c.inter = c.intra;
  c.source = t.source();
  Status v = Validate(c);
  if (!v.ok()) return v.WithPrefix("topology " + t.name() + " as a cluster");
  return c;
}

}  // namespace tessera::hw
