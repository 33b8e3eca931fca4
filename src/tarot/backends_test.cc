#include "tarot/backends.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tarot/handcrafted_features.h"
#include "tarot/test_scenes.h"

namespace tessera::tarot {
namespace {

TEST(TarotBackends, RegisteredByName) {
  EXPECT_EQ(Segmenters().Names(), (std::vector<std::string>{"synthetic", "classical"}));
  EXPECT_EQ(Reasoners().Names(), (std::vector<std::string>{"oracle", "noisy", "rule"}));
  EXPECT_EQ(FeatureExtractors().Names(), std::vector<std::string>{"handcrafted"});
  for (const auto& e : Segmenters()) EXPECT_NE(e.make(), nullptr);
  for (const auto& e : Reasoners()) EXPECT_NE(e.make(), nullptr);
  for (const auto& e : FeatureExtractors()) EXPECT_NE(e.make(), nullptr);
}

TEST(TarotBackends, ErrorsNameWhatIsWrong) {
  auto scene = std::make_shared<Scene>(TestScenes()[0]);
  EXPECT_EQ(MakeSegmenter("sam3", {{}, scene}).status().message(),
            "tarot.segmenter: got 'sam3', must be one of synthetic, classical");
  EXPECT_EQ(MakeReasoner("noisy", {{{"noisy.rat", "0.1"}}, scene}).status().message(),
            "tarot.reasoner 'noisy': got option 'noisy.rat', must be one of noisy.seed, "
            "noisy.rate, noisy.attribute, noisy.relation, noisy.ordinal, noisy.knowledge, "
            "noisy.hallucination, noisy.box, noisy.judge, noisy.box_jitter, noisy.box_swap");
  EXPECT_EQ(MakeReasoner("noisy", {{{"noisy.rate", "2"}}, scene}).status().message(),
            "tarot.reasoner 'noisy': noisy.rate: got '2', must be a finite number from 0 to 1");
  EXPECT_EQ(
      MakeSegmenter("synthetic", {{{"synthetic.relations", "maybe"}}, scene}).status().message(),
      "tarot.segmenter 'synthetic': synthetic.relations: got 'maybe', must be fail or "
      "ignore");
  EXPECT_EQ(MakeReasoner("oracle", {}).status().code(), core::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(MakeReasoner("rule", {}).ok());
  auto bare = Reasoners().FindOrNull("oracle")->make();
  EXPECT_EQ(bare->SetImage(scene->image).code(), core::StatusCode::kFailedPrecondition);
}

TEST(HandcraftedFeatures, L2NormalisedAndDeterministic) {
  auto fx = MakeFeatureExtractor("handcrafted", {});
  ASSERT_TRUE(fx.ok());
  for (int i = 0; i < 4; ++i) {
    const Scene& s = TestScenes()[i];
    auto a = (*fx)->Extract(s.image);
    auto b = (*fx)->Extract(s.image);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(a->stride, 8);
    EXPECT_EQ(a->dim, kHandcraftedDim);
    EXPECT_EQ(a->grid_w, (s.width + 7) / 8);
    EXPECT_EQ(a->grid_h, (s.height + 7) / 8);
    ASSERT_EQ(a->features.size(), static_cast<size_t>(a->grid_w) * a->grid_h * a->dim);
    EXPECT_EQ(a->features, b->features) << "bitwise deterministic";
    for (int gy = 0; gy < a->grid_h; ++gy) {
      for (int gx = 0; gx < a->grid_w; ++gx) {
        double n2 = 0;
        for (int k = 0; k < a->dim; ++k)
          n2 += static_cast<double>(a->at(gx, gy)[k]) * a->at(gx, gy)[k];
        ASSERT_NEAR(std::sqrt(n2), 1.0, 1e-5) << gx << "," << gy;
      }
    }
  }
}

TEST(HandcraftedFeatures, SameColourPatchesAreCloser) {
  // Left half red, right half blue, 32 x 16: patches within a half are more alike than across.
  Image img(32, 16, Rgb{210, 40, 40});
  for (int y = 0; y < 16; ++y)
    for (int x = 16; x < 32; ++x) img.at(x, y) = Rgb{40, 90, 210};
  auto g = HandcraftedFeatures().Extract(img);
  ASSERT_TRUE(g.ok());
  auto dot = [&](int ax, int ay, int bx, int by) {
    double d = 0;
    for (int k = 0; k < g->dim; ++k) d += g->at(ax, ay)[k] * g->at(bx, by)[k];
    return d;
  };
  EXPECT_GT(dot(0, 0, 1, 1), 0.99);
  EXPECT_LT(dot(0, 0, 3, 0), dot(0, 0, 1, 1) - 0.1);
  EXPECT_FALSE(HandcraftedFeatures().Extract(Image()).ok());
}

}  // namespace
}  // namespace tessera::tarot
