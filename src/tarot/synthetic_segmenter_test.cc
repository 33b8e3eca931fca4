#include "tarot/synthetic_segmenter.h"

#include <gtest/gtest.h>

#include "tarot/backends.h"
#include "tarot/test_scenes.h"

namespace tessera::tarot {
namespace {

std::unique_ptr<Segmenter> Make(const Scene& s, core::RegistryOptions options = {}) {
  auto seg = MakeSegmenter("synthetic", {options, std::make_shared<Scene>(s)});
  EXPECT_TRUE(seg.ok()) << seg.status().ToString();
  EXPECT_TRUE((*seg)->SetImage(s.image).ok());
  return std::move(*seg);
}

// Every object and part, by its colour and category, comes back exactly with zero knobs.
TEST(SyntheticSegmenter, ZeroKnobsGiveExactMasks) {
  for (const Scene& s : TestScenes()) {
    auto seg = Make(s);
    for (const SceneObject& o : s.objects) {
      auto got = seg->SegmentText(o.colour + " " + o.category);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      std::vector<Mask> want;
      for (const SceneObject& x : s.objects)
        if (x.colour == o.colour && x.category == o.category) want.push_back(x.mask);
      ASSERT_EQ(got->size(), want.size()) << o.colour << " " << o.category;
      for (const Instance& in : *got) {
        EXPECT_NE(std::find(want.begin(), want.end(), in.mask), want.end());
        EXPECT_EQ(in.box, BoxOf(in.mask));
        EXPECT_GE(in.score, 0.7);
        EXPECT_LE(in.score, 0.95);
      }
      for (size_t i = 1; i < got->size(); ++i) EXPECT_GE((*got)[i - 1].score, (*got)[i].score);
      for (const ScenePart& p : o.parts) {
        auto part = seg->SegmentText(p.name + " of the " + o.colour + " " + o.category);
        ASSERT_TRUE(part.ok());
        bool found = false;
        for (const Instance& in : *part) found = found || in.mask == p.mask;
        EXPECT_TRUE(found) << p.name << " of " << o.category;
      }
    }
  }
}

TEST(SyntheticSegmenter, FailsLikeSam3OnLongRelationalAndImplicitPhrases) {
  const Scene& s = TestScenes()[0];
  const SceneObject& o = s.objects[0];
  auto seg = Make(s, {{"synthetic.max_words", "4"}});
  EXPECT_FALSE(seg->SegmentText(o.category)->empty());
  EXPECT_TRUE(seg->SegmentText("the big big " + o.category + " please")->empty());
  EXPECT_TRUE(seg->SegmentText(o.category + " left of it")->empty());
  EXPECT_TRUE(seg->SegmentText("what you drink coffee from")->empty());
  EXPECT_TRUE(seg->SegmentText("a nice thing maybe")->size() == s.objects.size() ||
              seg->SegmentText("a nice thing maybe")->empty());
  auto ignoring = Make(s, {{"synthetic.relations", "ignore"}});
  EXPECT_FALSE(ignoring->SegmentText(o.category + " left of it")->empty());
}

TEST(SyntheticSegmenter, KnobsAreSeededAndDoWhatTheySay) {
  for (const Scene& s : TestScenes()) {
    auto over = Make(s, {{"synthetic.over_seg", "1"}});
    auto under = Make(s, {{"synthetic.under_seg", "1"}});
    auto jitter = Make(s, {{"synthetic.jitter_px", "3"}, {"synthetic.seed", "5"}});
    auto jitter2 = Make(s, {{"synthetic.jitter_px", "3"}, {"synthetic.seed", "5"}});
    auto noise = Make(s, {{"synthetic.score_noise", "0.2"}});
    for (const SceneObject& o : s.objects) {
      const std::string phrase = o.colour + " " + o.category;
      for (const ScenePart& p : o.parts) {
        auto whole = over->SegmentText(p.name + " of the " + phrase);
        ASSERT_TRUE(whole.ok());
        bool found = false;
        for (const Instance& in : *whole) found = found || in.mask == o.mask;
        EXPECT_TRUE(found) << "over-segmentation returns the whole " << o.category;
      }
      auto u = under->SegmentText(phrase);
      ASSERT_TRUE(u.ok());
      for (const Instance& in : *u) {
        EXPECT_FALSE(in.mask.none());
        bool smaller = false;
        for (const SceneObject& x : s.objects)
          smaller = smaller || (in.mask.Minus(x.mask).none() && in.mask.count() < x.mask.count());
        EXPECT_TRUE(smaller) << "under-segmentation drops pixels of " << phrase;
      }
      auto j = jitter->SegmentText(phrase);
      auto j2 = jitter2->SegmentText(phrase);
      ASSERT_EQ(j->size(), j2->size());
      for (size_t i = 0; i < j->size(); ++i) {
        EXPECT_EQ((*j)[i].mask, (*j2)[i].mask) << "same seed, same jitter";
        double best = 0;
        for (const SceneObject& x : s.objects) best = std::max(best, MaskIou((*j)[i].mask, x.mask));
        EXPECT_GT(best, 0.5);
      }
      auto noisy = noise->SegmentText(phrase);
      ASSERT_TRUE(noisy.ok());
      for (const Instance& in : *noisy) {
        EXPECT_GE(in.score, 0.0);
        EXPECT_LE(in.score, 1.0);
      }
    }
  }
}

TEST(SyntheticSegmenter, AnswersDoNotDependOnEarlierPrompts) {
  const Scene& s = TestScenes()[3];
  core::RegistryOptions knobs = {{"synthetic.jitter_px", "2"},
                                 {"synthetic.under_seg", "0.5"},
                                 {"synthetic.score_noise", "0.1"}};
  auto a = Make(s, knobs), b = Make(s, knobs);
  const std::string phrase = s.objects[0].category;
  ASSERT_TRUE(b->SegmentText(s.objects.back().category).ok());
  auto ra = a->SegmentText(phrase), rb = b->SegmentText(phrase);
  ASSERT_EQ(ra->size(), rb->size());
  for (size_t i = 0; i < ra->size(); ++i) {
    EXPECT_EQ((*ra)[i].mask, (*rb)[i].mask);
    EXPECT_EQ((*ra)[i].score, (*rb)[i].score);
  }
}

TEST(SyntheticSegmenter, BoxPromptGivesTheBestFittingUnitFirst) {
  for (const Scene& s : TestScenes()) {
    auto seg = Make(s);
    for (const SceneObject& o : s.objects) {
      auto got = seg->SegmentBox(BoxOf(o.mask));
      ASSERT_TRUE(got.ok());
      ASSERT_FALSE(got->empty());
      EXPECT_EQ(got->front().mask, o.mask) << o.category;
      for (const ScenePart& p : o.parts) {
        auto part = seg->SegmentBox(BoxOf(p.mask));
        ASSERT_FALSE(part->empty());
        EXPECT_EQ(part->front().mask, p.mask) << p.name << " of " << o.category;
      }
    }
  }
  auto seg = Make(TestScenes()[0]);
  EXPECT_FALSE(seg->SegmentBox(Box{-50, -50, -10, -10}).ok());
  EXPECT_FALSE(seg->SegmentBox(Box{5, 5, 5, 9}).ok());
}

TEST(SyntheticSegmenter, PointsSelectPartsOrObjects) {
  auto pixel_of = [](const Mask& m) {
    const Point c = CentroidOf(m);
    if (m.get(static_cast<int>(c.x), static_cast<int>(c.y))) return c;
    for (int y = 0; y < m.height(); ++y)
      for (int x = 0; x < m.width(); ++x)
        if (m.get(x, y)) return Point{x + 0.5, y + 0.5};
    return Point{};
  };
  int things = 0;
  for (const Scene& s : TestScenes()) {
    auto seg = Make(s);
    for (const SceneObject& o : s.objects) {
      if (o.parts.empty()) {
        auto got = seg->SegmentPoints({pixel_of(o.mask)}, std::nullopt);
        ASSERT_EQ(got->size(), 1u);
        EXPECT_EQ(got->front().mask, o.mask);
        continue;
      }
      ++things;
      const Point a = pixel_of(o.parts[0].mask), b = pixel_of(o.parts[1].mask);
      EXPECT_EQ(seg->SegmentPoints({a}, std::nullopt)->front().mask, o.parts[0].mask);
      EXPECT_EQ(seg->SegmentPoints({a, b}, std::nullopt)->front().mask, o.mask);
      Point neg = b;
      neg.positive = false;
      if (o.parts.size() > 2) {
        const Point c = pixel_of(o.parts[2].mask);
        EXPECT_EQ(seg->SegmentPoints({a, c, neg}, std::nullopt)->front().mask,
                  o.mask.Minus(o.parts[1].mask));
      }
      const Box top{0, 0, static_cast<double>(s.width), o.cy};
      EXPECT_EQ(seg->SegmentPoints({a, b}, top)->front().mask,
                o.mask & BoxMask(s.width, s.height, top));
    }
  }
  EXPECT_GT(things, 10);
  auto seg = Make(TestScenes()[0]);
  EXPECT_FALSE(seg->SegmentPoints({}, std::nullopt).ok());
  EXPECT_FALSE(seg->SegmentPoints({Point{-1, 3}}, std::nullopt).ok());
}

// Clicks are honoured: with every prompt under-segmented (under_seg = 1), a positive point still
// gets the whole part or shape under it back, and a negative point's part stays out even when
// every prompt is over-segmented.
TEST(SyntheticSegmenter, ClicksAreHonouredWhateverTheErrorDraws) {
  auto pixel_of = [](const Mask& m) {
    for (int y = 0; y < m.height(); ++y)
      for (int x = 0; x < m.width(); ++x)
        if (m.get(x, y) && (x == 0 || m.get(x - 1, y)) && (x + 1 == m.width() || m.get(x + 1, y)))
          return Point{x + 0.5, y + 0.5};
    return Point{};
  };
  int shapes = 0, parts = 0, negatives = 0;
  for (const Scene& s : TestScenes()) {
    auto under = Make(s, {{"synthetic.under_seg", "1"}, {"synthetic.seed", "3"}});
    auto over = Make(s, {{"synthetic.over_seg", "1"}, {"synthetic.seed", "3"}});
    for (const SceneObject& o : s.objects) {
      if (o.parts.empty()) {
        auto got = under->SegmentPoints({pixel_of(o.mask)}, std::nullopt);
        ASSERT_EQ(got->size(), 1u);
        EXPECT_EQ(got->front().mask & o.mask, o.mask) << o.category;
        ++shapes;
        continue;
      }
      const Point roof = pixel_of(o.parts[1].mask);
      auto got = under->SegmentPoints({roof}, std::nullopt);
      ASSERT_EQ(got->size(), 1u);
      EXPECT_EQ(got->front().mask, o.parts[1].mask) << o.category;
      ++parts;
      Point neg = pixel_of(o.parts[1].mask);
      neg.positive = false;
      auto cut = over->SegmentPoints({pixel_of(o.parts[0].mask), neg}, std::nullopt);
      ASSERT_TRUE(cut.ok());
      if (!cut->empty()) {
        EXPECT_EQ(cut->front().mask.IntersectionCount(o.parts[1].mask), 0) << o.category;
        ++negatives;
      }
    }
  }
  EXPECT_GT(shapes, 10);
  EXPECT_GT(parts, 10);
  EXPECT_GT(negatives, 5);
}

TEST(SyntheticSegmenter, NeedsItsScenesImage) {
  auto seg = MakeSegmenter("synthetic", {{}, std::make_shared<Scene>(TestScenes()[0])});
  ASSERT_TRUE(seg.ok());
  EXPECT_EQ((*seg)->SegmentText("star").status().code(), core::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*seg)->SetImage(TestScenes()[1].image).code(), core::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tessera::tarot
