// The value types of Tarot-SAM3 (training-free referring-expression segmentation): an RGB image,
// a bit-packed binary mask, an axis-aligned box, a prompt point, a segmenter's instance and an
// ERI candidate.
//
// Coordinates: pixels, x to the right and y down, (0, 0) the top-left pixel's corner; a pixel
// (x, y) covers [x, x+1) x [y, y+1). A Box is [x0, x1) x [y0, y1) in pixels (x0 < x1, y0 < y1
// for a non-empty box); BoxOf(mask) is the tightest box around its set pixels (empty box for an
// empty mask). A Point is a pixel centre (x + 0.5, y + 0.5 of its pixel) or any real position.
// Mask: width x height bits, row-major, 64 pixels per word, the unused bits of each row's last
// word always zero (so word-wise operations and equality are exact). Set operations require
// equal sizes (CHECKed: a size mismatch is a programming error).
// Thread-safety: values; no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::tarot {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  friend bool operator==(const Rgb&, const Rgb&) = default;
};

struct Image {
  int width = 0, height = 0;
  std::vector<Rgb> pixels;  // row-major, width * height
  Image() = default;
  Image(int w, int h, Rgb fill = {});
  Rgb& at(int x, int y) { return pixels[static_cast<size_t>(y) * width + x]; }
  const Rgb& at(int x, int y) const { return pixels[static_cast<size_t>(y) * width + x]; }
  bool empty() const { return width <= 0 || height <= 0; }
};

struct Box {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool empty() const { return !(x1 > x0 && y1 > y0); }
  double area() const { return empty() ? 0.0 : (x1 - x0) * (y1 - y0); }
  friend bool operator==(const Box&, const Box&) = default;
};
// Intersection over union of two boxes (0 when either is empty).
double BoxIou(const Box& a, const Box& b);

struct Point {
  double x = 0, y = 0;
  bool positive = true;
  friend bool operator==(const Point&, const Point&) = default;
};

class Mask {
 public:
  Mask() = default;
  Mask(int width, int height);  // all clear
  int width() const { return width_; }
  int height() const { return height_; }
  bool empty_size() const { return width_ <= 0 || height_ <= 0; }

  bool get(int x, int y) const { return (words_[Word(x, y)] >> (x & 63)) & 1u; }
  void set(int x, int y, bool on = true) {
    const uint64_t bit = uint64_t{1} << (x & 63);
    if (on) {
      words_[Word(x, y)] |= bit;
    } else {
      words_[Word(x, y)] &= ~bit;
    }
  }
  int64_t count() const;  // set pixels
  bool none() const { return count() == 0; }

  Mask operator&(const Mask& o) const;
  Mask operator|(const Mask& o) const;
  Mask Minus(const Mask& o) const;  // this \ o
  Mask Not() const;
  int64_t IntersectionCount(const Mask& o) const;
  int64_t UnionCount(const Mask& o) const;
  friend bool operator==(const Mask&, const Mask&) = default;

  const std::vector<uint64_t>& words() const { return words_; }
  int words_per_row() const { return words_per_row_; }

 private:
  size_t Word(int x, int y) const { return static_cast<size_t>(y) * words_per_row_ + (x >> 6); }
  int width_ = 0, height_ = 0, words_per_row_ = 0;
  std::vector<uint64_t> words_;
};

// IoU of two masks of one size; 0 when both are empty (the LISA convention for a single
// sample is handled by the metrics, tarot/metrics.h).
double MaskIou(const Mask& a, const Mask& b);
// The tightest box around the set pixels (an empty box for an empty mask).
Box BoxOf(const Mask& m);
// The mean position of the set pixels' centres; (0, 0) for an empty mask.
Point CentroidOf(const Mask& m, bool positive = true);
// The largest 4-connected component (ties: the one whose first pixel in row-major order comes
// first); an empty mask for an empty input.
Mask LargestComponent(const Mask& m);
// A width x height mask with every pixel whose centre (x + 0.5, y + 0.5) lies in `box` set
// (so an integer box [x0, x1) x [y0, y1) sets exactly those pixels; clipped to the mask).
Mask BoxMask(int width, int height, const Box& box);

// One instance a segmenter returns for a prompt: its mask, its score in [0, 1] and the box of
// the mask.
struct Instance {
  Mask mask;
  double score = 0;
  Box box;
};

// The index of the best-score instance with a non-empty mask (ties: the earlier), -1 if none.
int BestInstance(const std::vector<Instance>& instances);
// Its mask, or an empty width x height mask when there is none.
Mask BestInstanceMask(const std::vector<Instance>& instances, int width, int height);
// `b` clipped to [0, width] x [0, height] (possibly empty).
Box ClipBox(const Box& b, int width, int height);

enum class CandidateSource { kText, kBox, kPoint };
const char* CandidateSourceName(CandidateSource s);

// An ERI candidate: a mask, its score, where it came from and the phrase (text candidates) or
// the box name (box candidates: "full", "short", "long").
struct Candidate {
  Mask mask;
  double score = 0;
  CandidateSource source = CandidateSource::kText;
  std::string phrase;
  int prompt_index = 0;  // order of the prompt that produced it (ties break by it)
};

}  // namespace tessera::tarot
