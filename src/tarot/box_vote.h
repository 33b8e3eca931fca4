// The box vote of ERI, refer mode (the authors' training_free_bbox_selector, spec step 5): which
// of the three grounded boxes (full, short, long description) to trust, by how well the text
// candidates of the augmentation phrases agree with each box's mask.
//
// Inputs: per box method m (0 full, 1 short, 2 long) the box candidate's mask and score, or
// invalid when that box gave no candidate; text voters: every raw instance (mask, score c_i)
// of a text prompt, with the prompt's index. Only voters with prompt_index >= 2 (the noun
// phrases; 1 is the full description) and a non-empty mask vote, deduplicated on
// (prompt_index, equal mask). Then, with I[i,m] = MaskIou(text_i, box_m) (0 for an invalid m),
// anchor = the first valid method (full unless it is missing):
//   support_i = mean over the other prompts g of max_{j in g} MaskIou(text_i, text_j)
//               (1 when only one prompt voted),
//   w_i       = c_i^2 (max_m I[i,m])^2 (0.1 + support_i) (0.1 + I[i,anchor]) / count(prompt_i),
//   vote_m    = sum_i w_i I[i,m] / max(1e-12, sum_i w_i),
//   eligible_m = valid_m and vote_m >= vote_anchor, and, when score_anchor >= 0.85, also
//               MaskIou(box_m, box_anchor) >= 0.25; the anchor is always eligible;
//   chosen    = argmax over eligible m of vote_m + 0.5 score_m (ties: the lower m).
// No voters: the anchor, votes all 0. No valid box: chosen = -1.
// Sums run in index order, so the result is bitwise reproducible.
// Stateless free functions; thread-safe.
#pragma once

#include <array>
#include <vector>

#include "tarot/types.h"

namespace tessera::tarot {

inline constexpr int kBoxMethods = 3;
// "full", "short", "long".
const char* BoxMethodName(int method);

// One box method's candidate: its mask and score, when the box gave one.
struct BoxEvidence {
  bool valid = false;
  Mask mask;
  double score = 0;
};
using BoxEvidenceSet = std::array<BoxEvidence, kBoxMethods>;

struct TextVoter {
  Mask mask;
  double score = 0;
  int prompt_index = 0;
};

// The constants of the authors' selector.
struct BoxVoteOptions {
  int min_prompt_index = 2;        // voters: augmentation phrases only
  double floor = 0.1;              // the 0.1 in (0.1 + support) and (0.1 + I[i,anchor])
  double score_weight = 0.5;       // vote_m + 0.5 score_m
  double confident_anchor = 0.85;  // anchor score from which ...
  double min_anchor_iou = 0.25;    // ... other boxes must overlap the anchor's mask this much
};

// The weights of a set of voters against the box masks (shared with the final vote).
// `anchor` < 0 (no valid box): the box factors are taken as 1, i.e. w_i = c_i^2 (0.1 +
// support_i)(1.1) / count.
struct VoterWeights {
  std::vector<std::array<double, kBoxMethods>> iou;  // I[i,m]
  std::vector<double> support, weight;
};
VoterWeights ComputeVoterWeights(const std::vector<const Mask*>& masks,
                                 const std::vector<double>& scores, const std::vector<int>& groups,
                                 const BoxEvidenceSet& boxes, int anchor, double floor);

struct BoxVoteResult {
  int chosen = -1;  // box method, -1 when no box is valid
  int anchor = -1;
  std::array<double, kBoxMethods> votes{};
  std::array<double, kBoxMethods> totals{};  // vote_m + 0.5 score_m (eligible m only)
  std::array<bool, kBoxMethods> eligible{};
  std::vector<int> voters;  // indices into the input voters that voted (after the filters)
  VoterWeights weights;     // per voter in `voters`
};

BoxVoteResult BoxVote(const BoxEvidenceSet& boxes, const std::vector<TextVoter>& voters,
                      const BoxVoteOptions& options = {});

}  // namespace tessera::tarot
