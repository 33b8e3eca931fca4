#include "tarot/final_vote.h"

#include <fmt/format.h>

namespace tessera::tarot {

core::StatusOr<int> CompareMasks(const std::string& query, const Mask& a, const Mask& b,
                                 TracedReasoner& reasoner, double same_iou, std::string* how) {
  std::string local;
  std::string& h = how != nullptr ? *how : local;
  if (a.none()) {
    h = "a empty";
    return 1;
  }
  if (b.none()) {
    h = "b empty";
    return 0;
  }
  if (a == b) {
    h = "equal";
    return 0;
  }
  if (MaskIou(a, b) > same_iou) {
    h = fmt::format("iou>{:g} smaller", same_iou);
    return b.count() < a.count() ? 1 : 0;
  }
  h = "reasoner";
  return reasoner.Compare(query, a, b);
}

core::StatusOr<FinalVoteResult> FinalVote(const std::vector<Candidate>& candidates,
                                          const BoxEvidenceSet& boxes, int anchor,
                                          const std::string& query, TracedReasoner& reasoner,
                                          const FinalVoteOptions& options) {
  FinalVoteResult r;
  std::vector<const Mask*> masks;
  std::vector<double> scores;
  std::vector<int> groups, index;
  for (size_t k = 0; k < candidates.size(); ++k) {
    if (candidates[k].mask.none()) continue;
    masks.push_back(&candidates[k].mask);
    scores.push_back(candidates[k].score);
    groups.push_back(static_cast<int>(k));
    index.push_back(static_cast<int>(k));
  }
  const VoterWeights w = ComputeVoterWeights(masks, scores, groups, boxes, anchor, options.floor);
  // Spread back to one entry per candidate (0 for empty ones).
  r.weights.iou.assign(candidates.size(), {});
  r.weights.support.assign(candidates.size(), 0.0);
  r.weights.weight.assign(candidates.size(), 0.0);
  for (size_t i = 0; i < index.size(); ++i) {
    r.weights.iou[index[i]] = w.iou[i];
    r.weights.support[index[i]] = w.support[i];
    r.weights.weight[index[i]] = w.weight[i];
  }
  for (int k : index) {
    const double wk = r.weights.weight[k];
    if (r.first < 0 || wk > r.weights.weight[r.first]) {
      r.second = r.first;
      r.first = k;
    } else if (r.second < 0 || wk > r.weights.weight[r.second]) {
      r.second = k;
    }
  }
  if (r.first < 0) {
    r.how = "none";
    return r;
  }
  if (r.second < 0) {
    r.how = "single";
    r.chosen = r.first;
    return r;
  }
  ASSIGN_OR_RETURN(const int pick,
                   CompareMasks(query, candidates[r.first].mask, candidates[r.second].mask,
                                reasoner, options.same_iou, &r.how));
  r.chosen = pick == 0 ? r.first : r.second;
  return r;
}

}  // namespace tessera::tarot
