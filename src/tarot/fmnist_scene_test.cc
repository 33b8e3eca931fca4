// The fmnist set: scenes of Fashion-MNIST test items (needs the Debian package
// dataset-fashion-mnist, which scripts/install-deps.sh installs for make test). A scene drawn
// twice is bit-equal; every mask is exactly the item's pixels above the threshold minus what
// later objects cover; every tier has expressions and each evaluates to its stored target; the
// JSON round trip keeps the scene, and a scene whose dataset is absent is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <set>
#include <string>

#include "tarot/fashion_mnist.h"
#include "tarot/fmnist_items.h"
#include "tarot/scene.h"
#include "tarot/scene_generator.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

SceneGeneratorOptions Fmnist() {
  SceneGeneratorOptions o;
  o.set = kSetFmnist;
  return o;
}

std::vector<Scene> FmnistScenes(int n, uint64_t seed = 11) {
  auto s = GenerateScenes(seed, n, Fmnist());
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : std::vector<Scene>{};
}

TEST(FmnistScenes, ASceneDrawnTwiceIsBitEqual) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    auto a = GenerateScene(seed, Fmnist());
    auto b = GenerateScene(seed, Fmnist());
    ASSERT_TRUE(a.ok() && b.ok()) << a.status().ToString();
    EXPECT_EQ(a->image.pixels, b->image.pixels);
    EXPECT_EQ(SceneToJson(*a), SceneToJson(*b));
    EXPECT_EQ(a->set, kSetFmnist);
  }
}

TEST(FmnistScenes, ObjectsAreFashionItemsOfTheirClass) {
  auto test = SharedFmnist(FmnistSplit::kTest);
  ASSERT_TRUE(test.ok()) << test.status().ToString();
  for (const Scene& s : FmnistScenes(10)) {
    ASSERT_GE(s.objects.size(), 3u);
    for (const SceneObject& o : s.objects) {
      const int ci = CategoryIndex(o.category);
      ASSERT_GE(ci, 0);
      EXPECT_EQ(Categories()[ci].family, CategoryFamily::kFashion) << o.category;
      ASSERT_GE(o.item, 0);
      EXPECT_EQ(FashionCategory((*test)->labels[o.item]), ci);
      EXPECT_TRUE(o.parts.empty());
      EXPECT_GE(o.visible_fraction(), 0.6);
    }
  }
}

// The expected full mask, computed here from the item bitmap (bilinear at pixel centres,
// intensity above the threshold), independently of the renderer.
Mask ExpectedFull(const SceneObject& o, int w, int h) {
  Mask m(w, h);
  const double r = o.half_size_px, scale = 28.0 / (2 * r);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const double su = (x + 0.5 - (o.cx - r)) * scale - 0.5;
      const double sv = (y + 0.5 - (o.cy - r)) * scale - 0.5;
      const int i = static_cast<int>(std::floor(su)), j = static_cast<int>(std::floor(sv));
      auto px = [&](int a, int b) -> double {
        return a < 0 || b < 0 || a >= 28 || b >= 28 ? 0.0 : o.item_pixels[b * 28 + a];
      };
      const double fu = su - i, fv = sv - j;
      const double v = (px(i, j) * (1 - fu) + px(i + 1, j) * fu) * (1 - fv) +
                       (px(i, j + 1) * (1 - fu) + px(i + 1, j + 1) * fu) * fv;
      if (v > kItemThreshold) m.set(x, y);
    }
  }
  return m;
}

TEST(FmnistScenes, MasksAreExactlyTheItemPixelsLessOcclusion) {
  for (const Scene& s : FmnistScenes(6)) {
    std::vector<Mask> full;
    for (const SceneObject& o : s.objects) full.push_back(ExpectedFull(o, s.width, s.height));
    for (size_t k = 0; k < s.objects.size(); ++k) {
      const SceneObject& o = s.objects[k];
      EXPECT_EQ(o.full_area, full[k].count());
      Mask visible = full[k];
      for (size_t later = k + 1; later < full.size(); ++later) visible = visible.Minus(full[later]);
      EXPECT_EQ(o.mask, visible) << "scene " << s.seed << " object " << k;
      // Mask pixels are tinted (not the pale background); the rest of the box is background.
      int64_t tinted = 0;
      for (int y = 0; y < s.height; ++y)
        for (int x = 0; x < s.width; ++x)
          if (o.mask.get(x, y)) {
            const Rgb p = s.image.at(x, y);
            if (std::min({p.r, p.g, p.b}) < 190) ++tinted;
          }
      EXPECT_EQ(tinted, o.mask.count());
    }
  }
}

TEST(FmnistScenes, EveryTierEvaluatesToItsStoredTarget) {
  std::set<std::string> tiers;
  int implicit_facts = 0;
  for (const Scene& s : FmnistScenes(12)) {
    for (const Expression& e : s.expressions) {
      tiers.insert(TierName(e.tier));
      auto t = EvaluateInScene(s, e.program);
      ASSERT_TRUE(t.ok()) << e.text << ": " << t.status().ToString();
      EXPECT_EQ(*t, e.target) << e.text;
      EXPECT_FALSE(TargetMask(s, e.target).none()) << e.text;
      if (e.hops > 0) ++implicit_facts;
    }
  }
  EXPECT_EQ(tiers.size(), 7u);
  EXPECT_GE(implicit_facts, 24);
}

TEST(FmnistScenes, JsonRoundTripAndAnAbsentDatasetIsRefused) {
  const std::vector<Scene> scenes = FmnistScenes(2);
  ASSERT_EQ(scenes.size(), 2u);
  const core::Json j = SceneToJson(scenes[0]);
  EXPECT_EQ(j.at("set"), "fmnist");
  auto back = SceneFromJson(j, "scene.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->image.pixels, scenes[0].image.pixels);
  EXPECT_EQ(back->expressions.size(), scenes[0].expressions.size());
  // An item of another class is refused, naming the field.
  core::Json wrong = j;
  const int item = wrong["objects"][0]["item"].get<int>();
  auto test = SharedFmnist(FmnistSplit::kTest);
  ASSERT_TRUE(test.ok());
  const int other_label = ((*test)->labels[item] + 1) % kFmnistClasses;
  wrong["objects"][0]["item"] = (*test)->by_label[other_label][0];
  auto bad = SceneFromJson(wrong, "scene.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("scene.json.objects[0].item"), std::string::npos)
      << bad.status().ToString();
  // A refscenes scene has no items.
  core::Json refs = j;
  refs.erase("set");
  EXPECT_FALSE(SceneFromJson(refs, "scene.json").ok());
  // The dataset absent: loading and generating say which files and which package.
  const char* old = std::getenv(kFmnistDirEnv);
  const std::string saved = old ? old : "";
  setenv(kFmnistDirEnv, "/nonexistent/fmnist", 1);
  const core::Status load = SceneFromJson(j, "scene.json").status();
  const core::Status gen = GenerateScene(1, Fmnist()).status();
  if (old) {
    setenv(kFmnistDirEnv, saved.c_str(), 1);
  } else {
    unsetenv(kFmnistDirEnv);
  }
  for (const core::Status& s : {load, gen}) {
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("/nonexistent/fmnist/t10k-images-idx3-ubyte.gz"), std::string::npos)
        << s.ToString();
    EXPECT_NE(s.message().find("dataset-fashion-mnist"), std::string::npos) << s.ToString();
  }
  EXPECT_NE(load.message().find("scene.json"), std::string::npos) << load.ToString();
}

TEST(FmnistScenes, TheSetIsValidated) {
  SceneGeneratorOptions o;
  o.set = "mnist";
  const core::Status s = GenerateScene(1, o).status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("scenes.set: got 'mnist'"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace tessera::tarot
