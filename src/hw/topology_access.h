// TopologyAccess: the internal friend of hw::Topology that fills its private members: the
// JSON parser and ToJson (topology.cc) and the route computation (topology_routes.cc). Not
// part of the public interface; include only from those two files. Stateless; thread-safe.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "hw/topology.h"

namespace tessera::hw {

struct TopologyAccess {
  static core::StatusOr<Topology> Parse(const core::Json& j, const std::string& source,
                                        std::string* device_origin);
  static core::Json ToJson(const Topology& t);

 private:
  static core::Status ParseVertices(const core::Json& j, Topology* t,
                                    std::map<std::string, int>* ids);
  static core::Status ParseLinks(const core::Json& j, Topology* t,
                                 const std::map<std::string, int>& ids,
                                 std::map<std::pair<int, int>, int>* link_of);
  static core::Status ParseRoutes(const core::Json& j, Topology* t,
                                  const std::map<std::string, int>& ids,
                                  const std::map<std::pair<int, int>, int>& link_of);
  static core::Status ComputeRoutes(Topology* t, const std::map<std::pair<int, int>, int>& link_of);
  static Route MakeRoute(const Topology& t, const std::vector<int>& path,
                         const std::map<std::pair<int, int>, int>& link_of,
                         const std::vector<int>& capacity_resource);
  static std::vector<int> ComputePath(const Topology& t, const std::vector<std::vector<int>>& out,
                                      const std::vector<std::vector<int>>& in, int s, int d);
};

}  // namespace tessera::hw
