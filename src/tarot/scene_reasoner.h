// SceneReasoner: the reasoners that read the refscenes ground truth (registry names `oracle` and
// `noisy`). For every text it is asked about it forms a belief -- a program and the target it
// denotes -- and answers every question from that belief:
//   the text of one of the scene's expressions -> its stored program and target;
//   any other text -> the grammar parser (tarot/query_parser.h), evaluated on the scene (strict,
//   else the first match); a text that names nothing has no target.
// Texts the reasoner wrote itself (descriptions, variants, noun phrases) keep the belief they
// were written from, so its answers stay consistent across one query's calls.
//   Parse        the belief's program as a target contract (ToParsedQuery).
//   Describe     an explicit program that clearly denotes the believed target
//                (ExplicitProgramFor), rendered; the context is not needed.
//   MakeVariants short: colour and category (and part); long: every attribute plus the ordinal
//                or relation that makes it unique, plus the position hint.
//   NounPhrases  the shortest unique spec first, then NounPhrasesFor (tarot/phrasing.h).
//   Rephrase     RephraseNotTried.
//   Ground       the box of the believed target's mask.
//   JudgeRegion  at least half of the region lies in the target; Check: IoU >= 0.5; Compare:
//                the mask with the larger IoU (ties: a).
// `noisy` adds seeded errors, each drawn from a hash of (seed, text, skill), so a query's errors
// do not depend on earlier queries, and a higher rate only adds errors to a lower one's:
//   attribute (the text names a colour or size)  -> another object of the category;
//   relation (a relation)                        -> the flipped relation's answer, or another
//                                                   object of the category;
//   ordinal (an ordinal)                         -> the neighbouring rank;
//   knowledge (a fact of the fact table)         -> another part of the object, or an object of
//                                                   another category;
//   hallucination (any text)                     -> some other object;
//   box (Ground)                                 -> with probability box_swap, the box of the
//                                                   nearest other object of the target's
//                                                   category (else the nearest other object);
//                                                   otherwise the box moved and scaled by up to
//                                                   box_jitter of its size per side;
//   judge (JudgeRegion, Check, Compare)          -> the answer flipped.
// The first applicable skill whose draw falls under its rate corrupts the belief (in the order
// above). `rate` sets every skill's rate at once; a skill's own key overrides it.
// Errors: FailedPrecondition without a scene, before SetImage, or for an image that is not the
// scene's.
// Thread-safety: one query at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/registry.h"
#include "tarot/program.h"
#include "tarot/reasoner.h"
#include "tarot/scene.h"

namespace tessera::tarot {

struct ReasonerErrorRates {
  double attribute = 0, relation = 0, ordinal = 0, knowledge = 0, hallucination = 0;
  double box = 0, judge = 0;
  double box_jitter = 0.25;  // fraction of the box's width/height
  double box_swap = 0.5;     // share of box errors that box the nearest look-alike instead
  uint64_t seed = 0;
  bool any() const {
    return attribute > 0 || relation > 0 || ordinal > 0 || knowledge > 0 || hallucination > 0 ||
           box > 0 || judge > 0;
  }
};

// From registry options noisy.seed, noisy.rate (default 0.1), noisy.attribute, noisy.relation,
// noisy.ordinal, noisy.knowledge, noisy.hallucination, noisy.box, noisy.judge (each 0..1,
// default: noisy.rate), noisy.box_jitter (0..1, default 0.25), noisy.box_swap (0..1, default
// 0.5).
core::StatusOr<ReasonerErrorRates> ParseNoisyReasonerOptions(const core::RegistryOptions& options);

class SceneReasoner : public Reasoner {
 public:
  SceneReasoner(std::string name, std::shared_ptr<const Scene> scene, ReasonerErrorRates errors);
  std::string name() const override { return name_; }
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

  // What the reasoner believes `text` denotes (forming the belief if new).
  struct Belief {
    bool parsed = false;  // the text named something
    Program program;
    int facts = 0;
    Target target;             // empty: nothing in the scene
    std::string corrupted_by;  // the skill whose error made the belief ("" if none)
  };
  const Belief& BeliefOf(const std::string& text);

 private:
  core::Status Ready() const;
  Belief Form(const std::string& text) const;
  void Corrupt(const std::string& text, Belief& b) const;
  // Remembers that the reasoner wrote `text` meaning `b`'s target.
  void Wrote(const std::string& text, const Belief& b);
  bool Flip(const std::string& what, const std::string& query, const Mask& a) const;

  std::string name_;
  std::shared_ptr<const Scene> scene_;
  ReasonerErrorRates errors_;
  bool image_set_ = false;
  std::map<std::string, Belief> beliefs_;
};

}  // namespace tessera::tarot
