// Mask operations against a plain bool-per-pixel reference on seeded random masks of odd widths
// (1, 63, 64, 65, 130: one word, a word less one bit, exactly a word, a word plus one bit, three
// words), and the geometry helpers on hand cases.
#include "tarot/types.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/rng.h"

namespace tessera::tarot {
namespace {

// The plain reference: one bool per pixel, row-major.
struct Ref {
  int w = 0, h = 0;
  std::vector<bool> px;
  bool at(int x, int y) const { return px[static_cast<size_t>(y) * w + x]; }
};

Ref RandomRef(int w, int h, double density, core::Rng& rng) {
  Ref r{w, h, std::vector<bool>(static_cast<size_t>(w) * h)};
  for (size_t i = 0; i < r.px.size(); ++i) r.px[i] = rng.Uniform() < density;
  return r;
}

Mask ToMask(const Ref& r) {
  Mask m(r.w, r.h);
  for (int y = 0; y < r.h; ++y) {
    for (int x = 0; x < r.w; ++x) m.set(x, y, r.at(x, y));
  }
  return m;
}

void ExpectEqual(const Mask& m, const Ref& r) {
  ASSERT_EQ(m.width(), r.w);
  ASSERT_EQ(m.height(), r.h);
  int64_t n = 0;
  for (int y = 0; y < r.h; ++y) {
    for (int x = 0; x < r.w; ++x) {
      ASSERT_EQ(m.get(x, y), r.at(x, y)) << "pixel " << x << "," << y;
      n += r.at(x, y) ? 1 : 0;
    }
  }
  EXPECT_EQ(m.count(), n);
  // Unused bits of each row's last word stay zero.
  const int used = r.w & 63;
  if (used != 0) {
    for (int y = 0; y < r.h; ++y) {
      const uint64_t last =
          m.words()[static_cast<size_t>(y) * m.words_per_row() + m.words_per_row() - 1];
      EXPECT_EQ(last >> used, 0u) << "row " << y;
    }
  }
}

template <typename F>
Ref ZipRef(const Ref& a, const Ref& b, F f) {
  Ref r{a.w, a.h, std::vector<bool>(a.px.size())};
  for (size_t i = 0; i < r.px.size(); ++i) r.px[i] = f(a.px[i], b.px[i]);
  return r;
}

// Reference components by label propagation: each pixel starts with its own row-major index and
// takes the minimum over its 4-neighbours until nothing changes; a component's label is then its
// first pixel, and the largest one (ties: smallest label) is the answer.
Ref RefLargestComponent(const Ref& r) {
  std::vector<int> lab(r.px.size(), -1);
  for (size_t i = 0; i < lab.size(); ++i) lab[i] = r.px[i] ? static_cast<int>(i) : -1;
  for (bool changed = true; changed;) {
    changed = false;
    for (int y = 0; y < r.h; ++y) {
      for (int x = 0; x < r.w; ++x) {
        const size_t i = static_cast<size_t>(y) * r.w + x;
        if (lab[i] < 0) continue;
        const int nx[4] = {x - 1, x + 1, x, x}, ny[4] = {y, y, y - 1, y + 1};
        for (int k = 0; k < 4; ++k) {
          if (nx[k] < 0 || nx[k] >= r.w || ny[k] < 0 || ny[k] >= r.h) continue;
          const int q = lab[static_cast<size_t>(ny[k]) * r.w + nx[k]];
          if (q >= 0 && q < lab[i]) {
            lab[i] = q;
            changed = true;
          }
        }
      }
    }
  }
  std::vector<int> size(lab.size(), 0);
  for (int l : lab) {
    if (l >= 0) ++size[static_cast<size_t>(l)];
  }
  int best = -1;
  for (size_t l = 0; l < size.size(); ++l) {
    if (size[l] > 0 && (best < 0 || size[l] > size[static_cast<size_t>(best)])) {
      best = static_cast<int>(l);
    }
  }
  Ref out{r.w, r.h, std::vector<bool>(r.px.size())};
  for (size_t i = 0; i < lab.size(); ++i) out.px[i] = best >= 0 && lab[i] == best;
  return out;
}

TEST(TarotMask, OperationsMatchPlainReference) {
  core::Rng rng(20260407);
  for (int w : {1, 63, 64, 65, 130}) {
    for (int h : {1, 3, 17}) {
      for (double density : {0.0, 0.1, 0.5, 0.9, 1.0}) {
        SCOPED_TRACE(testing::Message() << w << "x" << h << " density " << density);
        const Ref a = RandomRef(w, h, density, rng);
        const Ref b = RandomRef(w, h, 0.5, rng);
        const Mask ma = ToMask(a), mb = ToMask(b);
        ExpectEqual(ma, a);
        ExpectEqual(ma & mb, ZipRef(a, b, [](bool p, bool q) { return p && q; }));
        ExpectEqual(ma | mb, ZipRef(a, b, [](bool p, bool q) { return p || q; }));
        ExpectEqual(ma.Minus(mb), ZipRef(a, b, [](bool p, bool q) { return p && !q; }));
        ExpectEqual(ma.Not(), ZipRef(a, a, [](bool p, bool) { return !p; }));
        ExpectEqual(ma.Not().Not(), a);
        const Ref i = ZipRef(a, b, [](bool p, bool q) { return p && q; });
        const Ref u = ZipRef(a, b, [](bool p, bool q) { return p || q; });
        int64_t ni = 0, nu = 0;
        for (size_t k = 0; k < i.px.size(); ++k) {
          ni += i.px[k] ? 1 : 0;
          nu += u.px[k] ? 1 : 0;
        }
        EXPECT_EQ(ma.IntersectionCount(mb), ni);
        EXPECT_EQ(ma.UnionCount(mb), nu);
        EXPECT_DOUBLE_EQ(MaskIou(ma, mb), nu == 0 ? 0.0 : static_cast<double>(ni) / nu);

        // BoxOf and CentroidOf against a pixel scan.
        double min_x = w, min_y = h, max_x = -1, max_y = -1, sx = 0, sy = 0;
        int64_t n = 0;
        for (int y = 0; y < h; ++y) {
          for (int x = 0; x < w; ++x) {
            if (!a.at(x, y)) continue;
            min_x = std::min<double>(min_x, x);
            min_y = std::min<double>(min_y, y);
            max_x = std::max<double>(max_x, x);
            max_y = std::max<double>(max_y, y);
            sx += x + 0.5;
            sy += y + 0.5;
            ++n;
          }
        }
        EXPECT_EQ(ma.none(), n == 0);
        const Box box = BoxOf(ma);
        if (n == 0) {
          EXPECT_TRUE(box.empty());
        } else {
          EXPECT_EQ(box, (Box{min_x, min_y, max_x + 1, max_y + 1}));
          const Point c = CentroidOf(ma);
          EXPECT_NEAR(c.x, sx / n, 1e-9);
          EXPECT_NEAR(c.y, sy / n, 1e-9);
        }
        ExpectEqual(LargestComponent(ma), RefLargestComponent(a));
      }
    }
  }
}

TEST(TarotMask, SizeMismatchIsAProgrammingError) {
  EXPECT_DEATH((void)(Mask(3, 3) & Mask(4, 3)), "mask sizes differ");
}

TEST(TarotMask, LargestComponentTieGoesToFirstPixel) {
  // Two 2-pixel components; the one starting at (3, 0) comes first in row-major order even
  // though the other one's leftmost pixel (0, 1) is further left.
  Mask m(5, 3);
  m.set(3, 0);
  m.set(4, 0);
  m.set(0, 2);
  m.set(1, 2);
  // A diagonal neighbour is not 4-connected: (2, 1) alone is a third, smaller component.
  m.set(2, 1);
  const Mask c = LargestComponent(m);
  EXPECT_EQ(c.count(), 2);
  EXPECT_TRUE(c.get(3, 0));
  EXPECT_TRUE(c.get(4, 0));
  EXPECT_TRUE(LargestComponent(Mask(4, 4)).none());
}

TEST(TarotMask, CentroidOfHandCase) {
  Mask m(4, 4);
  m.set(0, 0);
  m.set(3, 0);
  m.set(0, 2);
  // Pixel centres (0.5, 0.5), (3.5, 0.5), (0.5, 2.5): mean (1.5, 7/6).
  const Point c = CentroidOf(m, /*positive=*/false);
  EXPECT_DOUBLE_EQ(c.x, 1.5);
  EXPECT_DOUBLE_EQ(c.y, 3.5 / 3.0);
  EXPECT_FALSE(c.positive);
  EXPECT_EQ(CentroidOf(Mask(4, 4)), (Point{0, 0, true}));
}

TEST(TarotBox, IouHandCases) {
  // [0,2)x[0,2) and [1,3)x[0,2): intersection 2, union 6.
  EXPECT_DOUBLE_EQ(BoxIou({0, 0, 2, 2}, {1, 0, 3, 2}), 2.0 / 6.0);
  EXPECT_DOUBLE_EQ(BoxIou({0, 0, 2, 2}, {0, 0, 2, 2}), 1.0);
  EXPECT_DOUBLE_EQ(BoxIou({0, 0, 2, 2}, {2, 0, 4, 2}), 0.0);  // touching edges
  EXPECT_DOUBLE_EQ(BoxIou({0, 0, 0, 2}, {0, 0, 2, 2}), 0.0);  // empty box
}

TEST(TarotBox, BoxMaskUsesPixelCentres) {
  const Mask m = BoxMask(6, 4, Box{1, 1, 4, 3});
  EXPECT_EQ(m.count(), 6);
  EXPECT_EQ(BoxOf(m), (Box{1, 1, 4, 3}));
  // Centres 0.5..: x0 = 1.6 excludes pixel 1 (centre 1.5), x1 = 3.5 excludes pixel 3 (3.5).
  EXPECT_EQ(BoxOf(BoxMask(6, 4, Box{1.6, 0, 3.5, 1})), (Box{2, 0, 3, 1}));
  // Clipped to the mask; an empty box gives an empty mask.
  EXPECT_EQ(BoxMask(6, 4, Box{-10, -10, 100, 100}).count(), 24);
  EXPECT_TRUE(BoxMask(6, 4, Box{3, 3, 3, 4}).none());
  EXPECT_TRUE(BoxOf(Mask(6, 4)).empty());
}

TEST(TarotTypes, Names) {
  EXPECT_STREQ(CandidateSourceName(CandidateSource::kText), "text");
  EXPECT_STREQ(CandidateSourceName(CandidateSource::kBox), "box");
  EXPECT_STREQ(CandidateSourceName(CandidateSource::kPoint), "point");
}

}  // namespace
}  // namespace tessera::tarot
