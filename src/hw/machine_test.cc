#include "hw/machine.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

namespace tessera::hw {
namespace {

TEST(MachineTest, DescribesThisMachine) {
  Machine m = DescribeThisMachine();
  EXPECT_FALSE(m.hostname.empty());
  EXPECT_FALSE(m.cpu_model.empty());
  EXPECT_GE(m.cores, 1);
  EXPECT_GT(m.memory_bytes, int64_t{1} << 20);
  EXPECT_FALSE(m.os.empty());
  EXPECT_EQ(m.date.size(), 20u) << m.date;
  EXPECT_EQ(Summary(m),
            m.hostname + " (" + m.cpu_model + ", " + std::to_string(m.cores) + " cores)");
  auto back = MachineFromJson(ToJson(m), "rt");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, m);
}

TEST(MachineTest, IsoUtc) {
  EXPECT_EQ(IsoUtc(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(IsoUtc(1700000000), "2023-11-14T22:13:20Z");
}

TEST(MachineTest, JsonFormAndErrors) {
  Machine m{"box",
            "Some CPU",
            2,
            8LL << 30,
            "Debian GNU/Linux 12 (bookworm), Linux 6.1 x86_64",
            "2025-03-01T12:34:56Z"};
  core::Json j = ToJson(m);
  EXPECT_EQ(j["kind"], "machine");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["memory_bytes"], 8LL << 30);
  EXPECT_EQ(*MachineFromJson(j, "m.json"), m);
  auto bad = [&](const char* key, const core::Json& value) {
    core::Json k = j;
    k[key] = value;
    return MachineFromJson(k, "m.json").status().message();
  };
  EXPECT_EQ(bad("cores", 0), "m.json: cores: got 0, must be >= 1");
  EXPECT_EQ(bad("hostname", ""), "m.json: hostname: must be a non-empty string");
  EXPECT_EQ(bad("date", "yesterday"),
            "m.json: date: got 'yesterday', must be ISO-8601 UTC like 2025-03-01T12:34:56Z");
  EXPECT_EQ(bad("kind", "cluster"),
            "m.json: kind: got 'cluster', must be 'machine' (this is read as a machine file)");
  EXPECT_EQ(bad("version", 2),
            "m.json: version: got 2, this build reads machine files of version 1 (upgrade "
            "tessera or rewrite the file)");
  core::Json k = j;
  k.erase("os");
  EXPECT_EQ(MachineFromJson(k, "m.json").status().message(), "m.json: os: missing required field");
  k = j;
  k.erase("kind");
  k.erase("version");
  EXPECT_TRUE(MachineFromJson(k, "m.json").ok());
}

TEST(MachineTest, SavedMachineReloads) {
  const Machine m = DescribeThisMachine();
  const std::string path =
      ::testing::TempDir() + "/machine_test_" + std::to_string(getpid()) + ".json";
  ASSERT_TRUE(core::WriteJsonFile(path, ToJson(m)).ok());
  auto j = core::ReadJsonFile(path);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  auto back = MachineFromJson(*j, path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, m);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tessera::hw
