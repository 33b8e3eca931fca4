#include "hw/topology.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "hw/test_util.h"

namespace tessera::hw {
namespace {

using core::Json;

using testing::Named;
using testing::Preset;

std::vector<std::string> ResourceNames(const Topology& t, const Route& r) {
  std::vector<std::string> out;
  for (int x : r.resources) out.push_back(t.resources()[x].name);
  return out;
}

std::vector<std::string> VertexNames(const Topology& t, const Route& r) {
  std::vector<std::string> out;
  for (int v : r.vertices) out.push_back(t.vertices()[v].name);
  return out;
}

// Two devices a, b between two switches s1 and s2; callers add links.
Json Small() {
  return {{"name", "small"},
          {"device", "h100-sxm5-80gb"},
          {"vertices",
           {{{"name", "a"}, {"kind", "device"}},
            {{"name", "b"}, {"kind", "device"}},
            {{"name", "s2"}, {"kind", "switch"}},
            {{"name", "s1"}, {"kind", "switch"}}}},
          {"links", Json::array()}};
}

TEST(TopologyTest, PresetsAreListedAndLoad) {
  const std::vector<std::string> names = TopologyPresetNames();
  for (const char* n : {"a6000x8", "h100x8", "rtx4090x4"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
    Topology t = Preset(n);
    EXPECT_EQ(t.name(), n);
    EXPECT_EQ(t.provenance(), "modeled from datasheets");
    EXPECT_FALSE(t.sources().empty());
    EXPECT_EQ(t.source(), std::string("embedded: hw/topologies/") + n + ".json");
  }
  EXPECT_EQ(Preset("a6000x8").num_devices(), 8);
  EXPECT_EQ(Preset("h100x8").num_devices(), 8);
  EXPECT_EQ(Preset("rtx4090x4").num_devices(), 4);
  EXPECT_EQ(Preset("a6000x8").device().name, "RTX-A6000-48GB");
}

TEST(TopologyTest, A6000Routes) {
  Topology t = Preset("a6000x8");
  // 4 NVLink + 8 PCIe + 1 UPI duplex links = 26 directed links, no capacity vertex.
  EXPECT_EQ(t.links().size(), 26u);
  EXPECT_EQ(t.resources().size(), 26u);
  const Route& nv = t.route(0, 1);
  EXPECT_EQ(ResourceNames(t, nv), (std::vector<std::string>{"nvlink:gpu0->gpu1"}));
  EXPECT_DOUBLE_EQ(nv.latency_s, 3e-6);
  EXPECT_DOUBLE_EQ(nv.bw_bytes_per_s, 56.25e9);
  const Route& pcie = t.route(1, 2);
  EXPECT_EQ(ResourceNames(t, pcie),
            (std::vector<std::string>{"pcie:gpu1->cpu0", "pcie:cpu0->gpu2"}));
  EXPECT_DOUBLE_EQ(pcie.latency_s, 15e-6);
  const Route& upi = t.route(7, 0);
  EXPECT_EQ(VertexNames(t, upi), (std::vector<std::string>{"gpu7", "cpu1", "cpu0", "gpu0"}));
  EXPECT_EQ(ResourceNames(t, upi),
            (std::vector<std::string>{"pcie:gpu7->cpu1", "upi:cpu1->cpu0", "pcie:cpu0->gpu0"}));
  EXPECT_DOUBLE_EQ(upi.latency_s, 16e-6);
  EXPECT_DOUBLE_EQ(upi.bw_bytes_per_s, 24e9);
  EXPECT_FALSE(t.route_overridden(7, 0));
}

TEST(TopologyTest, H100AndRtx4090Routes) {
  Topology h = Preset("h100x8");
  EXPECT_DOUBLE_EQ(h.route(3, 5).latency_s, 8e-6);
  EXPECT_DOUBLE_EQ(h.route(3, 5).bw_bytes_per_s, 450e9);
  EXPECT_EQ(VertexNames(h, h.route(3, 5)), (std::vector<std::string>{"gpu3", "nvswitch", "gpu5"}));
  Topology r = Preset("rtx4090x4");
  // Peer traffic bounces through host memory: the host's capacity is on the route.
  EXPECT_EQ(ResourceNames(r, r.route(0, 3)),
            (std::vector<std::string>{"pcie:gpu0->cpu0", "host:cpu0", "pcie:cpu0->gpu3"}));
  EXPECT_DOUBLE_EQ(r.route(0, 3).latency_s, 25e-6);
  EXPECT_EQ(r.resources().back().name, "host:cpu0");
}

TEST(TopologyTest, RouteChoiceFewestHopsThenBandwidthThenNames) {
  // Two 2-hop paths a->s1->b and a->s2->b: the faster wins; equal bandwidths: the smaller name.
  Json j = Small();
  j["links"] = {testing::LinkJson("a", "s1", 10e9), testing::LinkJson("s1", "b", 10e9),
                testing::LinkJson("a", "s2", 20e9), testing::LinkJson("s2", "b", 20e9)};
  auto t = TopologyFromJson(j, "t.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(VertexNames(*t, t->route(0, 1)), (std::vector<std::string>{"a", "s2", "b"}));
  j["links"][2]["bw_bytes_per_s"] = 10e9;
  j["links"][3]["bw_bytes_per_s"] = 10e9;
  t = TopologyFromJson(j, "t.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(VertexNames(*t, t->route(0, 1)), (std::vector<std::string>{"a", "s1", "b"}));
  // A slow direct link beats a fast 2-hop path (fewest hops first).
  j["links"].push_back(testing::LinkJson("a", "b", 1e9));
  t = TopologyFromJson(j, "t.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(VertexNames(*t, t->route(0, 1)), (std::vector<std::string>{"a", "b"}));
  // A capacity vertex counts in the bottleneck: s2 limited to 5e9 loses to s1.
  j["links"].erase(4);
  j["links"][2]["bw_bytes_per_s"] = 20e9;
  j["links"][3]["bw_bytes_per_s"] = 20e9;
  j["vertices"][2]["bw_bytes_per_s"] = 5e9;
  t = TopologyFromJson(j, "t.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(VertexNames(*t, t->route(0, 1)), (std::vector<std::string>{"a", "s1", "b"}));
}

TEST(TopologyTest, DevicesDoNotForward) {
  // c reaches b only through a: no route c->b.
  Json j = Small();
  j["vertices"].push_back({{"name", "c"}, {"kind", "device"}});
  j["links"] = {testing::LinkJson("a", "b", 10e9), testing::LinkJson("c", "a", 10e9)};
  auto t = TopologyFromJson(j, "t.json");
  EXPECT_EQ(t.status().message(),
            "t.json: routes: no path from b to c (disconnected; devices do not forward traffic)");
}

TEST(TopologyTest, RouteOverride) {
  Json j = Small();
  j["links"] = {testing::LinkJson("a", "s1", 10e9, 1e-6), testing::LinkJson("s1", "s2", 10e9, 2e-6),
                testing::LinkJson("s2", "b", 10e9, 1e-6)};
  j["vertices"][3]["latency_s"] = 5e-6;
  auto t = TopologyFromJson(j, "t.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_DOUBLE_EQ(t->route(0, 1).latency_s, 1e-6 + 5e-6 + 2e-6 + 1e-6);
  j["links"].push_back(testing::LinkJson("a", "s2", 10e9, 1e-6));
  j["routes"] = {{{"src", "a"}, {"dst", "b"}, {"via", {"s1", "s2"}}}};
  t = TopologyFromJson(j, "t.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(VertexNames(*t, t->route(0, 1)), (std::vector<std::string>{"a", "s1", "s2", "b"}));
  EXPECT_TRUE(t->route_overridden(0, 1));
  EXPECT_EQ(VertexNames(*t, t->route(1, 0)), (std::vector<std::string>{"b", "s2", "a"}));
  // Round trip keeps the override.
  auto back = TopologyFromJson(ToJson(*t), "back");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), ToJson(*t));
  EXPECT_TRUE(back->route_overridden(0, 1));
}

TEST(TopologyTest, JsonRoundTrips) {
  for (const std::string& n : TopologyPresetNames()) {
    Topology t = Preset(n);
    const Json j = ToJson(t);
    EXPECT_EQ(j["kind"], "topology");
    EXPECT_EQ(j["version"], kTopologyFileVersion);
    auto back = TopologyFromJson(j, "copy");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(ToJson(*back), j) << n;
    EXPECT_EQ(back->resources().size(), t.resources().size());
  }
}

TEST(TopologyTest, ValidationMessagesNameFieldAndValue) {
  const Json base = Json::parse(
      R"({"name": "t", "device": "h100-sxm5-80gb",
          "vertices": [{"name": "gpu0", "kind": "device"}, {"name": "gpu1", "kind": "device"},
                       {"name": "cpu0", "kind": "host"}],
          "links": [{"src": "gpu0", "dst": "cpu0", "kind": "pcie", "bw_bytes_per_s": 24e9,
                     "latency_s": 7.5e-6, "duplex": true},
                    {"src": "gpu1", "dst": "cpu0", "kind": "pcie", "bw_bytes_per_s": 24e9,
                     "latency_s": 7.5e-6, "duplex": true}]})");
  ASSERT_TRUE(TopologyFromJson(base, "t.json").ok());
  struct Case {
    std::string patch;  // a JSON merge patch
    std::string want;
  };
  const std::vector<Case> cases = {
      {R"({"links": [{"src": "gpu0", "dst": "gpu9", "kind": "pcie", "bw_bytes_per_s": 1e9,
                      "latency_s": 0}]})",
       "t.json: links[0].dst: got 'gpu9', not a vertex (vertices: gpu0, gpu1, cpu0)"},
      {R"({"links": [{"src": "gpu0", "dst": "gpu1", "kind": "pcie", "bw_bytes_per_s": 0,
                      "latency_s": 0}]})",
       "t.json: links[0].bw_bytes_per_s: got 0, must be in [1000, 1e+16]"},
      {R"({"links": [{"src": "gpu0", "dst": "gpu1", "kind": "pcie", "bw_bytes_per_s": 1e9,
                      "latency_s": -1}]})",
       "t.json: links[0].latency_s: got -1, must be in [0, 10]"},
      {R"({"links": [{"src": "gpu0", "dst": "gpu0", "kind": "pcie", "bw_bytes_per_s": 1e9,
                      "latency_s": 0}]})",
       "t.json: links[0]: src and dst are both 'gpu0' (a link joins two vertices)"},
      {R"({"links": [{"src": "gpu0", "dst": "gpu1", "kind": "pcie", "bw_bytes_per_s": 1e9,
                      "latency_s": 0, "duplex": true},
                     {"src": "gpu1", "dst": "gpu0", "kind": "nv", "bw_bytes_per_s": 1e9,
                      "latency_s": 0}]})",
       "t.json: links[1]: duplicates the directed link gpu1->gpu0 of links[0]"},
      {R"({"links": [{"src": "gpu0", "dst": "gpu1", "kind": "pcie", "bw_bytes_per_s": 1e9,
                      "latency_s": 0, "duplex": "yes"}]})",
       "t.json: links[0].duplex: got \"yes\", must be true"},
      {R"({"links": [{"src": "gpu0", "dst": "gpu1", "kind": "", "bw_bytes_per_s": 1e9,
                      "latency_s": 0}]})",
       "t.json: links[0].kind: got '', must be a non-empty name"},
      {R"({"links": [{"src": "gpu0", "dst": "cpu0", "kind": "pcie", "bw_bytes_per_s": 1e9,
                      "latency_s": 0, "duplex": true}]})",
       "t.json: routes: no path from gpu0 to gpu1 (disconnected"},
      {R"({"vertices": [{"name": "gpu0", "kind": "device"}, {"name": "gpu0", "kind": "host"}]})",
       "t.json: vertices[1].name: got 'gpu0', already the name of vertices[0] (names must be "
       "unique)"},
      {R"({"vertices": [{"name": "cpu0", "kind": "host"}], "links": []})",
       "t.json: vertices: no vertex of kind device, need at least 1"},
      {R"({"vertices": [{"name": "gpu0", "kind": "gpu"}]})",
       "t.json: vertices[0].kind: got 'gpu', must be device, switch or host"},
      {R"({"vertices": [{"name": "gpu0", "kind": "device", "bw_bytes_per_s": 1e9}]})",
       "t.json: vertices[0].bw_bytes_per_s: got 1e+09, must be 0 for a device"},
      {R"({"vertices": [{"name": "gpu0", "kind": "device"},
                        {"name": "sw", "kind": "switch", "bw_bytes_per_s": 5}]})",
       "t.json: vertices[1].bw_bytes_per_s: got 5, must be 0 (non-blocking) or in [1000, 1e+16]"},
      {R"({"vertices": [{"name": "a b", "kind": "device"}]})",
       "t.json: vertices[0].name: got 'a b', must be a non-empty name of [A-Za-z0-9._-]"},
      {R"({"vertices": {"gpu0": "device"}})",
       "t.json: vertices: got {\"gpu0\":\"device\"}, must be an array"},
      {R"({"routes": [{"src": "cpu0", "dst": "gpu1", "via": []}]})",
       "t.json: routes[0].src: got 'cpu0', not a device (devices: gpu0, gpu1)"},
      {R"({"routes": [{"src": "gpu0", "dst": "gpu1", "via": ["gpu1"]}]})",
       "t.json: routes[0].via[0]: got 'gpu1', a device (devices do not forward traffic)"},
      {R"({"routes": [{"src": "gpu0", "dst": "gpu1", "via": []}]})",
       "t.json: routes[0].via: no link gpu0->gpu1"},
      {R"({"routes": [{"src": "gpu0", "dst": "gpu1", "via": ["cpu0"]},
                      {"src": "gpu0", "dst": "gpu1", "via": ["cpu0"]}]})",
       "t.json: routes[1]: a second route from gpu0 to gpu1 (first: routes[0])"},
      {R"({"routes": [{"src": "gpu0", "dst": "gpu1", "via": ["cpu0", "cpu0"]}]})",
       "t.json: routes[0].via: visits a vertex twice (a route is a simple path)"},
      {R"({"kind": "cluster"})", "t.json: kind: got 'cluster', must be 'topology'"},
      {R"({"device": "b200"})", "t.json: device: got 'b200'"},
      {R"({"name": ""})", "t.json: name: must be a non-empty string"},
  };
  for (const Case& c : cases) {
    Json j = base;
    j.merge_patch(Json::parse(c.patch));
    auto t = TopologyFromJson(j, "t.json");
    ASSERT_FALSE(t.ok()) << c.patch;
    EXPECT_EQ(t.status().message().substr(0, c.want.size()), c.want) << c.patch << "\n"
                                                                     << t.status().message();
  }
}

TEST(TopologyTest, CountsAreBounded) {
  Json j = Small();
  Json vs = Json::array();
  for (int i = 0; i <= kMaxTopologyDevices; ++i) {
    vs.push_back({{"name", Named("g", i)}, {"kind", "device"}});
  }
  j["vertices"] = vs;
  EXPECT_EQ(TopologyFromJson(j, "t").status().message(),
            "t: vertices[64]: device 'g64' is one too many, a topology has at most 64 devices");
  for (int i = 0; i < kMaxTopologyVertices; ++i) {
    vs.push_back({{"name", Named("h", i)}, {"kind", "host"}});
  }
  j["vertices"] = vs;
  EXPECT_EQ(TopologyFromJson(j, "t").status().message(),
            "t: vertices: got 1089 entries, must be at most 1024");
}

TEST(TopologyTest, LoadByNameOrFile) {
  auto missing = LoadTopology("b200x8");
  EXPECT_EQ(missing.status().code(), core::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "topology: got 'b200x8', must be one of a6000x8, h100x8, rtx4090x4 or a JSON file");
  const std::string dir = testing::ScratchDir();
  const std::string path = dir + "/mine.json";
  Json j = Small();
  j["links"] = {testing::LinkJson("a", "s1", 10e9), testing::LinkJson("s1", "b", 10e9)};
  std::ofstream(path) << j.dump();
  auto t = LoadTopology(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->source(), path);
  EXPECT_EQ(t->provenance(), "user file");
  std::ofstream(path) << "{\"name\": ";
  auto bad = LoadTopology(path);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(path), std::string::npos) << bad.status().message();
}

// The example of a faster socket link (docs/compass.md: the double ring's 8-rank cap is the
// preset's UPI) is the a6000x8 preset with 67.2 GB/s instead of 41.6 GB/s on both UPI
// directions, and nothing else changed.
TEST(TopologyTest, TheThreeLinkUpiExampleChangesOnlyThePresetsSocketLink) {
  auto ex = LoadTopology(std::string(TESSERA_EXAMPLES_DIR) + "/compass/a6000x8-3upi.json");
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  const Topology preset = Preset("a6000x8");
  EXPECT_EQ(ex->name(), "a6000x8-3upi");
  EXPECT_EQ(ex->device().name, preset.device().name);
  ASSERT_EQ(ex->resources().size(), preset.resources().size());
  int upi = 0;
  for (size_t i = 0; i < preset.resources().size(); ++i) {
    const Resource& a = preset.resources()[i];
    const Resource& b = ex->resources()[i];
    SCOPED_TRACE(a.name);
    EXPECT_EQ(b.name, a.name);
    if (a.name.rfind("upi:", 0) == 0) {
      ++upi;
      EXPECT_EQ(a.bw_bytes_per_s, 41.6e9);
      EXPECT_EQ(b.bw_bytes_per_s, 67.2e9);
    } else {
      EXPECT_EQ(b.bw_bytes_per_s, a.bw_bytes_per_s);
    }
  }
  EXPECT_EQ(upi, 2);
}

TEST(TopologyTest, ToClusterUsesTheBestRing) {
  auto a = ToCluster(Preset("a6000x8"));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->nodes, 1);
  EXPECT_EQ(a->ranks_per_node, 8);
  EXPECT_DOUBLE_EQ(a->intra.bw_bytes_per_s, 24e9);
  EXPECT_DOUBLE_EQ(a->intra.latency_s, 16e-6);  // the cross-socket edges
  EXPECT_EQ(a->inter.bw_bytes_per_s, a->intra.bw_bytes_per_s);
  EXPECT_EQ(a->device.name, "RTX-A6000-48GB");
  EXPECT_EQ(a->provenance, "modeled from datasheets");
  auto h = ToCluster(Preset("h100x8"));
  ASSERT_TRUE(h.ok());
  EXPECT_DOUBLE_EQ(h->intra.bw_bytes_per_s, 450e9);
  EXPECT_DOUBLE_EQ(h->intra.latency_s, 8e-6);
  // Four bounced flows share the host's 38.4 GB/s.
  auto r = ToCluster(Preset("rtx4090x4"));
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->intra.bw_bytes_per_s, 38.4e9 / 4);
  Json one = Small();
  one["vertices"][1]["kind"] = "host";
  auto single = TopologyFromJson(one, "one");
  ASSERT_TRUE(single.ok()) << single.status().ToString();
  EXPECT_EQ(ToCluster(*single).status().message(),
            "topology small: has one device, no ring to model as a cluster link");
}

}  // namespace
}  // namespace tessera::hw
