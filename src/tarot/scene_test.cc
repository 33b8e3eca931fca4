#include "tarot/scene.h"

#include <gtest/gtest.h>

#include <set>

#include "core/input_file.h"
#include "tarot/scene_generator.h"
#include "tarot/silhouettes.h"
#include "tarot/test_scenes.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

TEST(RefScenes, SameSeedSameBytes) {
  for (uint64_t seed : {0ULL, 7ULL, 123456789ULL}) {
    auto a = GenerateScene(seed);
    auto b = GenerateScene(seed);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(a->image.pixels, b->image.pixels);
    EXPECT_EQ(SceneToJson(*a).dump(), SceneToJson(*b).dump());
    auto pa = ScenePng(*a), pb = ScenePng(*b);
    ASSERT_TRUE(pa.ok()) << pa.status().ToString();
    EXPECT_EQ(*pa, *pb);
  }
  auto c = GenerateScene(1), d = GenerateScene(2);
  ASSERT_TRUE(c.ok() && d.ok());
  EXPECT_NE(SceneToJson(*c).dump(), SceneToJson(*d).dump());
}

TEST(RefScenes, WithinTheSpecifiedRanges) {
  std::set<std::string> categories;
  for (const Scene& s : TestScenes()) {
    EXPECT_GE(s.width, 256);
    EXPECT_LE(s.width, 512);
    EXPECT_GE(s.height, 256);
    EXPECT_LE(s.height, 512);
    EXPECT_GE(s.objects.size(), 3u);
    EXPECT_LE(s.objects.size(), 10u);
    for (const SceneObject& o : s.objects) {
      categories.insert(o.category);
      EXPECT_GE(ColourIndex(o.colour), 0);
      EXPECT_GE(SizeIndex(o.size), 0);
    }
  }
  EXPECT_GE(categories.size(), 6u);
}

// Masks are exact: recomputed here by plain per-pixel painting in drawing order.
TEST(RefScenes, MasksRespectOcclusionAndPartsPartitionTheObject) {
  for (const Scene& s : TestScenes()) {
    std::vector<int> owner(static_cast<size_t>(s.width) * s.height, -1), part(owner.size(), -1);
    for (const SceneObject& o : s.objects) {
      const int ci = CategoryIndex(o.category);
      for (int y = 0; y < s.height; ++y) {
        for (int x = 0; x < s.width; ++x) {
          double u = (x + 0.5 - o.cx) / o.half_size_px, v = (y + 0.5 - o.cy) / o.half_size_px;
          if (o.mirrored) u = -u;
          const int p = SilhouettePart(ci, u, v);
          if (p < 0) continue;
          owner[static_cast<size_t>(y) * s.width + x] = o.id;
          part[static_cast<size_t>(y) * s.width + x] = p;
        }
      }
    }
    Mask covered(s.width, s.height);
    for (const SceneObject& o : s.objects) {
      ASSERT_EQ(o.mask.width(), s.width);
      EXPECT_EQ(o.mask.IntersectionCount(covered), 0) << "objects overlap after occlusion";
      covered = covered | o.mask;
      EXPECT_GE(o.visible_fraction(), 0.6) << o.category;
      Mask parts_union(s.width, s.height);
      for (size_t p = 0; p < o.parts.size(); ++p) {
        EXPECT_EQ(o.parts[p].mask.IntersectionCount(parts_union), 0);
        parts_union = parts_union | o.parts[p].mask;
        EXPECT_GE(o.parts[p].mask.count(), 12);
      }
      if (!o.parts.empty()) {
        EXPECT_EQ(parts_union, o.mask) << "parts must partition the object";
      }
      for (int y = 0; y < s.height; ++y) {
        for (int x = 0; x < s.width; ++x) {
          const size_t idx = static_cast<size_t>(y) * s.width + x;
          ASSERT_EQ(o.mask.get(x, y), owner[idx] == o.id) << o.id << " at " << x << "," << y;
          for (size_t p = 0; p < o.parts.size(); ++p)
            ASSERT_EQ(o.parts[p].mask.get(x, y), owner[idx] == o.id && part[idx] == int(p));
        }
      }
    }
  }
}

TEST(RefScenes, ObjectPixelsCarryTheirColour) {
  // Texture changes brightness by at most 20%, so each visible pixel stays nearest its palette
  // colour among the colours a scale in [0.8, 1.2] can reach.
  for (const Scene& s : TestScenes()) {
    for (const SceneObject& o : s.objects) {
      const Rgb base = Palette()[ColourIndex(o.colour)].rgb;
      const Mask& m = o.parts.empty() ? o.mask : o.parts[0].mask;
      int64_t n = 0, close = 0;
      for (int y = 0; y < s.height; ++y) {
        for (int x = 0; x < s.width; ++x) {
          if (!m.get(x, y)) continue;
          const Rgb p = s.image.at(x, y);
          ++n;
          close += std::abs(p.r - base.r) <= 0.2 * base.r + 1 &&
                   std::abs(p.g - base.g) <= 0.2 * base.g + 1 &&
                   std::abs(p.b - base.b) <= 0.2 * base.b + 1;
        }
      }
      EXPECT_EQ(close, n) << o.category << " " << o.colour;
    }
  }
}

TEST(RefScenes, JsonRoundTripRerendersTheSameScene) {
  for (const Scene& s : TestScenes()) {
    const core::Json j = SceneToJson(s);
    auto back = SceneFromJson(core::Json::parse(j.dump()), "scene.json");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->image.pixels, s.image.pixels);
    EXPECT_EQ(SceneToJson(*back).dump(), j.dump());
    ASSERT_EQ(back->objects.size(), s.objects.size());
    for (size_t i = 0; i < s.objects.size(); ++i)
      EXPECT_EQ(back->objects[i].mask, s.objects[i].mask);
  }
}

TEST(RefScenes, JsonErrorsNameTheField) {
  core::Json j = SceneToJson(TestScenes()[0]);
  j["objects"][0]["colour"] = "teal";
  auto bad = SceneFromJson(j, "s.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "s.json.objects[0].colour: got 'teal', must be a palette colour (red, orange, ..., "
            "black)");
  j = SceneToJson(TestScenes()[0]);
  j["expressions"][0]["target"]["objects"] = core::Json::array({99});
  bad = SceneFromJson(j, "s.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("s.json.expressions[0]: target:"), std::string::npos)
      << bad.status().message();
  j = SceneToJson(TestScenes()[0]);
  j["kind"] = "tarot-mask";
  EXPECT_FALSE(SceneFromJson(j, "s.json").ok());
}

TEST(RefScenes, PngRoundTrip) {
  const Scene& s = TestScenes()[0];
  auto png = ScenePng(s);
  ASSERT_TRUE(png.ok()) << png.status().ToString();
  auto img = ImageFromPng(*png);
  ASSERT_TRUE(img.ok()) << img.status().ToString();
  EXPECT_EQ(img->width, s.width);
  EXPECT_EQ(img->pixels, s.image.pixels);
  EXPECT_FALSE(ImageFromPng("not a png").ok());
}

TEST(RefScenes, SaveAndLoadFiles) {
  const Scene& s = TestScenes()[1];
  const std::string json = testing::TempDir() + "/tarot_scene.json";
  const std::string png = testing::TempDir() + "/tarot_scene.png";
  ASSERT_TRUE(SaveScene(s, json, png).ok());
  auto back = LoadScene(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->image.pixels, s.image.pixels);
  EXPECT_EQ(back->expressions.size(), s.expressions.size());
  auto bytes = core::ReadInputFile(png);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(ImageFromPng(*bytes)->pixels, s.image.pixels);
  EXPECT_EQ(LoadScene(testing::TempDir() + "/no_such_scene.json").status().code(),
            core::StatusCode::kNotFound);
}

TEST(RefScenes, OptionsValidated) {
  SceneGeneratorOptions o;
  o.min_side = 8;
  auto s = GenerateScene(1, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("refscenes.min_side: got 8"), std::string::npos)
      << s.status().message();
}

}  // namespace
}  // namespace tessera::tarot
