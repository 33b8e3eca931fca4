// The two MSR ablations of the spec's system list, as stand-ins MSR runs over unchanged:
//   FlatGrid           a patch grid whose patches all carry the same unit feature, so every
//                      similarity map is 1 everywhere: MSR without DINO's evidence (its point
//                      peaks fall to the first pixels of the box, no pixel is dissimilar enough
//                      for a negative point, and every region grows to the whole image).
//   YesJudgeReasoner   a reasoner that forwards every call to `inner` except JudgeRegion, which
//                      it answers "yes, part of the target" without asking: MSR without the
//                      MLLM's judgement (every under-segmentation region is added, no
//                      over-segmentation region is ever removed). The answer still appears in
//                      the trace as a reasoner call, since MSR asks it.
// Thread-safety: FlatGrid is pure; YesJudgeReasoner is as safe as `inner`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tarot/features.h"
#include "tarot/reasoner.h"

namespace tessera::tarot {

// `grid`'s shape with every patch feature equal to (1, 0, ..., 0) (dim >= 1; a grid of dim 0 is
// returned as is).
PatchGrid FlatGrid(const PatchGrid& grid);

class YesJudgeReasoner : public Reasoner {
 public:
  explicit YesJudgeReasoner(Reasoner& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name() + "+yes-judge"; }
  core::Status SetImage(const Image& image) override { return inner_.SetImage(image); }
  core::StatusOr<ParsedQuery> Parse(const std::string& query) override {
    return inner_.Parse(query);
  }
  core::StatusOr<std::string> Describe(const std::string& query, const ParsedQuery& parsed,
                                       const DescribeContext& context) override {
    return inner_.Describe(query, parsed, context);
  }
  core::StatusOr<Variants> MakeVariants(const std::string& description) override {
    return inner_.MakeVariants(description);
  }
  core::StatusOr<std::vector<std::string>> NounPhrases(const std::string& description,
                                                       int n) override {
    return inner_.NounPhrases(description, n);
  }
  core::StatusOr<std::optional<std::string>> Rephrase(
      const std::string& phrase, const std::vector<std::string>& tried) override {
    return inner_.Rephrase(phrase, tried);
  }
  core::StatusOr<std::optional<Box>> Ground(const std::string& expression) override {
    return inner_.Ground(expression);
  }
  core::StatusOr<bool> JudgeRegion(const std::string&, const Mask&, const Mask&) override {
    return true;
  }
  core::StatusOr<bool> Check(const std::string& query, const Mask& mask) override {
    return inner_.Check(query, mask);
  }
  core::StatusOr<int> Compare(const std::string& query, const Mask& a, const Mask& b) override {
    return inner_.Compare(query, a, b);
  }

 private:
  Reasoner& inner_;
};

}  // namespace tessera::tarot
