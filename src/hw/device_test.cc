#include "hw/device.h"

#include <gtest/gtest.h>

#include "hw/cluster.h"
#include "hw/test_util.h"

namespace tessera::hw {
namespace {

using testing::ScopedDataDir;
using testing::ScratchDir;
using testing::WriteFile;

TEST(DeviceTest, DtypeNamesAndAccessors) {
  DtypePeaks p{.fp32 = 1, .tf32 = 2, .bf16 = 3, .fp8 = 4};
  std::vector<std::string> names;
  for (Dtype d : AllDtypes()) names.push_back(DtypeName(d));
  EXPECT_EQ(names, (std::vector<std::string>{"fp32", "tf32", "bf16", "fp8"}));
  EXPECT_EQ(p.Get(Dtype::kFP32), 1);
  EXPECT_EQ(p.Get(Dtype::kTF32), 2);
  EXPECT_EQ(p.Get(Dtype::kBF16), 3);
  EXPECT_EQ(p.Get(Dtype::kFP8), 4);
  p.Get(Dtype::kFP8) = 0;
  EXPECT_EQ(p.fp8, 0);
}

TEST(DeviceTest, DevicePresetsLoadWithDatasheetPeaks) {
  ScopedDataDir no_env(std::nullopt);
  EXPECT_EQ(DevicePresetNames(),
            (std::vector<std::string>{"a800-sxm4-80gb", "h100-sxm5-80gb", "h200-sxm-141gb",
                                      "rtx-4090-24gb", "rtx-a6000-48gb"}));
  for (const auto& name : DevicePresetNames()) {
    std::string origin;
    auto d = DevicePreset(name, &origin);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(origin, "embedded: hw/devices/" + name + ".json");
    EXPECT_TRUE(Validate(*d).ok());
    auto back = DeviceFromJson(ToJson(*d), "device");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(ToJson(*back), ToJson(*d));
  }
  auto h200 = DevicePreset("h200-sxm-141gb");
  EXPECT_EQ(h200->name, "H200-SXM-141GB");
  EXPECT_EQ(h200->peak_flops, DevicePreset("h100-sxm5-80gb")->peak_flops);  // same tensor cores
  EXPECT_EQ(h200->mem_bw_bytes_per_s, 4.8e12);
  EXPECT_EQ(h200->memory_bytes, 141.0 * 1024 * 1024 * 1024);
  auto rtx4090 = DevicePreset("rtx-4090-24gb");
  EXPECT_EQ(rtx4090->peak_flops,
            (DtypePeaks{.fp32 = 82.6e12, .tf32 = 82.6e12, .bf16 = 165.2e12, .fp8 = 330.3e12}));
  EXPECT_EQ(rtx4090->PeakFlops(Dtype::kBF16), 165.2e12);
}

TEST(DeviceTest, UnknownPresetListsChoices) {
  auto d = DevicePreset("b200");
  EXPECT_EQ(d.status().code(), core::StatusCode::kNotFound);
  EXPECT_EQ(d.status().message(),
            "device: got 'b200', must be one of a800-sxm4-80gb, h100-sxm5-80gb, h200-sxm-141gb, "
            "rtx-4090-24gb, rtx-a6000-48gb or an inline device object");
}

TEST(DeviceTest, PeakFlopsForms) {
  core::Json j = ToJson(*DevicePreset("a800-sxm4-80gb"));
  // Legacy: one number is the dense bf16 peak; the other dtypes are unsupported.
  j["peak_flops"] = 312e12;
  auto legacy = DeviceFromJson(j, "device");
  ASSERT_TRUE(legacy.ok()) << legacy.status().ToString();
  EXPECT_EQ(legacy->peak_flops, (DtypePeaks{.bf16 = 312e12}));
  auto bad = [&](const core::Json& peaks) {
    core::Json k = j;
    k["peak_flops"] = peaks;
    return DeviceFromJson(k, "device").status().message();
  };
  EXPECT_EQ(bad({{"fp32", 1}, {"tf32", 1}, {"bf16", 1}, {"fp8", 1}, {"fp16", 1}}),
            "device.peak_flops.fp16: unknown dtype, must be one of fp32, tf32, bf16, fp8");
  EXPECT_EQ(bad({{"fp32", 1}, {"tf32", 1}, {"bf16", 1}}),
            "device.peak_flops.fp8: missing required field");
  EXPECT_EQ(bad({{"fp32", 1}, {"tf32", 1}, {"bf16", 0}, {"fp8", 1}}),
            "device.peak_flops.bf16: got 0, must be > 0 (the cost models price bf16 training)");
  EXPECT_EQ(bad({{"fp32", -2}, {"tf32", 1}, {"bf16", 1}, {"fp8", 1}}),
            "device.peak_flops.fp32: got -2, must be >= 0");
  EXPECT_EQ(bad("fast"),
            "device.peak_flops: got \"fast\", must be an object {\"fp32\": ..., \"tf32\": ..., "
            "\"bf16\": ..., \"fp8\": ...} of dense FLOP/s (0 = unsupported) or one number (the "
            "dense bf16 peak)");
  EXPECT_EQ(bad(-1), "device.peak_flops: got -1, must be > 0");
}

TEST(DeviceTest, ValidateNamesFields) {
  Device d = *DevicePreset("h100-sxm5-80gb");
  EXPECT_TRUE(Validate(d).ok());
  d.peak_flops.fp8 = -1;
  EXPECT_EQ(Validate(d).message(),
            "device.peak_flops.fp8: got -1, must be >= 0 (dense FLOP/s, 0 = unsupported)");
  d = *DevicePreset("h100-sxm5-80gb");
  d.memory_usable_fraction = 0;
  EXPECT_EQ(Validate(d, "gpu").message(), "gpu.memory_usable_fraction: got 0, must be in (0, 1]");
}

TEST(DeviceTest, BadDeviceFilesNameFileAndField) {
  const std::string root = ScratchDir();
  ScopedDataDir env(root);
  core::Json good = ToJson(*DevicePreset("a800-sxm4-80gb"));
  good["kind"] = "device";
  good["version"] = 1;
  good["provenance"] = "modeled from datasheets";
  good["sources"] = {"a note"};
  WriteFile(root, "hw/devices/good.json", good.dump());
  std::string origin;
  auto ok = DevicePreset("good", &origin);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(origin, "$TESSERA_DATA_DIR: " + root + "/hw/devices/good.json");

  auto message = [&](const std::string& name, const core::Json& j) {
    WriteFile(root, "hw/devices/" + name + ".json", j.dump());
    return DevicePreset(name).status().message();
  };
  const std::string prefix = "$TESSERA_DATA_DIR: " + root + "/hw/devices/";
  core::Json j = good;
  j["peak_flops"]["fp8"] = -5e12;
  EXPECT_EQ(message("neg", j), prefix + "neg.json: peak_flops.fp8: got -5e+12, must be >= 0");
  j = good;
  j["kind"] = "cluster";
  EXPECT_EQ(message("kind", j), prefix +
                                    "kind.json: kind: got 'cluster', must be 'device' (this is "
                                    "read as a device file)");
  j = good;
  j["version"] = 3;
  EXPECT_EQ(message("v3", j), prefix +
                                  "v3.json: version: got 3, this build reads device files of "
                                  "version 1 (upgrade tessera or rewrite the file)");
  j = good;
  j.erase("provenance");
  EXPECT_EQ(message("noprov", j), prefix + "noprov.json: provenance: missing required field");
  j = good;
  j["sources"] = "one string";
  EXPECT_EQ(message("src", j), prefix +
                                   "src.json: sources: got \"one string\", must be an array of "
                                   "strings (notes on where numbers come from)");
  j = good;
  j.erase("mem_bw_bytes_per_s");
  EXPECT_EQ(message("nobw", j), prefix + "nobw.json: mem_bw_bytes_per_s: missing required field");
  j = good;
  j["price"]["usd_per_hour"] = -1;
  EXPECT_NE(message("negprice", j).find("negprice.json: price.usd_per_hour: got -1"),
            std::string::npos)
      << message("negprice", j);
  j = good;
  j["price"] = {{"usd_per_hour", 2}, {"currency", "EUR"}};
  EXPECT_NE(message("priceq", j).find("price: unknown key 'currency'"), std::string::npos)
      << message("priceq", j);

  // A cluster that references a bad device names the device file.
  core::Json cluster = {{"kind", "cluster"},
                        {"version", 1},
                        {"provenance", "test"},
                        {"name", "c"},
                        {"device", "neg"},
                        {"nodes", 1},
                        {"ranks_per_node", 8},
                        {"intra", {{"name", "i"}, {"bw_bytes_per_s", 1e9}, {"latency_s", 0}}},
                        {"inter", {{"name", "e"}, {"bw_bytes_per_s", 1e9}, {"latency_s", 0}}}};
  WriteFile(root, "hw/clusters/c.json", cluster.dump());
  auto c = ClusterPreset("c");
  EXPECT_EQ(c.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(), "$TESSERA_DATA_DIR: " + root + "/hw/clusters/c.json: " + prefix +
                                      "neg.json: peak_flops.fp8: got -5e+12, must be >= 0");
}

// A device written with WriteJsonFile reloads as the same device (the inline form a cluster
// embeds, read as a device file's body).
TEST(DeviceTest, SavedDevicesReload) {
  const std::string dir = ScratchDir();
  for (const auto& name : DevicePresetNames()) {
    SCOPED_TRACE(name);
    const Device d = *DevicePreset(name);
    const std::string path = dir + "/" + name + ".json";
    ASSERT_TRUE(core::WriteJsonFile(path, ToJson(d)).ok());
    auto j = core::ReadJsonFile(path);
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    auto back = DeviceFromJson(*j, "");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(ToJson(*back), ToJson(d));
    EXPECT_EQ(back->peak_flops, d.peak_flops);
  }
}

// Every preset carries an on-demand price with where it was read.
TEST(DeviceTest, PresetsCarryASourcedPrice) {
  for (const auto& name : DevicePresetNames()) {
    const Device d = *DevicePreset(name);
    EXPECT_GT(d.price_usd_per_hour, 0) << name;
    EXPECT_NE(d.price_source.find("read 2026-"), std::string::npos) << name;
  }
  EXPECT_NEAR(DevicePreset("h100-sxm5-80gb")->price_usd_per_hour, 0.00116 * 3600, 1e-9);
}

TEST(DeviceTest, ValidateHoldsPlausibleRanges) {
  const Device good = *DevicePreset("h100-sxm5-80gb");
  Device d = good;
  d.peak_flops.tf32 = 10;  // positive but no device is that slow
  EXPECT_EQ(Validate(d).message(),
            "device.peak_flops.tf32: got 10, must be 0 (unsupported) or in [1e+06, 1e+19] FLOP/s "
            "(a plausible device)");
  d = good;
  d.mem_bw_bytes_per_s = 1e17;
  EXPECT_EQ(Validate(d).message(),
            "device.mem_bw_bytes_per_s: got 1e+17, must be in [1e+06, 1e+16] bytes/s (a plausible "
            "device)");
  d = good;
  d.memory_usable_fraction = 1e-4;
  EXPECT_EQ(Validate(d).message(),
            "device.memory_usable_fraction: got 0.0001, must be >= 0.001 (a plausible device)");
  d = good;
  d.peak_flops.fp8 = 0;  // unsupported stays allowed
  EXPECT_TRUE(Validate(d).ok());
}

}  // namespace
}  // namespace tessera::hw
