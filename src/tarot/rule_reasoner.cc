#include "tarot/rule_reasoner.h"

#include <algorithm>

#include "tarot/backends.h"
#include "tarot/fmnist_detect.h"
#include "tarot/phrasing.h"
#include "tarot/silhouettes.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

constexpr double kRuleRegionInside = 0.5;
constexpr double kRuleCheckIou = 0.5;
constexpr double kKeptColourShare = 0.1;
constexpr int kMinItemPixels = 30;

}  // namespace

ClassProbabilities RuleReasoner::ItemProbabilities(const Mask& mask) const {
  ClassProbabilities p{};
  auto classifier = SharedFmnistClassifier();
  if (!classifier.ok() || image_.empty()) return p;  // SetImage trained it already on fmnist
  return (*classifier)->Probabilities(RegionInput(image_, mask));
}

core::Status RuleReasoner::SetImage(const Image& image) {
  image_set_ = false;
  readings_.clear();
  if (image.empty()) return core::InvalidArgument("tarot.reasoner 'rule': empty image");
  width_ = image.width;
  height_ = image.height;
  labels_ = ColourLabels(image);
  if (set_ == kSetFmnist) {
    image_ = image;
    ASSIGN_OR_RETURN(std::vector<ItemRegion> items, FindItems(image, labels_, kMinItemPixels));
    detections_.clear();
    for (ItemRegion& r : items) {
      Detection d;
      d.category = Categories()[FashionCategory(r.label)].name;
      d.colour = Palette()[r.colour].name;
      d.size = SizeNames()[r.size];
      d.fit = r.probability;
      d.centroid = CentroidOf(r.mask);
      d.mask = std::move(r.mask);
      detections_.push_back(std::move(d));
    }
    std::stable_sort(detections_.begin(), detections_.end(),
                     [](const Detection& a, const Detection& b) { return a.fit > b.fit; });
  } else {
    detections_ = DetectObjects(image);
  }
  image_set_ = true;
  return core::Status::Ok();
}

core::Status RuleReasoner::Ready() const {
  if (image_set_) return core::Status::Ok();
  return core::FailedPrecondition("tarot.reasoner 'rule': SetImage first");
}

const RuleReasoner::Reading& RuleReasoner::Read(const std::string& text) {
  auto it = readings_.find(text);
  if (it != readings_.end()) return it->second;
  Reading r;
  r.parse = ParseQuery(text);
  r.target = Mask(width_, height_);
  if (r.parse.ok) {
    std::vector<Entity> ents;
    for (const Detection& d : detections_) ents.push_back(d.AsEntity());
    auto ids = Evaluate(ents, r.parse.program, /*strict=*/false);
    if (ids.ok()) {
      r.detections = *ids;
      for (int i : r.detections)
        r.target = r.target | detections_[i].PartMask(r.parse.program.part);
    }
  }
  return readings_.emplace(text, std::move(r)).first->second;
}

double RuleReasoner::SpecScore(const Program& p, const Mask& mask) const {
  if (mask.none()) return 0;
  const ColourStats st = StatsOf(labels_, mask);
  const int colour = ColourIndex(p.target.colour);
  double score = colour >= 0 ? st.fraction[colour] : 1.0 - st.background;
  const int ci = CategoryIndex(p.target.category);
  if (ci >= 0 && !HasSilhouette(ci))
    return score + ItemProbabilities(mask)[FashionLabel(p.target.category)];
  if (ci >= 0 && p.part.empty()) {
    double fit = 0;
    for (bool mirrored : {false, true})
      fit =
          std::max(fit, MaskIou(SilhouetteInBox(ci, mirrored, BoxOf(mask), width_, height_), mask));
    score += fit;
  }
  return score;
}

core::StatusOr<ParsedQuery> RuleReasoner::Parse(const std::string& query) {
  RETURN_IF_ERROR(Ready());
  const Reading& r = Read(query);
  if (!r.parse.ok) {
    ParsedQuery q;
    q.ok = false;
    return q;
  }
  return ToParsedQuery(r.parse.program);
}

core::StatusOr<std::string> RuleReasoner::Describe(const std::string& query, const ParsedQuery&,
                                                   const DescribeContext&) {
  RETURN_IF_ERROR(Ready());
  const Reading& r = Read(query);
  return r.parse.ok ? RenderProgram(r.parse.program) : query;
}

core::StatusOr<Variants> RuleReasoner::MakeVariants(const std::string& description) {
  RETURN_IF_ERROR(Ready());
  const Reading& r = Read(description);
  if (!r.parse.ok) return Variants{description, description};
  Program full = r.parse.program;
  std::string hint;
  if (!r.detections.empty()) {
    const Detection& d = detections_[r.detections[0]];
    if (!full.plural && full.target.ordinal == 0) full = FullProgram(full, d.colour, d.size);
    const Point c = CentroidOf(r.target);
    hint = " " + PositionHint(c.x / width_, c.y / height_);
  }
  return Variants{RenderProgram(ShortProgram(r.parse.program)), RenderProgram(full) + hint};
}

core::StatusOr<std::vector<std::string>> RuleReasoner::NounPhrases(const std::string& description,
                                                                   int n) {
  RETURN_IF_ERROR(Ready());
  const Reading& r = Read(description);
  if (!r.parse.ok) return std::vector<std::string>{};
  Program p = r.parse.program;
  if (p.target.colour.empty() && r.detections.size() == 1)
    p.target.colour = detections_[r.detections[0]].colour;
  return NounPhrasesFor(p, n);
}

core::StatusOr<std::optional<std::string>> RuleReasoner::Rephrase(
    const std::string& phrase, const std::vector<std::string>& tried) {
  RETURN_IF_ERROR(Ready());
  return RephraseNotTried(phrase, tried);
}

core::StatusOr<std::optional<Box>> RuleReasoner::Ground(const std::string& expression) {
  RETURN_IF_ERROR(Ready());
  const Reading& r = Read(expression);
  if (r.target.none()) return std::optional<Box>{};
  return std::optional<Box>(BoxOf(r.target));
}

core::StatusOr<bool> RuleReasoner::JudgeRegion(const std::string& query, const Mask& kept,
                                               const Mask& region) {
  RETURN_IF_ERROR(Ready());
  const int64_t n = region.count();
  if (n == 0) return false;
  const Reading& r = Read(query);
  if (!r.target.none()) return region.IntersectionCount(r.target) >= kRuleRegionInside * n;
  const ColourStats rs = StatsOf(labels_, region);
  if (rs.background >= 0.5 || rs.dominant < 0) return false;
  return StatsOf(labels_, kept).fraction[rs.dominant] >= kKeptColourShare;
}

core::StatusOr<bool> RuleReasoner::Check(const std::string& query, const Mask& mask) {
  RETURN_IF_ERROR(Ready());
  const Reading& r = Read(query);
  if (!r.target.none()) return MaskIou(mask, r.target) >= kRuleCheckIou;
  if (!r.parse.ok || mask.none()) return false;
  const Program& p = r.parse.program;
  const ColourStats st = StatsOf(labels_, mask);
  if (!p.target.colour.empty() &&
      (st.dominant < 0 || Palette()[st.dominant].name != p.target.colour))
    return false;
  const int ci = CategoryIndex(p.target.category);
  if (ci < 0 || !p.part.empty()) return st.background < 0.5;
  if (!HasSilhouette(ci)) {
    const ClassProbabilities prob = ItemProbabilities(mask);
    return std::max_element(prob.begin(), prob.end()) - prob.begin() ==
           FashionLabel(p.target.category);
  }
  return MatchSilhouette(mask, false).category == ci;
}

core::StatusOr<int> RuleReasoner::Compare(const std::string& query, const Mask& a, const Mask& b) {
  RETURN_IF_ERROR(Ready());
  const Reading& r = Read(query);
  if (!r.target.none()) return MaskIou(a, r.target) >= MaskIou(b, r.target) ? 0 : 1;
  if (!r.parse.ok) return 0;
  return SpecScore(r.parse.program, a) >= SpecScore(r.parse.program, b) ? 0 : 1;
}

ReasonerRegistry::Entry RuleReasonerEntry() {
  auto create = [](const BackendContext& c) -> core::StatusOr<std::unique_ptr<Reasoner>> {
    return std::unique_ptr<Reasoner>(new RuleReasoner(c.set));
  };
  return {{.reads_scene = false, .create = create},
          "rule",
          "a grammar parser plus pixel judges; no ground truth",
          [] { return std::unique_ptr<Reasoner>(new RuleReasoner()); },
          {}};
}

}  // namespace tessera::tarot
