#include "models/model_presets.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "models/dit_spec.h"

namespace tessera::models {
namespace {

TEST(ModelPresets, EveryFamilyListsItsFilesAndEachLoads) {
  EXPECT_EQ(ModelPresetNames("dit"), std::vector<std::string>({"wan2.1-1.3b"}));
  EXPECT_EQ(ModelPresetNames("llm"),
            std::vector<std::string>({"llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b"}));
  EXPECT_EQ(ModelPresetNames("diffusion-pipeline"),
            std::vector<std::string>({"cogvideox-5b", "flux2-dev", "ltx-2"}));
  for (const char* family : {"dit", "llm", "diffusion-pipeline"}) {
    for (const std::string& name : ModelPresetNames(family)) {
      auto p = LoadModelPreset(name, family);
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      EXPECT_EQ(p->name, name);
      EXPECT_TRUE(PresetSection(*p, "transformer").ok()) << name;
    }
  }
}

TEST(ModelPresets, RefusesAnotherFamilyAMissingNameAndAMissingSection) {
  auto wrong = LoadModelPreset("llama2-7b", "dit");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("family: got 'llm', must be 'dit'"), std::string::npos)
      << wrong.status().ToString();
  EXPECT_EQ(LoadModelPreset("no-such-model", "dit").status().code(), core::StatusCode::kNotFound);
  EXPECT_EQ(LoadModelPreset("wan2.1-1.3b", "vision").status().code(),
            core::StatusCode::kInvalidArgument);
  auto p = LoadModelPreset("wan2.1-1.3b", "dit");
  ASSERT_TRUE(p.ok());
  auto vae = PresetSection(*p, "vae");
  ASSERT_FALSE(vae.ok());
  EXPECT_NE(vae.status().message().find("models/wan2.1-1.3b.json"), std::string::npos)
      << vae.status().ToString();
}

// A file in $TESSERA_DATA_DIR is read before the embedded copy; a malformed one is named.
TEST(ModelPresets, AFileOfTheDataDirIsReadAndItsErrorsNameIt) {
  const std::string root = ::testing::TempDir() + "/model_presets_root";
  std::filesystem::create_directories(root + "/models");
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(root + "/models/" + name + ".json") << text;
  };
  write("tiny-dit",
        R"({"kind": "model", "version": 1, "provenance": "test", "name": "tiny-dit",
            "family": "dit", "transformer": {"hidden": 64, "heads": 4, "layers": 2, "ffn": 128,
            "text_tokens": 0, "bytes_per_elem": 2}})");
  write("misnamed", R"({"kind": "model", "version": 1, "provenance": "test", "name": "other",
                        "family": "dit", "transformer": {}})");
  write("typo", R"({"kind": "model", "version": 1, "provenance": "test", "name": "typo",
                    "family": "dit", "transfomer": {}})");
  const char* old = getenv("TESSERA_DATA_DIR");
  const std::string saved = old != nullptr ? old : "";
  ASSERT_EQ(setenv("TESSERA_DATA_DIR", root.c_str(), 1), 0);
  auto tiny = DitModelPreset("tiny-dit");
  auto misnamed = LoadModelPreset("misnamed", "dit");
  auto typo = LoadModelPreset("typo", "dit");
  const std::vector<std::string> names = ModelPresetNames("dit");
  if (old != nullptr) {
    setenv("TESSERA_DATA_DIR", saved.c_str(), 1);
  } else {
    unsetenv("TESSERA_DATA_DIR");
  }
  ASSERT_TRUE(tiny.ok()) << tiny.status().ToString();
  EXPECT_EQ(tiny->hidden, 64);
  EXPECT_EQ(tiny->name, "tiny-dit");
  ASSERT_FALSE(misnamed.ok());
  EXPECT_NE(misnamed.status().message().find("misnamed.json: name: got 'other'"), std::string::npos)
      << misnamed.status().ToString();
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("transfomer"), std::string::npos)
      << typo.status().ToString();
  EXPECT_EQ(names, std::vector<std::string>({"tiny-dit", "wan2.1-1.3b"}));
}

}  // namespace
}  // namespace tessera::models
