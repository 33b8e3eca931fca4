#include "tarot/types.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "core/check.h"

namespace tessera::tarot {

Image::Image(int w, int h, Rgb fill)
    : width(std::max(w, 0)),
      height(std::max(h, 0)),
      pixels(static_cast<size_t>(std::max(w, 0)) * std::max(h, 0), fill) {}

double BoxIou(const Box& a, const Box& b) {
  if (a.empty() || b.empty()) return 0.0;
  const Box inter{std::max(a.x0, b.x0), std::max(a.y0, b.y0), std::min(a.x1, b.x1),
                  std::min(a.y1, b.y1)};
  const double i = inter.area();
  const double u = a.area() + b.area() - i;
  return u > 0 ? i / u : 0.0;
}

Mask::Mask(int width, int height)
    : width_(std::max(width, 0)),
      height_(std::max(height, 0)),
      words_per_row_((std::max(width, 0) + 63) / 64),
      words_(static_cast<size_t>(words_per_row_) * std::max(height, 0), 0) {}

int64_t Mask::count() const {
  int64_t n = 0;
  for (uint64_t w : words_) n += std::popcount(w);
  return n;
}

namespace {

void CheckSameSize(const Mask& a, const Mask& b) {
  CHECK(a.width() == b.width() && a.height() == b.height())
      << "mask sizes differ: " << a.width() << "x" << a.height() << " vs " << b.width() << "x"
      << b.height();
}

// The bits of a row's last word that hold pixels (all ones when the width is a multiple of 64).
uint64_t LastWordMask(int width) {
  const int used = width & 63;
  return used == 0 ? ~uint64_t{0} : (uint64_t{1} << used) - 1;
}

}  // namespace

Mask Mask::operator&(const Mask& o) const {
  CheckSameSize(*this, o);
  Mask r = *this;
  for (size_t i = 0; i < r.words_.size(); ++i) r.words_[i] &= o.words_[i];
  return r;
}

Mask Mask::operator|(const Mask& o) const {
  CheckSameSize(*this, o);
  Mask r = *this;
  for (size_t i = 0; i < r.words_.size(); ++i) r.words_[i] |= o.words_[i];
  return r;
}

Mask Mask::Minus(const Mask& o) const {
  CheckSameSize(*this, o);
  Mask r = *this;
  for (size_t i = 0; i < r.words_.size(); ++i) r.words_[i] &= ~o.words_[i];
  return r;
}

Mask Mask::Not() const {
  Mask r = *this;
  if (words_per_row_ == 0) return r;
  const uint64_t last = LastWordMask(width_);
  for (int y = 0; y < height_; ++y) {
    uint64_t* row = r.words_.data() + static_cast<size_t>(y) * words_per_row_;
    for (int w = 0; w < words_per_row_; ++w) row[w] = ~row[w];
    row[words_per_row_ - 1] &= last;
  }
  return r;
}

int64_t Mask::IntersectionCount(const Mask& o) const {
  CheckSameSize(*this, o);
  int64_t n = 0;
  for (size_t i = 0; i < words_.size(); ++i) n += std::popcount(words_[i] & o.words_[i]);
  return n;
}

int64_t Mask::UnionCount(const Mask& o) const {
  CheckSameSize(*this, o);
  int64_t n = 0;
  for (size_t i = 0; i < words_.size(); ++i) n += std::popcount(words_[i] | o.words_[i]);
  return n;
}

double MaskIou(const Mask& a, const Mask& b) {
  const int64_t u = a.UnionCount(b);
  return u == 0 ? 0.0 : static_cast<double>(a.IntersectionCount(b)) / static_cast<double>(u);
}

Box BoxOf(const Mask& m) {
  int min_x = m.width(), min_y = m.height(), max_x = -1, max_y = -1;
  const int wpr = m.words_per_row();
  const auto& words = m.words();
  for (int y = 0; y < m.height(); ++y) {
    const uint64_t* row = words.data() + static_cast<size_t>(y) * wpr;
    for (int w = 0; w < wpr; ++w) {
      if (row[w] == 0) continue;
      min_x = std::min(min_x, w * 64 + std::countr_zero(row[w]));
      max_x = std::max(max_x, w * 64 + 63 - std::countl_zero(row[w]));
      min_y = std::min(min_y, y);
      max_y = y;
    }
  }
  if (max_x < 0) return Box{};
  return Box{static_cast<double>(min_x), static_cast<double>(min_y), static_cast<double>(max_x + 1),
             static_cast<double>(max_y + 1)};
}

Point CentroidOf(const Mask& m, bool positive) {
  // Integer sums of pixel indices keep the result independent of summation order.
  int64_t n = 0, sx = 0, sy = 0;
  const int wpr = m.words_per_row();
  const auto& words = m.words();
  for (int y = 0; y < m.height(); ++y) {
    const uint64_t* row = words.data() + static_cast<size_t>(y) * wpr;
    for (int w = 0; w < wpr; ++w) {
      uint64_t bits = row[w];
      while (bits != 0) {
        sx += w * 64 + std::countr_zero(bits);
        sy += y;
        ++n;
        bits &= bits - 1;
      }
    }
  }
  if (n == 0) return Point{0, 0, positive};
  const double dn = static_cast<double>(n);
  return Point{static_cast<double>(sx) / dn + 0.5, static_cast<double>(sy) / dn + 0.5, positive};
}

Mask LargestComponent(const Mask& m) {
  const int w = m.width(), h = m.height();
  Mask best(w, h);
  if (m.none()) return best;
  // Flood fill from each unlabelled pixel in row-major order, so components are met in the
  // order of their first pixel; a later component replaces the best only when strictly larger.
  std::vector<int> label(static_cast<size_t>(w) * h, -1);
  std::vector<int> stack;
  int best_label = -1;
  int64_t best_size = 0;
  int next = 0;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const size_t idx = static_cast<size_t>(y) * w + x;
      if (!m.get(x, y) || label[idx] >= 0) continue;
      const int lab = next++;
      int64_t size = 0;
      label[idx] = lab;
      stack.assign(1, static_cast<int>(idx));
      while (!stack.empty()) {
        const int p = stack.back();
        stack.pop_back();
        ++size;
        const int px = p % w, py = p / w;
        const int nx[4] = {px - 1, px + 1, px, px};
        const int ny[4] = {py, py, py - 1, py + 1};
        for (int k = 0; k < 4; ++k) {
          if (nx[k] < 0 || nx[k] >= w || ny[k] < 0 || ny[k] >= h) continue;
          const size_t q = static_cast<size_t>(ny[k]) * w + nx[k];
          if (label[q] >= 0 || !m.get(nx[k], ny[k])) continue;
          label[q] = lab;
          stack.push_back(static_cast<int>(q));
        }
      }
      if (size > best_size) {
        best_size = size;
        best_label = lab;
      }
    }
  }
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      if (label[static_cast<size_t>(y) * w + x] == best_label) best.set(x, y);
    }
  }
  return best;
}

Mask BoxMask(int width, int height, const Box& box) {
  Mask m(width, height);
  if (box.empty()) return m;
  // Pixel (x, y) is inside when its centre (x + 0.5, y + 0.5) lies in [x0, x1) x [y0, y1).
  // The first pixel index whose centre is >= v, clamped to [0, limit] before the cast.
  auto first = [](double v, int limit) {
    return static_cast<int>(std::clamp(std::ceil(v - 0.5), 0.0, static_cast<double>(limit)));
  };
  const int x_begin = first(box.x0, width), x_end = first(box.x1, width);
  const int y_begin = first(box.y0, height), y_end = first(box.y1, height);
  for (int y = y_begin; y < y_end; ++y) {
    for (int x = x_begin; x < x_end; ++x) m.set(x, y);
  }
  return m;
}

int BestInstance(const std::vector<Instance>& instances) {
  int best = -1;
  for (size_t i = 0; i < instances.size(); ++i) {
    if (instances[i].mask.none()) continue;
    if (best < 0 || instances[i].score > instances[best].score) best = static_cast<int>(i);
  }
  return best;
}

Mask BestInstanceMask(const std::vector<Instance>& instances, int width, int height) {
  const int best = BestInstance(instances);
  return best < 0 ? Mask(width, height) : instances[best].mask;
}

Box ClipBox(const Box& b, int width, int height) {
  const double w = width, h = height;
  return Box{std::clamp(b.x0, 0.0, w), std::clamp(b.y0, 0.0, h), std::clamp(b.x1, 0.0, w),
             std::clamp(b.y1, 0.0, h)};
}

const char* CandidateSourceName(CandidateSource s) {
  switch (s) {
    case CandidateSource::kText:
      return "text";
    case CandidateSource::kBox:
      return "box";
    case CandidateSource::kPoint:
      return "point";
  }
  return "?";
}

}  // namespace tessera::tarot
