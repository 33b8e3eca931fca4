// Routes of a topology: the computed path of every device pair (fewest hops, then the larger
// bottleneck bandwidth, then vertex names; devices never forward) and the resources it
// crosses. Contract: hw/topology.h.
#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/infinity.h"
#include "hw/topology_access.h"

namespace tessera::hw {

using core::Status;

namespace {

using core::kInf;

}  // namespace

Route TopologyAccess::MakeRoute(const Topology& t, const std::vector<int>& path,
                                const std::map<std::pair<int, int>, int>& link_of,
                                const std::vector<int>& capacity_resource) {
  Route r;
  r.vertices = path;
  r.bw_bytes_per_s = kInf;
  for (size_t k = 0; k + 1 < path.size(); ++k) {
    const int link = link_of.at({path[k], path[k + 1]});
    r.resources.push_back(link);
    r.latency_s += t.links_[link].latency_s;
    r.bw_bytes_per_s = std::min(r.bw_bytes_per_s, t.links_[link].bw_bytes_per_s);
    if (k + 2 < path.size()) {  // path[k + 1] is an intermediate vertex
      const TopoVertex& v = t.vertices_[path[k + 1]];
      r.latency_s += v.latency_s;
      if (capacity_resource[path[k + 1]] >= 0) {
        r.resources.push_back(capacity_resource[path[k + 1]]);
        r.bw_bytes_per_s = std::min(r.bw_bytes_per_s, v.bw_bytes_per_s);
      }
    }
  }
  return r;
}

// Fewest hops, then the largest bottleneck, then the smallest vertex-name sequence; only the
// endpoints may be devices. Empty when there is no such path.
std::vector<int> TopologyAccess::ComputePath(const Topology& t,
                                             const std::vector<std::vector<int>>& out,
                                             const std::vector<std::vector<int>>& in, int s,
                                             int d) {
  const int nv = static_cast<int>(t.vertices_.size());
  auto forwards = [&](int v) { return t.vertices_[v].kind != VertexKind::kDevice; };
  auto cap = [&](int v) {
    return t.vertices_[v].bw_bytes_per_s > 0 ? t.vertices_[v].bw_bytes_per_s : kInf;
  };
  // Hop distances from s (forward) and to d (backward), through forwarding vertices only.
  auto bfs = [&](int start, const std::vector<std::vector<int>>& adj, bool forward,
                 std::vector<int>* order) {
    std::vector<int> dist(nv, -1);
    dist[start] = 0;
    order->push_back(start);
    for (size_t q = 0; q < order->size(); ++q) {
      const int u = (*order)[q];
      if (u != start && !forwards(u)) continue;
      for (int l : adj[u]) {
        const int v = forward ? t.links_[l].dst : t.links_[l].src;
        if (dist[v] < 0) {
          dist[v] = dist[u] + 1;
          order->push_back(v);
        }
      }
    }
    return dist;
  };
  std::vector<int> order_f, order_b;
  const std::vector<int> df = bfs(s, out, true, &order_f);
  if (df[d] < 0) return {};
  const std::vector<int> db = bfs(d, in, false, &order_b);
  const int hops = df[d];
  auto on_path = [&](int v) {
    return df[v] >= 0 && db[v] >= 0 && df[v] + db[v] == hops && (v == s || v == d || forwards(v));
  };
  auto dag = [&](int l) {
    const TopoLink& k = t.links_[l];
    return on_path(k.src) && on_path(k.dst) && df[k.src] + 1 == df[k.dst];
  };
  // The largest bottleneck over shortest paths (max-min composes exactly along the DAG).
  std::vector<double> bn(nv, -1);
  bn[s] = kInf;
  for (int u : order_f) {
    if (!on_path(u) || bn[u] < 0 || u == d) continue;
    const double through = u == s ? kInf : std::min(bn[u], cap(u));
    for (int l : out[u]) {
      if (!dag(l)) continue;
      const int v = t.links_[l].dst;
      bn[v] = std::max(bn[v], std::min(through, t.links_[l].bw_bytes_per_s));
    }
  }
  const double best = bn[d];
  // Keep the elements that reach `best`; then walk from s taking the smallest name that still
  // reaches d: the lexicographically smallest name sequence among the best paths.
  auto good_vertex = [&](int v) { return v == s || v == d || cap(v) >= best; };
  auto good = [&](int l) {
    const TopoLink& k = t.links_[l];
    return dag(l) && k.bw_bytes_per_s >= best && good_vertex(k.src) && good_vertex(k.dst);
  };
  std::vector<char> reaches(nv, 0);
  reaches[d] = 1;
  for (auto it = order_f.rbegin(); it != order_f.rend(); ++it) {
    const int u = *it;
    if (u == d || !on_path(u)) continue;
    for (int l : out[u]) {
      if (good(l) && reaches[t.links_[l].dst]) reaches[u] = 1;
    }
  }
  std::vector<int> path = {s};
  int u = s;
  while (u != d) {
    int next = -1;
    for (int l : out[u]) {
      const int v = t.links_[l].dst;
      if (!good(l) || !reaches[v]) continue;
      if (next < 0 || t.vertices_[v].name < t.vertices_[next].name) next = v;
    }
    CHECK(next >= 0) << "route walk lost its way";
    path.push_back(next);
    u = next;
  }
  return path;
}

Status TopologyAccess::ComputeRoutes(Topology* t,
                                     const std::map<std::pair<int, int>, int>& link_of) {
  const int nv = static_cast<int>(t->vertices_.size());
  std::vector<std::vector<int>> out(nv), in(nv);
  for (size_t l = 0; l < t->links_.size(); ++l) {
    out[t->links_[l].src].push_back(static_cast<int>(l));
    in[t->links_[l].dst].push_back(static_cast<int>(l));
  }
  // Resources: every directed link, then every capacity vertex.
  t->resources_.clear();
  for (const TopoLink& l : t->links_) {
    t->resources_.push_back(
        {l.kind + ":" + t->vertices_[l.src].name + "->" + t->vertices_[l.dst].name,
         l.bw_bytes_per_s});
  }
  std::vector<int> capacity_resource(nv, -1);
  for (int v = 0; v < nv; ++v) {
    const TopoVertex& x = t->vertices_[v];
    if (x.bw_bytes_per_s > 0) {
      capacity_resource[v] = static_cast<int>(t->resources_.size());
      t->resources_.push_back(
          {std::string(VertexKindName(x.kind)) + ":" + x.name, x.bw_bytes_per_s});
    }
  }
  const int n = t->num_devices();
  t->routes_.assign(static_cast<size_t>(n) * n, Route{});
  std::vector<char> overridden(static_cast<size_t>(n) * n, 0);
  for (const auto& o : t->overrides_) {
    std::vector<int> path = {t->device_vertex(o.src_device)};
    path.insert(path.end(), o.via.begin(), o.via.end());
    path.push_back(t->device_vertex(o.dst_device));
    const size_t k = static_cast<size_t>(o.src_device) * n + o.dst_device;
    t->routes_[k] = MakeRoute(*t, path, link_of, capacity_resource);
    overridden[k] = 1;
  }
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      const size_t k = static_cast<size_t>(a) * n + b;
      if (a == b || overridden[k]) continue;
      std::vector<int> path = ComputePath(*t, out, in, t->device_vertex(a), t->device_vertex(b));
      if (path.empty()) {
        return core::InvalidArgument("routes: no path from " + t->device_name(a) + " to " +
                                     t->device_name(b) +
                                     " (disconnected; devices do not forward traffic)");
      }
      t->routes_[k] = MakeRoute(*t, path, link_of, capacity_resource);
    }
  }
  return Status::Ok();
}

}  // namespace tessera::hw
