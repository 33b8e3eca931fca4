// The classical segmenter on generated refscenes (ground truth used only to check): colour
// phrases return the right components, box and point prompts on isolated objects recover them,
// the lexicon recognises isolated shapes, answers are deterministic, and bad prompts are named.
#include "tarot/classical_segmenter.h"

#include <gtest/gtest.h>

#include "tarot/backends.h"
#include "tarot/classical_lexicon.h"
#include "tarot/mask_perturb.h"
#include "tarot/silhouettes.h"
#include "tarot/test_scenes.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

// Does object `id` stand alone: no other object's pixel within `gap` pixels of it?
bool Isolated(const Scene& s, int id, int gap) {
  Mask grown = s.objects[id].mask;
  for (int i = 0; i < gap; ++i) grown = Dilate4(grown);
  for (const SceneObject& o : s.objects)
    if (o.id != id && grown.IntersectionCount(o.mask) > 0) return false;
  return true;
}

ClassicalSegmenter Ready(const Scene& s) {
  ClassicalSegmenter seg;
  EXPECT_TRUE(seg.SetImage(s.image).ok());
  return seg;
}

TEST(ClassicalLexicon, QuantisesPaletteColoursShadedAndThePaleBackground) {
  const auto& palette = Palette();
  for (int i = 0; i < static_cast<int>(palette.size()); ++i) {
    const Rgb c = palette[i].rgb;
    EXPECT_EQ(QuantiseColour(c), i) << palette[i].name;
    for (double f : {0.88, 1.12}) {
      auto s = [f](uint8_t v) { return static_cast<uint8_t>(std::min(255.0, v * f)); };
      EXPECT_EQ(QuantiseColour({s(c.r), s(c.g), s(c.b)}), i) << palette[i].name << " x" << f;
    }
  }
  EXPECT_EQ(QuantiseColour({246, 241, 230}), kBackground);
  EXPECT_EQ(QuantiseColour({234, 241, 250}), kBackground);
}

TEST(ClassicalLexicon, EverySilhouetteIsItsOwnNearestCategory) {
  for (int c = 0; c < static_cast<int>(Categories().size()) && HasSilhouette(c); ++c) {
    const UnitExtent e = SilhouetteExtent(c);
    for (int half : {20, 45}) {  // sizes between the prototypes'
      const double w = (e.u1 - e.u0) * half, h = (e.v1 - e.v0) * half;
      const Mask m = SilhouetteInBox(c, half == 45, Box{5, 7, 5 + w, 7 + h},
                                     static_cast<int>(w) + 12, static_cast<int>(h) + 14);
      const auto ranked = RankCategories(m, false);
      ASSERT_FALSE(ranked.empty());
      EXPECT_EQ(ranked.front().category, c) << Categories()[c].name << " at " << half;
    }
  }
}

TEST(ClassicalLexicon, DescriptorsOfASquareAndADisc) {
  Mask square(40, 40), disc(80, 80);
  for (int y = 10; y < 30; ++y)
    for (int x = 10; x < 30; ++x) square.set(x, y);
  for (int y = 0; y < 80; ++y)
    for (int x = 0; x < 80; ++x)
      if ((x - 39.5) * (x - 39.5) + (y - 39.5) * (y - 39.5) <= 30 * 30) disc.set(x, y);
  const ShapeDescriptors s = Describe(square), d = Describe(disc);
  EXPECT_TRUE(s.valid);
  EXPECT_DOUBLE_EQ(s.extent, 1.0);
  EXPECT_NEAR(s.solidity, 1.0, 1e-9);
  EXPECT_EQ(s.vertices, 4);
  EXPECT_DOUBLE_EQ(s.aspect_log, 0.0);
  EXPECT_NEAR(s.circularity, M_PI / 4, 0.03);  // 4 pi a^2 / (4a)^2
  EXPECT_NEAR(d.circularity, 1.0, 0.15);
  EXPECT_NEAR(d.extent, M_PI / 4, 0.02);
  EXPECT_FALSE(Describe(Mask(8, 8)).valid);
}

TEST(ClassicalSegmenter, AColourPhraseReturnsTheObjectsOfThatColour) {
  int checked = 0;
  for (const Scene& s : TestScenes()) {
    ClassicalSegmenter seg = Ready(s);
    for (const PaletteColour& colour : Palette()) {
      // Colours whose objects (and objects with a part of that colour) all stand alone:
      // objects that touch merge in pixels, and a thing misread shows its parts as shapes.
      std::vector<int> ids;
      bool alone = true;
      for (const SceneObject& o : s.objects) {
        bool has = o.colour == colour.name;
        for (const ScenePart& p : o.parts) has = has || p.colour == colour.name;
        if (!has) continue;
        if (o.colour == colour.name) ids.push_back(o.id);
        alone = alone && Isolated(s, o.id, 2);
      }
      if (ids.empty() || !alone) continue;
      auto got = seg.SegmentText(colour.name);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ASSERT_EQ(got->size(), ids.size()) << "seed " << s.seed << " " << colour.name;
      for (int id : ids) {
        double best = 0;
        for (const Instance& i : *got) best = std::max(best, MaskIou(i.mask, s.objects[id].mask));
        EXPECT_GE(best, 0.97) << "seed " << s.seed << " " << colour.name << " object " << id;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
}

TEST(ClassicalSegmenter, APhraseWithAnotherColourOrNoVocabularyReturnsNothing) {
  const Scene& s = TestScenes()[0];
  ClassicalSegmenter seg = Ready(s);
  std::set<std::string> used;
  for (const SceneObject& o : s.objects) {
    used.insert(o.colour);
    for (const ScenePart& p : o.parts) used.insert(p.colour);
  }
  for (const PaletteColour& c : Palette()) {
    if (used.count(c.name) > 0) continue;
    auto got = seg.SegmentText("the " + c.name + " thing");
    ASSERT_TRUE(got.ok());
    EXPECT_TRUE(got->empty()) << c.name;
  }
  auto none = seg.SegmentText("what keeps the rain away");  // no facts: no vocabulary word
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(ClassicalSegmenter, RecognisesMostIsolatedShapesByCategoryAndColour) {
  int shapes = 0, found = 0;
  for (const Scene& s : TestScenes()) {
    ClassicalSegmenter seg = Ready(s);
    for (const SceneObject& o : s.objects) {
      if (!Isolated(s, o.id, 2) || o.visible_fraction() < 0.999) continue;
      auto got = seg.SegmentText(o.colour + " " + o.category);
      ASSERT_TRUE(got.ok());
      ++shapes;
      double best = 0;
      for (const Instance& i : *got) best = std::max(best, MaskIou(i.mask, o.mask));
      if (best >= 0.9) {
        ++found;
      } else {
        ADD_FAILURE() << s.seed << " " << o.colour << " " << o.category << " " << got->size() << " "
                      << best;
      }
    }
  }
  ASSERT_GE(shapes, 50);
  EXPECT_GE(found, 0.9 * shapes) << found << " of " << shapes;
}

TEST(ClassicalSegmenter, ABoxOnAnIsolatedObjectGivesIt) {
  int checked = 0;
  for (const Scene& s : TestScenes()) {
    ClassicalSegmenter seg = Ready(s);
    for (const SceneObject& o : s.objects) {
      if (!Isolated(s, o.id, 6)) continue;
      Box b = BoxOf(o.mask);
      b = {b.x0 - 2, b.y0 - 2, b.x1 + 2, b.y1 + 2};
      auto got = seg.SegmentBox(b);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ASSERT_FALSE(got->empty());
      EXPECT_GE(MaskIou(got->front().mask, o.mask), 0.9)
          << "seed " << s.seed << " object " << o.id << " " << o.category;
      ++checked;
    }
    if (checked >= 40) break;
  }
  EXPECT_GE(checked, 40);
}

TEST(ClassicalSegmenter, APositivePointOnAnIsolatedShapeGivesIt) {
  int checked = 0, good = 0;
  for (const Scene& s : TestScenes()) {
    ClassicalSegmenter seg = Ready(s);
    for (const SceneObject& o : s.objects) {
      if (!o.parts.empty() || !Isolated(s, o.id, 6)) continue;
      const Point c = CentroidOf(o.mask);
      if (!o.mask.get(static_cast<int>(c.x), static_cast<int>(c.y))) continue;
      auto got = seg.SegmentPoints({c}, std::nullopt);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ++checked;
      good += !got->empty() && MaskIou(got->front().mask, o.mask) >= 0.9;
    }
    if (checked >= 30) break;
  }
  ASSERT_GE(checked, 30);
  EXPECT_GE(good, checked - 1) << good << " of " << checked;
}

TEST(ClassicalSegmenter, AnswersDoNotDependOnEarlierPromptsAndAreBitwiseRepeatable) {
  const Scene& s = TestScenes()[1];
  const Box b = BoxOf(s.objects[0].mask);
  const Point p = CentroidOf(s.objects[1].mask);
  ClassicalSegmenter first = Ready(s), second = Ready(s);
  auto a1 = first.SegmentBox(b);
  auto a2 = first.SegmentPoints({p}, std::nullopt);
  auto b2 = second.SegmentPoints({p}, std::nullopt);  // in the other order
  auto b1 = second.SegmentBox(b);
  ASSERT_TRUE(a1.ok() && a2.ok() && b1.ok() && b2.ok());
  ASSERT_EQ(a1->size(), b1->size());
  for (size_t i = 0; i < a1->size(); ++i) {
    EXPECT_EQ((*a1)[i].mask, (*b1)[i].mask);
    EXPECT_EQ((*a1)[i].score, (*b1)[i].score);
  }
  ASSERT_EQ(a2->size(), b2->size());
  for (size_t i = 0; i < a2->size(); ++i) EXPECT_EQ((*a2)[i].mask, (*b2)[i].mask);
  // Setting the same image again keeps the answers; a different image changes the analysis.
  ASSERT_TRUE(first.SetImage(s.image).ok());
  auto again = first.SegmentBox(b);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->front().mask, a1->front().mask);
}

TEST(ClassicalSegmenter, BadPromptsAreNamed) {
  ClassicalSegmenter seg;
  EXPECT_EQ(seg.SegmentText("red").status().code(), core::StatusCode::kFailedPrecondition);
  EXPECT_EQ(seg.SetImage(Image()).code(), core::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(seg.SetImage(TestScenes()[0].image).ok());
  const int w = TestScenes()[0].width;
  auto outside = seg.SegmentBox(Box{static_cast<double>(w) + 5, 0, w + 20.0, 10});
  EXPECT_EQ(outside.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(outside.status().message().find("misses the"), std::string::npos);
  EXPECT_EQ(seg.SegmentPoints({}, std::nullopt).status().code(),
            core::StatusCode::kInvalidArgument);
  auto far = seg.SegmentPoints({Point{-3, 4}}, std::nullopt);
  EXPECT_NE(far.status().message().find("outside the"), std::string::npos);
  auto negatives = seg.SegmentPoints({Point{3, 4, false}}, std::nullopt);
  ASSERT_TRUE(negatives.ok());
  EXPECT_TRUE(negatives->empty());
}

TEST(ClassicalSegmenter, IsRegisteredByNameAndNeedsNoScene) {
  auto seg = MakeSegmenter("classical", {});
  ASSERT_TRUE(seg.ok()) << seg.status().ToString();
  EXPECT_EQ((*seg)->name(), "classical");
  EXPECT_TRUE((*seg)->SetImage(TestScenes()[0].image).ok());
  EXPECT_EQ(MakeSegmenter("classical", {{{"classical.iterations", "0"}}, nullptr})
                .status()
                .message()
                .substr(0, 52),
            "segmenter 'classical': classical.iterations: got '0'");
  EXPECT_FALSE(MakeSegmenter("classical", {{{"classical.iterations", "2.5"}}, nullptr}).ok());
  EXPECT_TRUE(MakeSegmenter("classical", {{{"classical.margin", "0.5"}}, nullptr}).ok());
}

}  // namespace
}  // namespace tessera::tarot
