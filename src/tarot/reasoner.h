// Reasoner: the multimodal LLM Tarot-SAM3 asks (Qwen2.5-VL's role in the authors' code). Every
// method sees the image set by SetImage and answers one question:
//   Parse(query)                 the target contract: target name (<= 5 words), scope, up to two
//                                reference objects, attributes, relation and ordinal as parsed.
//   Describe(query, parsed, context)  a full description of the target (one referring
//                                expression), seeing the "reference only" overlays in `context`.
//   Variants(description)        a short and a long rephrasing.
//   NounPhrases(description, n)  up to n short noun phrases (2-8 words) naming the same target.
//   Rephrase(phrase, tried)      a new 2-5 word phrase not in `tried` (evaluation-aware
//                                rephrasing when the segmenter returned nothing); nullopt when
//                                it has none.
//   Ground(expression)           a box around what the expression names, or nullopt.
//   JudgeRegion(query, kept, region)  does `region` belong to the target whose current mask is
//                                `kept`? (MSR's under/over-segmentation question)
//   Check(query, mask)           is this mask the target?
//   Compare(query, a, b)         which of two masks is the target (0: a, 1: b)?
// A reasoner that cannot parse its own answer returns ParsedQuery{ok = false}; the algorithm
// then falls back to the query text, as the authors' code does, and says so in the trace.
// Backends (registry "tarot.reasoner"): `oracle` (reads the scene program), `noisy` (oracle with
// per-skill error rates), `rule` (a grammar parser plus pixel judges; no ground truth).
// Thread-safety: one query at a time per instance.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "tarot/types.h"

namespace tessera::tarot {

enum class Scope { kWholeObject, kPart, kRegion, kGroup, kCollection };
const char* ScopeName(Scope s);

struct ParsedQuery {
  bool ok = true;           // false: the answer did not parse (fall back to the query)
  std::string target_name;  // <= 5 words, e.g. "red cup"
  Scope scope = Scope::kWholeObject;
  std::vector<std::string> refer_objects;  // <= 2
  std::vector<std::string> attributes;     // e.g. {"red", "large"}
  std::string relation;                    // e.g. "left of" ("" if none)
  int ordinal = 0;                         // 1-based rank along `ordinal_axis`, 0 if none
  std::string ordinal_axis;                // "left-to-right", "top-to-bottom", ...
};

// What ERI shows the reasoner with Describe (the authors' "reference only" overlays): the
// segmenter's masks of each reference object (score >= 0.6, after NMS at mask IoU 0.6) and, for
// an ordinal query, up to 3 masks of the target name sorted along `parsed.ordinal_axis` around
// the asked rank, each labelled with its 1-based rank along the axis.
struct DescribeContext {
  struct Reference {
    std::string name;
    std::vector<Mask> masks;
  };
  std::vector<Reference> references;
  std::vector<Mask> ordinal_masks;
  std::vector<int> ordinal_ranks;  // one per ordinal mask
};

struct Variants {
  std::string short_text, long_text;
};

class Reasoner {
 public:
  virtual ~Reasoner() = default;
  virtual std::string name() const = 0;
  virtual core::Status SetImage(const Image& image) = 0;
  virtual core::StatusOr<ParsedQuery> Parse(const std::string& query) = 0;
  virtual core::StatusOr<std::string> Describe(const std::string& query, const ParsedQuery& parsed,
                                               const DescribeContext& context) = 0;
  virtual core::StatusOr<Variants> MakeVariants(const std::string& description) = 0;
  virtual core::StatusOr<std::vector<std::string>> NounPhrases(const std::string& description,
                                                               int n) = 0;
  virtual core::StatusOr<std::optional<std::string>> Rephrase(
      const std::string& phrase, const std::vector<std::string>& tried) = 0;
  virtual core::StatusOr<std::optional<Box>> Ground(const std::string& expression) = 0;
  virtual core::StatusOr<bool> JudgeRegion(const std::string& query, const Mask& kept,
                                           const Mask& region) = 0;
  virtual core::StatusOr<bool> Check(const std::string& query, const Mask& mask) = 0;
  virtual core::StatusOr<int> Compare(const std::string& query, const Mask& a, const Mask& b) = 0;
};

}  // namespace tessera::tarot
