// Test helper: one seeded set of refscenes scenes shared by the tarot tests (generated once per
// test binary).
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "tarot/scene_generator.h"

namespace tessera::tarot {

inline constexpr uint64_t kTestScenesSeed = 77;
inline constexpr int kTestScenesCount = 40;

inline const std::vector<Scene>& TestScenes() {
  static const std::vector<Scene> scenes = [] {
    auto s = GenerateScenes(kTestScenesSeed, kTestScenesCount);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : std::vector<Scene>{};
  }();
  return scenes;
}

}  // namespace tessera::tarot
