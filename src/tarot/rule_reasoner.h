// RuleReasoner (registry name `rule`): a reasoner with no access to ground truth. It reads
// queries with the refscenes grammar parser (every tier, the fact table included) and looks at
// the image only through the pixel judges of tarot/pixel_regions.h: SetImage detects candidate
// objects by colour segmentation and silhouette fit, and a query's target is the program
// evaluated over those detections (best fit first when ambiguous).
//   Parse / Describe  the parsed program (facts resolved), as a contract or rendered explicitly.
//   MakeVariants      short: colour and category; long: with the detected colour and size and a
//                     position hint from the detection.
//   NounPhrases       NounPhrasesFor(program), with the detected colour when the query names
//                     none.
//   Rephrase          RephraseNotTried.
//   Ground            the box of the detected target, nullopt when nothing matches.
//   JudgeRegion       with a detected target: half of the region inside it; else: the region is
//                     mostly foreground and its dominant colour covers >= 10% of `kept`.
//   Check / Compare   with a detected target: IoU >= 0.5 / the larger IoU; else colour and
//                     silhouette statistics of the masks against the parsed spec.
// On the fmnist set (the backend context's `set`) the detections are the fashion items of
// tarot/fmnist_detect.h instead (colour regions of at least 30 pixels, each classified by the
// item classifier; fit = the class probability), and the silhouette statistics above become the
// classifier's probability of the named class (Compare) or its top class (Check).
// Errors: FailedPrecondition before SetImage; on fmnist, SetImage passes on the classifier's
// error (the dataset missing). A query that does not parse gives ParsedQuery{ok = false} and
// falls back to the query text elsewhere.
// Thread-safety: one query at a time.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tarot/fmnist_classifier.h"
#include "tarot/pixel_regions.h"
#include "tarot/query_parser.h"
#include "tarot/reasoner.h"

namespace tessera::tarot {

class RuleReasoner : public Reasoner {
 public:
  explicit RuleReasoner(std::string set = "refscenes") : set_(std::move(set)) {}
  std::string name() const override { return "rule"; }
  core::Status SetImage(const Image& image) override;
  core::StatusOr<ParsedQuery> Parse(const std::string& query) override;
  core::StatusOr<std::string> Describe(const std::string& query, const ParsedQuery& parsed,
                                       const DescribeContext& context) override;
  core::StatusOr<Variants> MakeVariants(const std::string& description) override;
  core::StatusOr<std::vector<std::string>> NounPhrases(const std::string& description,
                                                       int n) override;
  core::StatusOr<std::optional<std::string>> Rephrase(
      const std::string& phrase, const std::vector<std::string>& tried) override;
  core::StatusOr<std::optional<Box>> Ground(const std::string& expression) override;
  core::StatusOr<bool> JudgeRegion(const std::string& query, const Mask& kept,
                                   const Mask& region) override;
  core::StatusOr<bool> Check(const std::string& query, const Mask& mask) override;
  core::StatusOr<int> Compare(const std::string& query, const Mask& a, const Mask& b) override;

  // What the reasoner makes of a text: its parse and the detections it denotes.
  struct Reading {
    ParseResult parse;
    std::vector<int> detections;  // indices into detections()
    Mask target;                  // their (part) masks; empty when none
  };
  const Reading& Read(const std::string& text);
  const std::vector<Detection>& detections() const { return detections_; }

 private:
  core::Status Ready() const;
  // How well `mask` fits the parsed spec by pixels alone (colour fraction + silhouette IoU, or
  // on fmnist the classifier's probability of the named class).
  double SpecScore(const Program& p, const Mask& mask) const;
  // fmnist: the item classifier's probabilities for the region `mask` (all 0 before SetImage).
  ClassProbabilities ItemProbabilities(const Mask& mask) const;

  std::string set_;
  bool image_set_ = false;
  int width_ = 0, height_ = 0;
  Image image_;  // fmnist: the classifier reads regions of it
  std::vector<int> labels_;
  std::vector<Detection> detections_;
  std::map<std::string, Reading> readings_;
};

}  // namespace tessera::tarot
