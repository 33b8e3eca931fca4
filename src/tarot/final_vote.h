// The final cross-candidate vote of ERI -- OUR CHOICE: the authors' release stops before it
// ("removed from the release"), so this is the rule tessera uses, not the paper's:
//   1. every non-empty candidate (the kept text candidates and the chosen box mask) is weighed
//      with the box-vote weight (box_vote.h), each candidate its own prompt:
//        w_k = c_k^2 (max_m I[k,m])^2 (0.1 + support_k) (0.1 + I[k,anchor]),
//      I against the three box masks, support_k = mean over the other candidates of
//      MaskIou(k, j) (1 for a single candidate), anchor = the box the box vote chose (the
//      box factors are 1 when there is no box, e.g. the text-only ablation);
//   2. the two heaviest (ties: the lower index) go to the A/B comparator below; one candidate
//      wins alone, none gives chosen = -1 (an empty ERI mask).
// The A/B comparator is the helper of the authors' intermediate code: an empty mask loses, equal
// masks give A, MaskIou > 0.8 gives the smaller mask (A on equal areas) without asking, else
// Reasoner::Compare decides.
// Stateless; thread-safe as the reasoner it is given.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "tarot/box_vote.h"
#include "tarot/traced.h"
#include "tarot/types.h"

namespace tessera::tarot {

struct FinalVoteOptions {
  double floor = 0.1;     // as in the box vote
  double same_iou = 0.8;  // comparator: above this IoU the smaller mask wins unasked
};

// 0 (a) or 1 (b); `how` (may be null) gets "a empty", "b empty", "equal", "iou>0.8 smaller"
// or "reasoner".
core::StatusOr<int> CompareMasks(const std::string& query, const Mask& a, const Mask& b,
                                 TracedReasoner& reasoner, double same_iou, std::string* how);

struct FinalVoteResult {
  int chosen = -1;              // index into the candidates
  int first = -1, second = -1;  // the two heaviest
  std::string how;              // "single", "none", or the comparator's `how`
  VoterWeights weights;         // per candidate (0 for an empty one)
};

// `anchor`: the box method chosen by the box vote, -1 if none.
core::StatusOr<FinalVoteResult> FinalVote(const std::vector<Candidate>& candidates,
                                          const BoxEvidenceSet& boxes, int anchor,
                                          const std::string& query, TracedReasoner& reasoner,
                                          const FinalVoteOptions& options = {});

}  // namespace tessera::tarot
