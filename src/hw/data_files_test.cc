#include "hw/data_files.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hw/embedded_data.h"
#include "hw/test_util.h"

namespace tessera::hw {
namespace {

using testing::ScopedDataDir;
using testing::ScratchDir;
using testing::WriteFile;

std::string ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The embedded copy is byte-identical to data/ (the build regenerates it when data/ changes).
TEST(DataFilesTest, EmbeddedCopyMatchesSourceTree) {
  const std::filesystem::path data = TESSERA_SOURCE_DATA_DIR;
  std::vector<std::string> on_disk;
  for (const char* dir : {"hw", "models"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(data / dir)) {
      if (e.is_regular_file() && e.path().extension() == ".json") {
        on_disk.push_back(std::filesystem::relative(e.path(), data).string());
      }
    }
  }
  std::sort(on_disk.begin(), on_disk.end());
  std::vector<std::string> embedded;
  for (const EmbeddedFile& f : EmbeddedDataFiles()) {
    embedded.push_back(f.path);
    EXPECT_EQ(f.text, ReadAll(data / f.path)) << f.path;
  }
  EXPECT_EQ(embedded, on_disk);
  EXPECT_TRUE(std::is_sorted(embedded.begin(), embedded.end()));
}

TEST(DataFilesTest, LookupOrderEnvThenInstallDirThenEmbedded) {
  const std::string env_root = ScratchDir() + "/env";
  const std::string install_root = ScratchDir() + "/share/tessera";
  WriteFile(env_root, "hw/clusters/x.json", "env x");
  WriteFile(install_root, "hw/clusters/x.json", "install x");
  WriteFile(install_root, "hw/clusters/y.json", "install y");
  const std::vector<DataRoot> roots = {{env_root, "$TESSERA_DATA_DIR"},
                                       {install_root, "install dir"}};
  auto x = FindDataFile("hw/clusters/x.json", roots);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(x->text, "env x");
  EXPECT_EQ(x->origin, "$TESSERA_DATA_DIR: " + env_root + "/hw/clusters/x.json");
  auto y = FindDataFile("hw/clusters/y.json", roots);
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->text, "install y");
  EXPECT_EQ(y->origin, "install dir: " + install_root + "/hw/clusters/y.json");
  auto a800 = FindDataFile("hw/clusters/a800x8.json", roots);
  ASSERT_TRUE(a800.ok());
  EXPECT_EQ(a800->origin, "embedded: hw/clusters/a800x8.json");
  auto none = FindDataFile("hw/clusters/none.json", roots);
  EXPECT_EQ(none.status().code(), core::StatusCode::kNotFound);
  EXPECT_EQ(none.status().message(),
            "hw/clusters/none.json: no such data file (looked in " + env_root +
                "/hw/clusters/none.json ($TESSERA_DATA_DIR), " + install_root +
                "/hw/clusters/none.json (install dir), and the embedded copy)");
  EXPECT_EQ(ListDataFiles("hw/clusters", roots),
            (std::vector<std::string>{"a800x8", "a800x16", "a6000x32", "h100x64", "x", "y"}));
}

TEST(DataFilesTest, DefaultRootsFollowTheEnvironment) {
  {
    ScopedDataDir no_env(std::nullopt);
    for (const DataRoot& r : DefaultDataRoots()) EXPECT_NE(r.label, "$TESSERA_DATA_DIR");
  }
  {
    ScopedDataDir missing("/nonexistent/tessera-data");
    for (const DataRoot& r : DefaultDataRoots()) EXPECT_NE(r.label, "$TESSERA_DATA_DIR");
  }
  const std::string root = ScratchDir();
  ScopedDataDir env(root);
  auto roots = DefaultDataRoots();
  ASSERT_FALSE(roots.empty());
  EXPECT_EQ(roots[0].dir, root);
  EXPECT_EQ(roots[0].label, "$TESSERA_DATA_DIR");
}

TEST(DataFilesTest, NaturalOrder) {
  std::vector<std::string> v = {"h100x64", "a6000x32", "a800x16", "a800x8", "a800x08", "b", "a"};
  std::sort(v.begin(), v.end(), NaturalLess);
  EXPECT_EQ(v, (std::vector<std::string>{"a", "a800x08", "a800x8", "a800x16", "a6000x32", "b",
                                         "h100x64"}));
  EXPECT_FALSE(NaturalLess("x1", "x1"));
  EXPECT_TRUE(NaturalLess("x", "x1"));
}

TEST(DataFilesTest, PresetNames) {
  EXPECT_TRUE(IsPresetName("a800x16"));
  EXPECT_TRUE(IsPresetName("h200-sxm-141gb"));
  EXPECT_FALSE(IsPresetName(""));
  EXPECT_FALSE(IsPresetName(".hidden"));
  EXPECT_FALSE(IsPresetName("../x"));
  EXPECT_FALSE(IsPresetName("a/b"));
  EXPECT_EQ(LoadDataFile("hw/clusters", "../x", "cluster", 1).status().code(),
            core::StatusCode::kNotFound);
}

TEST(DataFilesTest, HeaderChecks) {
  core::Json j = {{"kind", "cluster"}, {"version", 1}, {"provenance", "modeled from datasheets"}};
  EXPECT_TRUE(CheckDataFileHeader(j, "cluster", 1, true).ok());
  EXPECT_TRUE(CheckDataFileHeader(core::Json::object(), "cluster", 1, false).ok());
  EXPECT_EQ(CheckDataFileHeader(core::Json::object(), "cluster", 1, true).message(),
            "kind: missing required field");
  j["version"] = 0;
  EXPECT_EQ(CheckDataFileHeader(j, "cluster", 1, false).message(),
            "version: got 0, this build reads cluster files of version 1 (upgrade tessera or "
            "rewrite the file)");
  j["version"] = 5;
  EXPECT_EQ(CheckDataFileHeader(j, "cluster", 3, false).message(),
            "version: got 5, this build reads cluster files of versions 1 to 3 (upgrade tessera "
            "or rewrite the file)");
  j["version"] = UINT64_MAX;  // never wrapped to a negative number
  EXPECT_EQ(CheckDataFileHeader(j, "cluster", 1, false).message(),
            "version: got 18446744073709551615, this build reads cluster files of version 1 "
            "(upgrade tessera or rewrite the file)");
  j["version"] = 1;
  j["provenance"] = "";
  EXPECT_EQ(CheckDataFileHeader(j, "cluster", 1, true).message(),
            "provenance: must be a non-empty string, e.g. \"modeled from datasheets\"");
  EXPECT_EQ(CheckDataFileHeader(core::Json("x"), "cluster", 1, true).message(),
            "document: got string, must be an object");
}

}  // namespace
}  // namespace tessera::hw
