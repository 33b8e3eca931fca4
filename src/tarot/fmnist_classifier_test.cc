// The fashion-item classifier: deterministic training, the region view ignoring the tint, and
// its accuracy on the Fashion-MNIST TEST split above a floor measured with margin (a correctness
// floor, not a speed bound). Needs dataset-fashion-mnist (scripts/install-deps.sh).
#include "tarot/fmnist_classifier.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "tarot/scene_generator.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

// Measured: 0.8405 on the whole test split (RenderedInput at half-size 24) and 0.8185 on the
// visible regions of the 270 objects of 40 fmnist scenes (docs/tarot.md); floors with margin.
constexpr double kTestAccuracyFloor = 0.80;
constexpr double kSceneAccuracyFloor = 0.75;

std::shared_ptr<const FmnistClassifier> Shared() {
  auto c = SharedFmnistClassifier();
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : nullptr;
}

TEST(FmnistClassifier, TheRegionViewIgnoresTheTint) {
  auto test = SharedFmnist(FmnistSplit::kTest);
  ASSERT_TRUE(test.ok()) << test.status().ToString();
  const uint8_t* item = (*test)->item(0);
  const ItemInput red = RenderedInput(item, 20, Palette()[ColourIndex("red")].rgb);
  const ItemInput blue = RenderedInput(item, 20, Palette()[ColourIndex("blue")].rgb);
  double diff = 0, on = 0;
  for (int i = 0; i < kFmnistPixels; ++i) {
    diff += std::abs(red[i] - blue[i]);
    on += red[i] > 0;
  }
  EXPECT_GT(on, 100);
  EXPECT_LT(diff / on, 0.03);  // rounding of the tinted bytes only
  // An empty region is all zero.
  const ItemInput none = RegionInput(Image(8, 8), Mask(8, 8));
  for (float v : none) EXPECT_EQ(v, 0.0f);
}

TEST(FmnistClassifier, TrainingIsDeterministic) {
  auto train = SharedFmnist(FmnistSplit::kTrain);
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  FmnistClassifierOptions o;
  o.epochs = 1;
  o.max_items = 2000;
  auto a = FmnistClassifier::Train(**train, o);
  auto b = FmnistClassifier::Train(**train, o);
  ASSERT_TRUE(a.ok() && b.ok());
  auto test = SharedFmnist(FmnistSplit::kTest);
  ASSERT_TRUE(test.ok());
  for (int i = 0; i < 50; ++i) {
    const ItemInput x = RenderedInput((*test)->item(i), 24, Palette()[i % 10].rgb);
    EXPECT_EQ(a->Probabilities(x), b->Probabilities(x));
  }
  o.epochs = 0;
  EXPECT_FALSE(FmnistClassifier::Train(**train, o).ok());
}

TEST(FmnistClassifier, AccuracyOnTheTestSplitIsAboveItsFloor) {
  auto c = Shared();
  ASSERT_NE(c, nullptr);
  auto test = SharedFmnist(FmnistSplit::kTest);
  ASSERT_TRUE(test.ok());
  const double accuracy = TestAccuracy(*c, **test);
  std::printf("fmnist classifier: test-split accuracy %.4f over %d items\n", accuracy,
              (*test)->count());
  EXPECT_GE(accuracy, kTestAccuracyFloor);
}

TEST(FmnistClassifier, AccuracyOnSceneRegionsIsAboveItsFloor) {
  auto c = Shared();
  ASSERT_NE(c, nullptr);
  SceneGeneratorOptions o;
  o.set = kSetFmnist;
  auto scenes = GenerateScenes(5, 40, o);
  ASSERT_TRUE(scenes.ok()) << scenes.status().ToString();
  int right = 0, n = 0;
  for (const Scene& s : *scenes) {
    for (const SceneObject& obj : s.objects) {
      const int label = c->Predict(RegionInput(s.image, obj.mask));
      right += FashionCategory(label) == CategoryIndex(obj.category);
      ++n;
    }
  }
  const double accuracy = static_cast<double>(right) / n;
  std::printf("fmnist classifier: accuracy %.4f on the visible regions of %d scene objects\n",
              accuracy, n);
  EXPECT_GE(accuracy, kSceneAccuracyFloor);
}

}  // namespace
}  // namespace tessera::tarot
