#include "hw/cluster.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>

#include "core/rng.h"
#include "hw/test_util.h"

namespace tessera::hw {
namespace {

using testing::ScopedDataDir;
using testing::ScratchDir;
using testing::WriteFile;

// The presets as they were hard-coded in cluster.cc before they became data files (commit
// 086e380): the data files must reproduce every number exactly. Only the bf16 peak existed then.
struct OldDevice {
  const char* name;
  double peak_flops, mem_bw_bytes_per_s, memory_bytes, memory_usable_fraction, compute_efficiency;
};
struct OldLink {
  const char* name;
  double bw_bytes_per_s, latency_s;
};
struct OldCluster {
  OldDevice device;
  int nodes, ranks_per_node;
  OldLink intra, inter;
};

std::map<std::string, OldCluster> OldPresets() {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  constexpr double kGB = 1e9;
  const OldDevice a800{"A800-SXM4-80GB", 312e12, 2.039e12, 80 * kGiB, 0.90, 0.50};
  const OldDevice a6000{"RTX-A6000-48GB", 154.8e12, 768e9, 48 * kGiB, 0.90, 0.50};
  const OldDevice h100{"H100-SXM5-80GB", 989e12, 3.35e12, 80 * kGiB, 0.90, 0.50};
  const OldLink nvlink_a800{"nvlink3-a800", 200 * kGB, 10e-6};
  const OldLink nvlink_h100{"nvlink4", 450 * kGB, 8e-6};
  const OldLink pcie4{"pcie4-x16", 24 * kGB, 15e-6};
  const OldLink ib_hdr{"ib-hdr-200g", 25 * kGB, 20e-6};
  const OldLink ib_hdr_shared{"ib-hdr-4x200g-per-node", 12.5 * kGB, 20e-6};
  const OldLink ib_ndr{"ib-ndr-400g", 50 * kGB, 15e-6};
  return {{"a800x8", {a800, 1, 8, nvlink_a800, ib_hdr}},
          {"a800x16", {a800, 2, 8, nvlink_a800, ib_hdr}},
          {"a6000x32", {a6000, 4, 8, pcie4, ib_hdr_shared}},
          {"h100x64", {h100, 8, 8, nvlink_h100, ib_ndr}}};
}

void ExpectSameLink(const Link& got, const OldLink& want, const std::string& what) {
  EXPECT_EQ(got.name, want.name) << what;
  EXPECT_EQ(got.bw_bytes_per_s, want.bw_bytes_per_s) << what;
  EXPECT_EQ(got.latency_s, want.latency_s) << what;
}

TEST(ClusterTest, PresetsMatchTheFormerlyHardCodedNumbersExactly) {
  ScopedDataDir no_env(std::nullopt);
  const auto old = OldPresets();
  ASSERT_EQ(ClusterPresetNames(),
            (std::vector<std::string>{"a800x8", "a800x16", "a6000x32", "h100x64"}));
  for (const auto& [name, want] : old) {
    SCOPED_TRACE(name);
    auto c = ClusterPreset(name);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->name, name);
    EXPECT_EQ(c->provenance, "modeled from datasheets");
    EXPECT_EQ(c->device.name, want.device.name);
    EXPECT_EQ(c->device.PeakFlops(Dtype::kBF16), want.device.peak_flops);
    EXPECT_EQ(c->device.mem_bw_bytes_per_s, want.device.mem_bw_bytes_per_s);
    EXPECT_EQ(c->device.memory_bytes, want.device.memory_bytes);
    EXPECT_EQ(c->device.memory_usable_fraction, want.device.memory_usable_fraction);
    EXPECT_EQ(c->device.compute_efficiency, want.device.compute_efficiency);
    EXPECT_EQ(c->nodes, want.nodes);
    EXPECT_EQ(c->ranks_per_node, want.ranks_per_node);
    ExpectSameLink(c->intra, want.intra, "intra");
    ExpectSameLink(c->inter, want.inter, "inter");
  }
}

TEST(ClusterTest, PresetsCarryPerDtypeDatasheetPeaks) {
  ScopedDataDir no_env(std::nullopt);
  const DtypePeaks a800 = ClusterPreset("a800x16")->device.peak_flops;
  EXPECT_EQ(a800, (DtypePeaks{.fp32 = 19.5e12, .tf32 = 156e12, .bf16 = 312e12, .fp8 = 0}));
  const DtypePeaks a6000 = ClusterPreset("a6000x32")->device.peak_flops;
  EXPECT_EQ(a6000, (DtypePeaks{.fp32 = 38.7e12, .tf32 = 77.4e12, .bf16 = 154.8e12, .fp8 = 0}));
  const DtypePeaks h100 = ClusterPreset("h100x64")->device.peak_flops;
  EXPECT_EQ(h100,
            (DtypePeaks{.fp32 = 66.9e12, .tf32 = 494.7e12, .bf16 = 989e12, .fp8 = 1978.9e12}));
}

TEST(ClusterTest, PresetsAreValidAndRoundTrip) {
  ScopedDataDir no_env(std::nullopt);
  for (const auto& name : ClusterPresetNames()) {
    auto c = ClusterPreset(name);
    ASSERT_TRUE(c.ok()) << name;
    EXPECT_TRUE(Validate(*c).ok());
    EXPECT_EQ(c->provenance, "modeled from datasheets");
    auto back = ClusterFromJson(ToJson(*c), "rt");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(ToJson(*back), ToJson(*c));
    EXPECT_EQ(back->device.peak_flops, c->device.peak_flops);
    EXPECT_EQ(back->source, c->source);
  }
  EXPECT_EQ(ClusterPreset("a800x16")->num_ranks(), 16);
  EXPECT_EQ(ClusterPreset("a6000x32")->num_ranks(), 32);
  EXPECT_EQ(ClusterPreset("h100x64")->NodeOf(63), 7);
}

TEST(ClusterTest, SourceSaysWhichCopyWasRead) {
  {
    ScopedDataDir no_env(std::nullopt);
    EXPECT_EQ(ClusterPreset("a800x16")->source,
              "embedded: hw/clusters/a800x16.json (device: embedded: "
              "hw/devices/a800-sxm4-80gb.json)");
  }
  // The source tree's data folder as $TESSERA_DATA_DIR: same numbers as the embedded copy.
  ScopedDataDir env(TESSERA_SOURCE_DATA_DIR);
  for (const auto& name : ClusterPresetNames()) {
    auto from_dir = ClusterPreset(name);
    ASSERT_TRUE(from_dir.ok()) << from_dir.status().ToString();
    EXPECT_EQ(from_dir->source.rfind("$TESSERA_DATA_DIR: ", 0), 0u) << from_dir->source;
    EXPECT_NE(from_dir->source.find("(device: $TESSERA_DATA_DIR: "), std::string::npos);
    ScopedDataDir no_env(std::nullopt);
    core::Json a = ToJson(*from_dir), b = ToJson(*ClusterPreset(name));
    a.erase("source");
    b.erase("source");
    EXPECT_EQ(a, b) << name << ": data/ and the embedded copy differ; rebuild";
  }
}

TEST(ClusterTest, DataDirOverridesAndAddsPresets) {
  const std::string root = ScratchDir();
  ScopedDataDir env(root);
  core::Json j = ToJson(*ClusterPreset("a800x16"));
  j.erase("source");
  j["provenance"] = "modeled from datasheets";
  j["nodes"] = 3;
  WriteFile(root, "hw/clusters/a800x16.json", j.dump(2));
  j["name"] = "a800x24";
  j["device"] = "h200-sxm-141gb";  // a device preset by name
  WriteFile(root, "hw/clusters/a800x24.json", j.dump(2));
  auto c = ClusterPreset("a800x16");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->nodes, 3);
  EXPECT_EQ(c->source, "$TESSERA_DATA_DIR: " + root + "/hw/clusters/a800x16.json");
  auto d = ClusterPreset("a800x24");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->device.name, "H200-SXM-141GB");
  EXPECT_NE(d->source.find("(device: embedded: hw/devices/h200-sxm-141gb.json)"),
            std::string::npos);
  EXPECT_EQ(ClusterPresetNames(),
            (std::vector<std::string>{"a800x8", "a800x16", "a800x24", "a6000x32", "h100x64"}));
  EXPECT_EQ(ClusterPreset("a800x8")->source.rfind("embedded: ", 0), 0u);
}

TEST(ClusterTest, UnknownPresetListsChoices) {
  auto c = LoadCluster("b200x8");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), core::StatusCode::kNotFound);
  EXPECT_EQ(c.status().message(),
            "cluster: got 'b200x8', must be one of a800x8, a800x16, a6000x32, h100x64 or a JSON "
            "file");
  EXPECT_FALSE(ClusterPreset("../clusters/a800x8").ok());
}

TEST(ClusterTest, BadFieldsNameFieldAndValue) {
  core::Json j = ToJson(*ClusterPreset("a800x8"));
  j["nodes"] = 0;
  EXPECT_EQ(ClusterFromJson(j, "c.json").status().message(), "c.json: nodes: got 0, must be >= 1");
  j = ToJson(*ClusterPreset("a800x8"));
  j["device"]["memory_bytes"] = -5;
  EXPECT_EQ(ClusterFromJson(j, "c.json").status().message(),
            "c.json: device.memory_bytes: got -5, must be > 0");
  j = ToJson(*ClusterPreset("a800x8"));
  j["device"]["compute_efficiency"] = 1.5;
  EXPECT_FALSE(ClusterFromJson(j, "c.json").ok());
  j = ToJson(*ClusterPreset("a800x8"));
  j.erase("inter");
  EXPECT_EQ(ClusterFromJson(j, "c.json").status().message(),
            "c.json: inter: missing required field");
  j = ToJson(*ClusterPreset("a800x8"));
  j["device"]["peak_flops"]["fp8"] = -1;
  EXPECT_EQ(ClusterFromJson(j, "c.json").status().message(),
            "c.json: device.peak_flops.fp8: got -1, must be >= 0");
  j = ToJson(*ClusterPreset("a800x8"));
  j["kind"] = "device";
  EXPECT_EQ(ClusterFromJson(j, "c.json").status().message(),
            "c.json: kind: got 'device', must be 'cluster' (this is read as a cluster file)");
  j = ToJson(*ClusterPreset("a800x8"));
  j["version"] = 2;
  EXPECT_EQ(ClusterFromJson(j, "c.json").status().message(),
            "c.json: version: got 2, this build reads cluster files of version 1 (upgrade "
            "tessera or rewrite the file)");
  j = ToJson(*ClusterPreset("a800x8"));
  j["device"] = "b200";
  auto missing_device = ClusterFromJson(j, "c.json");
  EXPECT_EQ(missing_device.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      missing_device.status().message().rfind("c.json: device: got 'b200', must be one of ", 0), 0u)
      << missing_device.status().message();
  EXPECT_FALSE(ClusterFromJson(core::Json::array(), "c.json").ok());
}

// Data files are held to the versioned format: kind, version and provenance are required, and
// every error names the file and the field.
TEST(ClusterTest, BadDataFilesNameFileAndField) {
  const std::string root = ScratchDir();
  ScopedDataDir env(root);
  core::Json good = ToJson(*ClusterPreset("a800x8"));
  good.erase("source");
  auto write = [&](const std::string& name, const core::Json& j) {
    WriteFile(root, "hw/clusters/" + name + ".json", j.dump(2));
    return root + "/hw/clusters/" + name + ".json";
  };
  auto message = [](const std::string& name) {
    auto c = ClusterPreset(name);
    EXPECT_FALSE(c.ok()) << name;
    EXPECT_EQ(c.status().code(), core::StatusCode::kInvalidArgument) << name;
    return c.status().message();
  };
  core::Json j = good;
  j["name"] = "wrongkind";
  j["kind"] = "device";
  std::string path = write("wrongkind", j);
  EXPECT_EQ(message("wrongkind"), "$TESSERA_DATA_DIR: " + path +
                                      ": kind: got 'device', must be 'cluster' (this is read as "
                                      "a cluster file)");
  j = good;
  j["name"] = "v9";
  j["version"] = 9;
  path = write("v9", j);
  EXPECT_EQ(message("v9"), "$TESSERA_DATA_DIR: " + path +
                               ": version: got 9, this build reads cluster files of version 1 "
                               "(upgrade tessera or rewrite the file)");
  j = good;
  j["name"] = "vstr";
  j["version"] = "1";
  path = write("vstr", j);
  EXPECT_EQ(message("vstr"), "$TESSERA_DATA_DIR: " + path +
                                 ": version: got \"1\", must be an integer schema version, e.g. 1");
  j = good;
  j["name"] = "noversion";
  j.erase("version");
  path = write("noversion", j);
  EXPECT_EQ(message("noversion"),
            "$TESSERA_DATA_DIR: " + path + ": version: missing required field");
  j = good;
  j["name"] = "nokind";
  j.erase("kind");
  path = write("nokind", j);
  EXPECT_EQ(message("nokind"), "$TESSERA_DATA_DIR: " + path + ": kind: missing required field");
  j = good;
  j["name"] = "nonodes";
  j.erase("nodes");
  path = write("nonodes", j);
  EXPECT_EQ(message("nonodes"), "$TESSERA_DATA_DIR: " + path + ": nodes: missing required field");
  j = good;
  j["name"] = "negpeak";
  j["device"]["peak_flops"]["tf32"] = -156e12;
  path = write("negpeak", j);
  EXPECT_EQ(message("negpeak"),
            "$TESSERA_DATA_DIR: " + path + ": device.peak_flops.tf32: got -1.56e+14, must be >= 0");
  j = good;
  j["name"] = "othername";
  path = write("misnamed", j);
  EXPECT_EQ(message("misnamed"), "$TESSERA_DATA_DIR: " + path +
                                     ": name: got 'othername', must be 'misnamed' (the file's "
                                     "name without .json)");
  WriteFile(root, "hw/clusters/garbage.json", "{\"kind\": ");
  EXPECT_EQ(message("garbage").rfind(
                "$TESSERA_DATA_DIR: " + root + "/hw/clusters/garbage.json: malformed JSON", 0),
            0u);
  // A found file is used even when malformed: no silent fallback to the embedded copy.
  WriteFile(root, "hw/clusters/a800x16.json", "[]");
  EXPECT_EQ(message("a800x16"), "$TESSERA_DATA_DIR: " + root +
                                    "/hw/clusters/a800x16.json: document: got array, must be an "
                                    "object");
}

// Cluster files written before versioning and per-dtype peaks (no kind/version, one bf16
// peak_flops number) still load; so does the example file.
TEST(ClusterTest, OldFilesStillLoad) {
  core::Json old = {
      {"name", "old"},
      {"provenance", "modeled from datasheets"},
      {"device",
       {{"name", "H100-SXM5-80GB"},
        {"peak_flops", 989e12},
        {"mem_bw_bytes_per_s", 3.35e12},
        {"memory_bytes", 85899345920.0},
        {"memory_usable_fraction", 0.9},
        {"compute_efficiency", 0.5}}},
      {"nodes", 2},
      {"ranks_per_node", 8},
      {"intra", {{"name", "nvlink4"}, {"bw_bytes_per_s", 450e9}, {"latency_s", 8e-6}}},
      {"inter", {{"name", "ib"}, {"bw_bytes_per_s", 50e9}, {"latency_s", 15e-6}}}};
  auto c = ClusterFromJson(old, "old.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->device.peak_flops, (DtypePeaks{.bf16 = 989e12}));
  EXPECT_EQ(c->source, "old.json");
  old.erase("provenance");
  EXPECT_EQ(ClusterFromJson(old, "old.json")->provenance, "user file");
  old["device"]["peak_flops"] = 0;
  EXPECT_EQ(ClusterFromJson(old, "old.json").status().message(),
            "old.json: device.peak_flops: got 0, must be > 0");

  const std::string example = std::string(TESSERA_EXAMPLES_DIR) + "/cluster-h100x256.json";
  auto ex = LoadCluster(example);
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  EXPECT_EQ(ex->num_ranks(), 256);
  EXPECT_EQ(ex->device.PeakFlops(Dtype::kBF16), 989e12);
  EXPECT_EQ(ex->device.PeakFlops(Dtype::kFP8), 0);
  EXPECT_EQ(ex->source, example);
}

// Everything tessera saves reloads: a cluster written with WriteJsonFile and read back with
// LoadCluster is the same cluster (presets with their source, a user cluster without one).
TEST(ClusterTest, SavedClustersReload) {
  ScopedDataDir no_env(std::nullopt);
  const std::string dir = ScratchDir();
  for (const auto& name : ClusterPresetNames()) {
    SCOPED_TRACE(name);
    const Cluster c = *ClusterPreset(name);
    const std::string path = dir + "/" + name + "-saved.json";
    ASSERT_TRUE(core::WriteJsonFile(path, ToJson(c)).ok());
    auto back = LoadCluster(path);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(ToJson(*back), ToJson(c));
    EXPECT_EQ(back->source, c.source);
    EXPECT_EQ(back->device.peak_flops, c.device.peak_flops);
  }
  Cluster mine = *ClusterPreset("h100x64");
  mine.name = "mine";
  mine.provenance = "user file";
  mine.source.clear();
  mine.nodes = 3;
  mine.device.peak_flops.fp8 = 0;
  const std::string path = dir + "/mine.json";
  ASSERT_TRUE(core::WriteJsonFile(path, ToJson(mine)).ok());
  auto back = LoadCluster(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->source, path);
  back->source.clear();
  EXPECT_EQ(ToJson(*back), ToJson(mine));
}

// Sizes and rates outside the plausible ranges are refused, each factor before any product:
// nodes 4.6e18 once became 2 ranks; peak_flops 1e-300 once printed an `inf` makespan.
TEST(ClusterTest, ImplausibleNumbersAreRefusedBeforeUse) {
  const core::Json good = ToJson(*ClusterPreset("a800x8"));
  auto bad = [&](const std::string& pointer, const core::Json& value) {
    core::Json j = good;
    j[core::Json::json_pointer(pointer)] = value;
    auto c = ClusterFromJson(j, "c.json");
    EXPECT_EQ(c.status().code(), core::StatusCode::kInvalidArgument) << pointer;
    return c.status().message();
  };
  EXPECT_EQ(bad("/nodes", int64_t{4600000000000000000}),
            "c.json: nodes: got 4600000000000000000, must be <= 65536 (the largest cluster "
            "tessera models)");
  EXPECT_EQ(bad("/ranks_per_node", UINT64_MAX),
            "c.json: ranks_per_node: got 18446744073709551615, must be <= 9223372036854775807");
  core::Json wide = good;
  wide["nodes"] = 65536;
  wide["ranks_per_node"] = 2;
  EXPECT_EQ(ClusterFromJson(wide, "c.json").status().message(),
            "c.json: nodes * ranks_per_node: got 65536 * 2 = 131072 ranks, must be <= 65536 (the "
            "largest cluster tessera models)");
  EXPECT_EQ(bad("/device/peak_flops/bf16", 1e-300),
            "c.json: device.peak_flops.bf16: got 1e-300, must be in [1e+06, 1e+19] FLOP/s (a "
            "plausible device)");
  EXPECT_EQ(bad("/device/peak_flops/fp8", 1e25),
            "c.json: device.peak_flops.fp8: got 1e+25, must be 0 (unsupported) or in [1e+06, "
            "1e+19] FLOP/s (a plausible device)");
  EXPECT_EQ(bad("/device/mem_bw_bytes_per_s", 1),
            "c.json: device.mem_bw_bytes_per_s: got 1, must be in [1e+06, 1e+16] bytes/s (a "
            "plausible device)");
  EXPECT_EQ(bad("/device/memory_bytes", 1e300),
            "c.json: device.memory_bytes: got 1e+300, must be in [1e+06, 1e+15] bytes (a "
            "plausible device)");
  EXPECT_EQ(bad("/device/compute_efficiency", 1e-300),
            "c.json: device.compute_efficiency: got 1e-300, must be >= 0.001 (a plausible device)");
  EXPECT_EQ(bad("/intra/bw_bytes_per_s", 1e-300),
            "c.json: intra.bw_bytes_per_s: got 1e-300, must be in [1000, 1e+16] bytes/s (a "
            "plausible link)");
  EXPECT_EQ(bad("/inter/latency_s", 1e6),
            "c.json: inter.latency_s: got 1e+06, must be in [0, 10] s (a plausible link)");
  // Validate holds clusters built in code to the same bounds.
  Cluster c = *ClusterPreset("a800x8");
  c.nodes = 70000;
  c.ranks_per_node = 70000;
  EXPECT_EQ(Validate(c).message(),
            "nodes * ranks_per_node: got 70000 * 70000 = 4900000000 ranks, must be <= 65536 (the "
            "largest cluster tessera models)");
}

// Seeded: random fields set to extreme or ill-typed values give a named InvalidArgument or a
// cluster inside every bound; nothing throws or wraps.
TEST(ClusterTest, RandomExtremeFieldsNeverSlipThrough) {
  const core::Json good = ToJson(*ClusterPreset("a800x16"));
  const std::vector<std::string> fields = {"/nodes",
                                           "/ranks_per_node",
                                           "/device/peak_flops/bf16",
                                           "/device/peak_flops/fp32",
                                           "/device/mem_bw_bytes_per_s",
                                           "/device/memory_bytes",
                                           "/device/memory_usable_fraction",
                                           "/device/compute_efficiency",
                                           "/intra/bw_bytes_per_s",
                                           "/inter/latency_s",
                                           "/device/peak_flops",
                                           "/name"};
  const std::vector<core::Json> values = {
      0,     -1,  1e-300, 1e300,   int64_t{4600000000000000000}, UINT64_MAX,          0.5, 3,
      65536, 2e6, "x",    nullptr, core::Json::array(),          core::Json::object()};
  core::Rng rng(21);
  int accepted = 0;
  for (int trial = 0; trial < 400; ++trial) {
    core::Json j = good;
    for (int edit = 0; edit < 2; ++edit) {
      const core::Json::json_pointer field(fields[rng.Below(fields.size())]);
      const core::Json& value = values[rng.Below(values.size())];
      // An earlier edit may have replaced the field's parent object: edit it only if present.
      if (j.contains(field.parent_pointer()) && j[field.parent_pointer()].is_object()) {
        j[field] = value;
      }
    }
    auto c = ClusterFromJson(j, "c.json");
    if (!c.ok()) {
      EXPECT_EQ(c.status().code(), core::StatusCode::kInvalidArgument) << j.dump();
      EXPECT_EQ(c.status().message().rfind("c.json: ", 0), 0u) << c.status().message();
      continue;
    }
    ++accepted;
    EXPECT_TRUE(Validate(*c).ok()) << j.dump();
    EXPECT_GE(c->num_ranks(), 1);
    EXPECT_LE(c->num_ranks(), kMaxClusterRanks);
    EXPECT_GE(c->device.PeakFlops(Dtype::kBF16), kMinPeakFlops);
    EXPECT_LE(c->device.PeakFlops(Dtype::kBF16), kMaxPeakFlops);
    EXPECT_GE(c->intra.bw_bytes_per_s, kMinLinkBwBytesPerS);
    EXPECT_LE(c->inter.latency_s, kMaxLinkLatencyS);
  }
  EXPECT_GT(accepted, 0);  // the draws include harmless values too
}

}  // namespace
}  // namespace tessera::hw
