#include "tarot/box_vote.h"

#include <algorithm>
#include <set>

#include "core/check.h"

namespace tessera::tarot {

const char* BoxMethodName(int method) {
  switch (method) {
    case 0:
      return "full";
    case 1:
      return "short";
    case 2:
      return "long";
  }
  return "?";
}

VoterWeights ComputeVoterWeights(const std::vector<const Mask*>& masks,
                                 const std::vector<double>& scores, const std::vector<int>& groups,
                                 const BoxEvidenceSet& boxes, int anchor, double floor) {
  const size_t n = masks.size();
  CHECK_EQ(scores.size(), n);
  CHECK_EQ(groups.size(), n);
  VoterWeights out;
  out.iou.assign(n, {});
  out.support.assign(n, 0.0);
  out.weight.assign(n, 0.0);
  const std::set<int> names(groups.begin(), groups.end());
  for (size_t i = 0; i < n; ++i) {
    for (int m = 0; m < kBoxMethods; ++m) {
      out.iou[i][m] = boxes[m].valid ? MaskIou(*masks[i], boxes[m].mask) : 0.0;
    }
    int count = 0;
    for (size_t j = 0; j < n; ++j) count += groups[j] == groups[i] ? 1 : 0;
    if (names.size() > 1) {
      double sum = 0;
      for (int g : names) {
        if (g == groups[i]) continue;
        double best = 0;
        for (size_t j = 0; j < n; ++j) {
          if (groups[j] == g) best = std::max(best, MaskIou(*masks[i], *masks[j]));
        }
        sum += best;
      }
      out.support[i] = sum / static_cast<double>(names.size() - 1);
    } else {
      out.support[i] = 1.0;
    }
    double max_iou = 1.0, anchor_iou = 1.0;
    if (anchor >= 0) {
      max_iou = *std::max_element(out.iou[i].begin(), out.iou[i].end());
      anchor_iou = out.iou[i][anchor];
    }
    out.weight[i] = scores[i] * scores[i] * max_iou * max_iou * (floor + out.support[i]) *
                    (floor + anchor_iou) / static_cast<double>(count);
  }
  return out;
}

BoxVoteResult BoxVote(const BoxEvidenceSet& boxes, const std::vector<TextVoter>& voters,
                      const BoxVoteOptions& options) {
  BoxVoteResult r;
  for (int m = 0; m < kBoxMethods && r.anchor < 0; ++m) {
    if (boxes[m].valid) r.anchor = m;
  }
  if (r.anchor < 0) return r;

  // Voters: augmentation prompts, non-empty masks, deduplicated on (prompt, mask).
  for (size_t i = 0; i < voters.size(); ++i) {
    const TextVoter& v = voters[i];
    if (v.prompt_index < options.min_prompt_index || v.mask.none()) continue;
    const bool seen = std::any_of(r.voters.begin(), r.voters.end(), [&](int k) {
      return voters[k].prompt_index == v.prompt_index && voters[k].mask == v.mask;
    });
    if (!seen) r.voters.push_back(static_cast<int>(i));
  }
  if (r.voters.empty()) {
    r.chosen = r.anchor;
    r.eligible[r.anchor] = true;
    r.totals[r.anchor] = options.score_weight * boxes[r.anchor].score;
    return r;
  }

  std::vector<const Mask*> masks;
  std::vector<double> scores;
  std::vector<int> groups;
  for (int k : r.voters) {
    masks.push_back(&voters[k].mask);
    scores.push_back(voters[k].score);
    groups.push_back(voters[k].prompt_index);
  }
  r.weights = ComputeVoterWeights(masks, scores, groups, boxes, r.anchor, options.floor);
  double total_weight = 0;
  for (double w : r.weights.weight) total_weight += w;
  for (int m = 0; m < kBoxMethods; ++m) {
    double sum = 0;
    for (size_t i = 0; i < masks.size(); ++i) sum += r.weights.weight[i] * r.weights.iou[i][m];
    r.votes[m] = sum / std::max(1e-12, total_weight);
  }

  const bool confident = boxes[r.anchor].score >= options.confident_anchor;
  for (int m = 0; m < kBoxMethods; ++m) {
    bool ok = boxes[m].valid && r.votes[m] >= r.votes[r.anchor];
    if (confident && ok)
      ok = MaskIou(boxes[m].mask, boxes[r.anchor].mask) >= options.min_anchor_iou;
    r.eligible[m] = ok || m == r.anchor;
  }
  for (int m = 0; m < kBoxMethods; ++m) {
    if (!r.eligible[m]) continue;
    r.totals[m] = r.votes[m] + options.score_weight * boxes[m].score;
    if (r.chosen < 0 || r.totals[m] > r.totals[r.chosen]) r.chosen = m;
  }
  return r;
}

}  // namespace tessera::tarot
