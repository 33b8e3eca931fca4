// Test helpers for hw_test: a scratch data root, a scoped $TESSERA_DATA_DIR, topology presets. Not
// thread-safe (the environment is process-wide); tests using them run sequentially.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "core/json_util.h"
#include "hw/data_files.h"
#include "hw/topology.h"

namespace tessera::hw::testing {

// "d3": a prefix and a number (built with append: GCC 12 warns, falsely, on "d" + to_string).
inline std::string Named(const char* prefix, int i) {
  std::string s = prefix;
  s += std::to_string(i);
  return s;
}

// A topology link entry (JSON) from s to d.
inline core::Json LinkJson(const std::string& s, const std::string& d, double bw, double lat = 1e-6,
                           bool duplex = true, const std::string& kind = "pcie") {
  return {{"src", s},         {"dst", d},        {"kind", kind}, {"bw_bytes_per_s", bw},
          {"latency_s", lat}, {"duplex", duplex}};
}

// A topology preset, failing the test (and returning an empty topology) when it does not load.
inline Topology PresetTopology(const std::string& name) {
  auto t = TopologyPreset(name);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : Topology();
}
inline Topology Preset(const std::string& name) { return PresetTopology(name); }

// Sets (or, with nullopt, unsets) $TESSERA_DATA_DIR for its lifetime; restores it after.
class ScopedDataDir {
 public:
  explicit ScopedDataDir(const std::optional<std::string>& dir) {
    if (const char* old = std::getenv(kDataDirEnv)) old_ = old;
    if (dir) {
      setenv(kDataDirEnv, dir->c_str(), 1);
    } else {
      unsetenv(kDataDirEnv);
    }
  }
  ~ScopedDataDir() {
    if (old_) {
      setenv(kDataDirEnv, old_->c_str(), 1);
    } else {
      unsetenv(kDataDirEnv);
    }
  }
  ScopedDataDir(const ScopedDataDir&) = delete;
  ScopedDataDir& operator=(const ScopedDataDir&) = delete;

 private:
  std::optional<std::string> old_;
};

// A fresh, empty directory under the test temp dir, named after the running test.
inline std::string ScratchDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path p = std::filesystem::path(::testing::TempDir()) /
                            (std::string("hw_test_") + info->test_suite_name() + "_" +
                             info->name() + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

// Writes `text` to root/rel_path, creating folders.
inline void WriteFile(const std::string& root, const std::string& rel_path,
                      const std::string& text) {
  std::filesystem::path p = std::filesystem::path(root) / rel_path;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

}  // namespace tessera::hw::testing
