// The Expression Reasoning Interpreter (ERI), refer mode, as the spec's "ERI, refer mode [C]"
// writes it: from a query to candidate masks and one ERI mask, over a segmenter (SAM3's role)
// and a reasoner (the MLLM's role).
//   1. Target contract: Reasoner::Parse. A reply that did not parse (ok = false) falls back to
//      the query text as target name and description, without references (trace: "eri
//      parse_fallback"). Up to 2 reference objects are segmented (score >= 0.6, then NMS at
//      mask IoU 0.6); for an ordinal, the target name's masks (same filters) are sorted along
//      the axis by centroid and the 3 around the rank go along, labelled with their ranks.
//      Reasoner::Describe writes the full description; repair rules (OURS, the authors' are not
//      published): whitespace collapsed and trimmed, an empty description becomes the target
//      name (or the query).
//   2. The full description is grounded to a box; when it gets one, Variants gives a short and
//      a long rephrasing, each grounded too (the authors skip both when the full box fails).
//   3. Box candidates: each box (clipped to the image) is a SegmentBox prompt; instances whose
//      mask's bbox has BoxIou >= 0.3 with the box are kept, the best by (bbox IoU, score),
//      ties to the earlier instance.
//   4. Text candidates: prompt 1 = the full description, prompts 2..4 = Reasoner::NounPhrases(
//      description, 3). Each prompt gets up to 3 SegmentText tries: when nothing comes back,
//      Reasoner::Rephrase(phrase, every phrase tried so far) gives the next one (none: stop).
//      Per prompt: the best-score instance, or the union (score = max) for group/collection
//      scope; the raw instances are kept as box-vote voters.
//   5. The box vote (box_vote.h) picks full, short or long.
//   6. Text candidates whose bbox has BoxIou < 0.3 with the chosen box mask's bbox are dropped;
//      the chosen box mask is appended (prompt index 0). The final vote (final_vote.h, OUR
//      CHOICE, removed from the authors' release) picks the ERI mask.
// Ablations (EriOptions): no text candidates (text-only off), no boxes (box-only off), no
// rephrasing (1 try), no vote (the box with the best score, then the best-score candidate).
// Errors: a backend's error Status is returned as is; an empty result is not an error (an
// empty ERI mask).
// Thread-safety: one query at a time over the given backends.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "tarot/box_vote.h"
#include "tarot/call_trace.h"
#include "tarot/final_vote.h"
#include "tarot/reasoner.h"
#include "tarot/traced.h"
#include "tarot/types.h"

namespace tessera::tarot {

struct EriOptions {
  // Defaults of the authors' code ([C]).
  double reference_min_score = 0.6;  // reference (and ordinal) masks kept from this score
  double reference_nms_iou = 0.6;    // ... and suppressed above this mask IoU with a kept one
  int max_reference_objects = 2;
  int ordinal_window = 3;      // target-name masks shown around the asked rank
  int noun_phrases = 3;        // text prompts besides the full description
  int tries_per_phrase = 3;    // SegmentText tries per prompt (evaluation-aware rephrasing)
  double box_keep_iou = 0.3;   // step 3: mask bbox vs box
  double text_keep_iou = 0.3;  // step 6: text candidate bbox vs chosen box mask bbox
  BoxVoteOptions box_vote;
  // Ours.
  FinalVoteOptions final_vote;
  // Ablation switches (all on: the full ERI).
  bool use_text = true;   // text candidates (off: box-only)
  bool use_boxes = true;  // grounded boxes and box candidates (off: text-only)
  bool rephrase = true;   // off: one SegmentText try per prompt
  bool vote = true;       // off: best-score box, then best-score candidate
};

// InvalidArgument naming the field for an out-of-range option (e.g. "eri.tries_per_phrase: got
// 0, must be >= 1").
core::Status ValidateEriOptions(const EriOptions& options);

struct EriResult {
  ParsedQuery parsed;
  bool parse_fallback = false;
  std::string description;  // after the repair rules
  Variants variants;
  std::array<std::optional<Box>, kBoxMethods> boxes;  // grounded (before clipping)
  BoxEvidenceSet box_evidence;                        // step 3, per method
  std::vector<Candidate> text_candidates;             // step 4, one per prompt that got masks
  std::vector<TextVoter> text_instances;              // step 4, every raw instance
  BoxVoteResult box_vote;                             // step 5 (chosen = -1: no box)
  int chosen_box_method = -1;
  Box chosen_box;                     // bbox of the chosen box mask (empty if none)
  std::vector<Candidate> candidates;  // step 6: kept text candidates, then the box mask
  FinalVoteResult final_vote;
  int chosen = -1;  // index into candidates (-1: no candidate)
  Mask mask;        // the ERI mask (empty when no candidate)
};

// `width` x `height`: the image set on both backends.
core::StatusOr<EriResult> RunEri(const std::string& query, int width, int height,
                                 TracedSegmenter& segmenter, TracedReasoner& reasoner,
                                 const EriOptions& options, CallTrace* trace);

// Step 1's reference filter: instances with score >= min_score, greedily by score (ties: the
// earlier), dropping any whose mask IoU with a kept one exceeds nms_iou.
std::vector<Instance> FilterReferences(const std::vector<Instance>& instances, double min_score,
                                       double nms_iou);

}  // namespace tessera::tarot
