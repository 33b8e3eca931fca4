// Scripted fakes of the three backends for the algorithm's tests (not the real backends): each
// answer is set by the test, each call is recorded, so a test states exactly what the segmenter,
// reasoner and features say and checks what the algorithm asked.
// Test-only; header-only. Thread-safety: none.
#pragma once

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tarot/features.h"
#include "tarot/reasoner.h"
#include "tarot/segmenter.h"
#include "tarot/types.h"

namespace tessera::tarot::fakes {

// A width x height mask with [x0, x1) x [y0, y1) set.
inline Mask Rect(int width, int height, int x0, int y0, int x1, int y1) {
  return BoxMask(width, height,
                 Box{static_cast<double>(x0), static_cast<double>(y0), static_cast<double>(x1),
                     static_cast<double>(y1)});
}

inline Instance Inst(const Mask& m, double score) { return Instance{m, score, BoxOf(m)}; }

class ScriptSegmenter : public Segmenter {
 public:
  std::map<std::string, std::vector<Instance>> text;     // phrase -> instances (absent: none)
  std::function<std::vector<Instance>(const Box&)> box;  // null: none
  std::function<std::vector<Instance>(const std::vector<Point>&)> points;  // null: none
  std::vector<std::string> text_calls;
  std::vector<Box> box_calls;
  std::vector<std::vector<Point>> point_calls;

  std::string name() const override { return "script"; }
  core::Status SetImage(const Image&) override { return core::Status::Ok(); }
  core::StatusOr<std::vector<Instance>> SegmentText(const std::string& phrase) override {
    text_calls.push_back(phrase);
    auto it = text.find(phrase);
    return it == text.end() ? std::vector<Instance>{} : it->second;
  }
  core::StatusOr<std::vector<Instance>> SegmentBox(const Box& b) override {
    box_calls.push_back(b);
    return box ? box(b) : std::vector<Instance>{};
  }
  core::StatusOr<std::vector<Instance>> SegmentPoints(const std::vector<Point>& pts,
                                                      std::optional<Box>) override {
    point_calls.push_back(pts);
    return points ? points(pts) : std::vector<Instance>{};
  }
};

class ScriptReasoner : public Reasoner {
 public:
  ParsedQuery parsed;
  std::string description = "the thing";
  Variants variants;
  std::vector<std::string> phrases;
  std::map<std::string, std::string> rephrase;  // phrase -> next phrase (absent: none)
  std::map<std::string, Box> ground;            // expression -> box (absent: none)
  std::function<bool(const Mask& kept, const Mask& region)> judge;  // null: yes
  int compare_answer = 0;

  std::vector<std::string> calls;  // method names in order
  std::vector<DescribeContext> contexts;
  std::vector<std::vector<std::string>> rephrase_tried;
  std::vector<Mask> judged;

  std::string name() const override { return "script"; }
  core::Status SetImage(const Image&) override { return core::Status::Ok(); }
  core::StatusOr<ParsedQuery> Parse(const std::string&) override {
    calls.push_back("Parse");
    return parsed;
  }
  core::StatusOr<std::string> Describe(const std::string&, const ParsedQuery&,
                                       const DescribeContext& context) override {
    calls.push_back("Describe");
    contexts.push_back(context);
    return description;
  }
  core::StatusOr<Variants> MakeVariants(const std::string&) override {
    calls.push_back("Variants");
    return variants;
  }
  core::StatusOr<std::vector<std::string>> NounPhrases(const std::string&, int) override {
    calls.push_back("NounPhrases");
    return phrases;
  }
  core::StatusOr<std::optional<std::string>> Rephrase(
      const std::string& phrase, const std::vector<std::string>& tried) override {
    calls.push_back("Rephrase");
    rephrase_tried.push_back(tried);
    auto it = rephrase.find(phrase);
    if (it == rephrase.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }
  core::StatusOr<std::optional<Box>> Ground(const std::string& expression) override {
    calls.push_back("Ground");
    auto it = ground.find(expression);
    if (it == ground.end()) return std::optional<Box>();
    return std::optional<Box>(it->second);
  }
  core::StatusOr<bool> JudgeRegion(const std::string&, const Mask& kept,
                                   const Mask& region) override {
    calls.push_back("JudgeRegion");
    judged.push_back(region);
    return judge ? judge(kept, region) : true;
  }
  core::StatusOr<bool> Check(const std::string&, const Mask&) override {
    calls.push_back("Check");
    return true;
  }
  core::StatusOr<int> Compare(const std::string&, const Mask&, const Mask&) override {
    calls.push_back("Compare");
    return compare_answer;
  }
  int Count(const std::string& method) const {
    int n = 0;
    for (const std::string& c : calls) n += c == method ? 1 : 0;
    return n;
  }
};

// A stride-1 grid (one patch per pixel, so similarity maps need no interpolation) of 2-d unit
// features: `feature(x, y)` gives the direction of pixel (x, y) as an angle in radians.
inline PatchGrid PixelGrid(int width, int height, const std::function<double(int, int)>& angle) {
  PatchGrid g;
  g.grid_w = width;
  g.grid_h = height;
  g.dim = 2;
  g.stride = 1;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const double a = angle(x, y);
      g.features.push_back(static_cast<float>(std::cos(a)));
      g.features.push_back(static_cast<float>(std::sin(a)));
    }
  }
  return g;
}

class FixedFeatures : public FeatureExtractor {
 public:
  explicit FixedFeatures(PatchGrid grid) : grid_(std::move(grid)) {}
  std::string name() const override { return "fixed"; }
  core::StatusOr<PatchGrid> Extract(const Image&) const override { return grid_; }

 private:
  PatchGrid grid_;
};

// A scripted 40 x 20 scene: cups A [2,8)x[2,8), B [12,18)x[2,8), C [22,28)x[2,8) and a plate
// [12,18)x[10,16); the query "the cup above the plate" means B.
//   Parse: target "cup", whole object, reference "plate".
//   Describe: "the cup above the plate", which SegmentText does not understand (nothing back);
//   Rephrase turns it into "cup over plate" -> B 0.8.
//   Ground: the description -> B's box; short "middle cup" -> [11,1,19,9]; long "the cup right
//   above the round plate" -> the whole image.
//   SegmentBox: B 0.95 and A 0.5 for any box (A never overlaps a box enough; for the long box
//   neither does B, so the long box gives no candidate).
//   NounPhrases: "middle cup" -> B 0.9; "cup" -> A 0.9, B 0.85, C 0.9; "cup near plate" ->
//   nothing, and no rephrasing.
//   SegmentPoints: B 0.9.
struct CupScene {
  static constexpr int kW = 40, kH = 20;
  Mask a = Rect(kW, kH, 2, 2, 8, 8), b = Rect(kW, kH, 12, 2, 18, 8), c = Rect(kW, kH, 22, 2, 28, 8),
       plate = Rect(kW, kH, 12, 10, 18, 16);
  ScriptSegmenter seg;
  ScriptReasoner rsn;

  CupScene() {
    rsn.parsed.target_name = "cup";
    rsn.parsed.refer_objects = {"plate"};
    rsn.parsed.relation = "above";
    rsn.description = "the cup above the plate";
    rsn.variants = {"middle cup", "the cup right above the round plate"};
    rsn.phrases = {"middle cup", "cup", "cup near plate"};
    rsn.rephrase = {{"the cup above the plate", "cup over plate"}};
    rsn.ground = {{"the cup above the plate", Box{12, 2, 18, 8}},
                  {"middle cup", Box{11, 1, 19, 9}},
                  {"the cup right above the round plate", Box{0, 0, 40, 20}}};
    seg.text = {{"plate", {Inst(plate, 0.9)}},
                {"cup over plate", {Inst(b, 0.8)}},
                {"middle cup", {Inst(b, 0.9)}},
                {"cup", {Inst(a, 0.9), Inst(b, 0.85), Inst(c, 0.9)}}};
    seg.box = [this](const Box&) { return std::vector<Instance>{Inst(b, 0.95), Inst(a, 0.5)}; };
    seg.points = [this](const std::vector<Point>&) { return std::vector<Instance>{Inst(b, 0.9)}; };
  }
  Image image() const { return Image(kW, kH); }
  // Features: 1 on the cups, another direction on the plate, a third on the background.
  PatchGrid grid() const {
    return PixelGrid(kW, kH, [this](int x, int y) {
      if (a.get(x, y) || b.get(x, y) || c.get(x, y)) return 0.0;
      return plate.get(x, y) ? 1.0 : 2.5;
    });
  }
};

}  // namespace tessera::tarot::fakes
