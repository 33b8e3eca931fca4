#include "tarot/eri.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <sstream>
#include <utility>

namespace tessera::tarot {

core::Status ValidateEriOptions(const EriOptions& o) {
  auto fraction = [](const char* field, double v) -> core::Status {
    if (!(v >= 0.0 && v <= 1.0)) {
      return core::InvalidArgument(fmt::format("eri.{}: got {}, must be in [0, 1]", field, v));
    }
    return core::Status::Ok();
  };
  RETURN_IF_ERROR(fraction("reference_min_score", o.reference_min_score));
  RETURN_IF_ERROR(fraction("reference_nms_iou", o.reference_nms_iou));
  RETURN_IF_ERROR(fraction("box_keep_iou", o.box_keep_iou));
  RETURN_IF_ERROR(fraction("text_keep_iou", o.text_keep_iou));
  RETURN_IF_ERROR(fraction("final_vote.same_iou", o.final_vote.same_iou));
  if (o.tries_per_phrase < 1) {
    return core::InvalidArgument(
        fmt::format("eri.tries_per_phrase: got {}, must be >= 1 (e.g. 3)", o.tries_per_phrase));
  }
  if (o.noun_phrases < 0 || o.max_reference_objects < 0 || o.ordinal_window < 1) {
    return core::InvalidArgument(fmt::format(
        "eri: noun_phrases {}, max_reference_objects {} must be >= 0 and ordinal_window {} >= 1",
        o.noun_phrases, o.max_reference_objects, o.ordinal_window));
  }
  if (!o.use_text && !o.use_boxes) {
    return core::InvalidArgument("eri: use_text and use_boxes are both off, need at least one");
  }
  return core::Status::Ok();
}

std::vector<Instance> FilterReferences(const std::vector<Instance>& instances, double min_score,
                                       double nms_iou) {
  std::vector<size_t> order(instances.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return instances[a].score > instances[b].score; });
  std::vector<Instance> kept;
  for (size_t i : order) {
    const Instance& inst = instances[i];
    if (inst.score < min_score || inst.mask.none()) continue;
    const bool suppressed = std::any_of(kept.begin(), kept.end(), [&](const Instance& k) {
      return MaskIou(k.mask, inst.mask) > nms_iou;
    });
    if (!suppressed) kept.push_back(inst);
  }
  return kept;
}

namespace {

constexpr int kDescriptionPrompt = 1;  // prompt index of the full description
constexpr int kBoxPrompt = 0;          // prompt index of the box candidate

// Repair rules (ours): collapse whitespace runs, trim; empty -> fallback.
std::string RepairDescription(const std::string& text, const std::string& fallback) {
  std::istringstream in(text);
  std::string word, out;
  while (in >> word) {
    if (!out.empty()) out += ' ';
    out += word;
  }
  return out.empty() ? fallback : out;
}

// Up to `window` masks around the 1-based `rank` along `axis` ("left-to-right" by default,
// "right-to-left", "top-to-bottom", "bottom-to-top"), by centroid; ties keep instance order.
void OrdinalWindow(const std::vector<Instance>& instances, const std::string& axis, int rank,
                   int window, DescribeContext* context) {
  std::vector<std::pair<double, size_t>> keys;
  for (size_t i = 0; i < instances.size(); ++i) {
    const Point c = CentroidOf(instances[i].mask);
    double key = c.x;
    if (axis == "right-to-left") key = -c.x;
    if (axis == "top-to-bottom") key = c.y;
    if (axis == "bottom-to-top") key = -c.y;
    keys.emplace_back(key, i);
  }
  std::stable_sort(keys.begin(), keys.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  const int n = static_cast<int>(keys.size());
  if (n == 0) return;
  const int shown = std::min(window, n);
  const int centre = std::clamp(rank - 1, 0, n - 1);
  const int begin = std::clamp(centre - shown / 2, 0, n - shown);
  for (int k = begin; k < begin + shown; ++k) {
    context->ordinal_masks.push_back(instances[keys[k].second].mask);
    context->ordinal_ranks.push_back(k + 1);
  }
}

// Step 1: the target contract, the reference overlays and the full description.
core::Status Contract(const std::string& query, TracedSegmenter& seg, TracedReasoner& rsn,
                      const EriOptions& o, CallTrace* trace, EriResult* r) {
  ASSIGN_OR_RETURN(r->parsed, rsn.Parse(query));
  if (!r->parsed.ok) {
    r->parse_fallback = true;
    r->parsed = ParsedQuery{};
    r->parsed.ok = false;
    r->parsed.target_name = query;
    r->description = RepairDescription(query, query);
    TraceDecision(trace, "eri", "parse_fallback", query,
                  "reasoner reply did not parse; using the query text");
    return core::Status::Ok();
  }
  DescribeContext context;
  const int refs =
      std::min(static_cast<int>(r->parsed.refer_objects.size()), o.max_reference_objects);
  for (int i = 0; i < refs; ++i) {
    const std::string& name = r->parsed.refer_objects[i];
    ASSIGN_OR_RETURN(std::vector<Instance> found, seg.SegmentText(name));
    DescribeContext::Reference ref{name, {}};
    for (Instance& inst : FilterReferences(found, o.reference_min_score, o.reference_nms_iou)) {
      ref.masks.push_back(std::move(inst.mask));
    }
    context.references.push_back(std::move(ref));
  }
  if (r->parsed.ordinal > 0 && !r->parsed.target_name.empty()) {
    ASSIGN_OR_RETURN(std::vector<Instance> found, seg.SegmentText(r->parsed.target_name));
    OrdinalWindow(FilterReferences(found, o.reference_min_score, o.reference_nms_iou),
                  r->parsed.ordinal_axis, r->parsed.ordinal, o.ordinal_window, &context);
  }
  ASSIGN_OR_RETURN(std::string described, rsn.Describe(query, r->parsed, context));
  const std::string fallback = r->parsed.target_name.empty() ? query : r->parsed.target_name;
  r->description = RepairDescription(described, fallback);
  if (r->description != described) {
    TraceDecision(trace, "eri", "repair", "'" + described + "'", "'" + r->description + "'");
  }
  return core::Status::Ok();
}

// Step 2: ground the full description, then its short and long variants.
core::Status Ground(TracedReasoner& rsn, EriResult* r) {
  ASSIGN_OR_RETURN(r->boxes[0], rsn.Ground(r->description));
  if (!r->boxes[0]) return core::Status::Ok();
  ASSIGN_OR_RETURN(r->variants, rsn.MakeVariants(r->description));
  const std::string* texts[2] = {&r->variants.short_text, &r->variants.long_text};
  for (int m = 1; m < kBoxMethods; ++m) {
    if (texts[m - 1]->empty()) continue;
    ASSIGN_OR_RETURN(r->boxes[m], rsn.Ground(*texts[m - 1]));
  }
  return core::Status::Ok();
}

// Step 3: one box candidate per grounded box.
core::Status BoxCandidates(int width, int height, TracedSegmenter& seg, const EriOptions& o,
                           CallTrace* trace, EriResult* r) {
  for (int m = 0; m < kBoxMethods; ++m) {
    if (!r->boxes[m]) continue;
    const Box& b = *r->boxes[m];
    const Box clipped = ClipBox(b, width, height);
    if (clipped.empty()) {
      TraceDecision(trace, "eri", "box_outside", BoxMethodName(m), FormatBox(b));
      continue;
    }
    ASSIGN_OR_RETURN(std::vector<Instance> found, seg.SegmentBox(clipped));
    int best = -1;
    double best_iou = 0;
    for (size_t i = 0; i < found.size(); ++i) {
      if (found[i].mask.none()) continue;
      const double iou = BoxIou(BoxOf(found[i].mask), clipped);
      if (iou < o.box_keep_iou) continue;
      if (best < 0 || iou > best_iou || (iou == best_iou && found[i].score > found[best].score)) {
        best = static_cast<int>(i);
        best_iou = iou;
      }
    }
    if (best < 0) continue;
    r->box_evidence[m] = BoxEvidence{true, found[best].mask, found[best].score};
  }
  return core::Status::Ok();
}

// Step 4: text candidates with evaluation-aware rephrasing.
core::Status TextCandidates(TracedSegmenter& seg, TracedReasoner& rsn, const EriOptions& o,
                            EriResult* r) {
  std::vector<std::string> prompts = {r->description};
  if (o.noun_phrases > 0) {
    ASSIGN_OR_RETURN(std::vector<std::string> phrases,
                     rsn.NounPhrases(r->description, o.noun_phrases));
    if (static_cast<int>(phrases.size()) > o.noun_phrases) phrases.resize(o.noun_phrases);
    prompts.insert(prompts.end(), phrases.begin(), phrases.end());
  }
  const bool fuse = r->parsed.scope == Scope::kGroup || r->parsed.scope == Scope::kCollection;
  const int tries = o.rephrase ? o.tries_per_phrase : 1;
  std::vector<std::string> tried;
  for (size_t p = 0; p < prompts.size(); ++p) {
    const int prompt_index = kDescriptionPrompt + static_cast<int>(p);
    std::string phrase = prompts[p];
    for (int t = 0; t < tries; ++t) {
      if (std::find(tried.begin(), tried.end(), phrase) == tried.end()) tried.push_back(phrase);
      ASSIGN_OR_RETURN(std::vector<Instance> found, seg.SegmentText(phrase));
      std::erase_if(found, [](const Instance& i) { return i.mask.none(); });
      if (!found.empty()) {
        Candidate c{Mask(found[0].mask.width(), found[0].mask.height()), 0.0,
                    CandidateSource::kText, phrase, prompt_index};
        int best = 0;
        for (size_t i = 0; i < found.size(); ++i) {
          r->text_instances.push_back(TextVoter{found[i].mask, found[i].score, prompt_index});
          if (found[i].score > found[best].score) best = static_cast<int>(i);
          if (fuse) {
            c.mask = c.mask | found[i].mask;
            c.score = std::max(c.score, found[i].score);
          }
        }
        if (!fuse) {
          c.mask = found[best].mask;
          c.score = found[best].score;
        }
        r->text_candidates.push_back(std::move(c));
        break;
      }
      if (t + 1 == tries) break;
      ASSIGN_OR_RETURN(std::optional<std::string> next, rsn.Rephrase(phrase, tried));
      if (!next || next->empty()) break;
      phrase = *next;
    }
  }
  return core::Status::Ok();
}

std::string VoteSummary(const BoxVoteResult& v) {
  std::string out = fmt::format("anchor {} voters {}", BoxMethodName(v.anchor), v.voters.size());
  for (int m = 0; m < kBoxMethods; ++m) {
    out += fmt::format(" {} vote {:.4f} total {}", BoxMethodName(m), v.votes[m],
                       v.eligible[m] ? fmt::format("{:.4f}", v.totals[m]) : "-");
  }
  return out;
}

int BestScore(const std::vector<Candidate>& c) {
  int best = -1;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i].mask.none()) continue;
    if (best < 0 || c[i].score > c[best].score) best = static_cast<int>(i);
  }
  return best;
}

// Steps 5 and 6 and the final pick.
core::Status Select(const EriOptions& o, TracedReasoner& rsn, CallTrace* trace, EriResult* r) {
  if (o.vote) {
    r->box_vote = BoxVote(r->box_evidence, r->text_instances, o.box_vote);
    r->chosen_box_method = r->box_vote.chosen;
    if (r->box_vote.anchor >= 0) {
      TraceDecision(trace, "eri", "box_vote", VoteSummary(r->box_vote),
                    BoxMethodName(r->box_vote.chosen));
    }
  } else {
    for (int m = 0; m < kBoxMethods; ++m) {
      if (!r->box_evidence[m].valid) continue;
      if (r->chosen_box_method < 0 ||
          r->box_evidence[m].score > r->box_evidence[r->chosen_box_method].score) {
        r->chosen_box_method = m;
      }
    }
  }
  if (r->chosen_box_method >= 0) {
    const BoxEvidence& e = r->box_evidence[r->chosen_box_method];
    r->chosen_box = BoxOf(e.mask);
    for (const Candidate& c : r->text_candidates) {
      if (BoxIou(BoxOf(c.mask), r->chosen_box) >= o.text_keep_iou) r->candidates.push_back(c);
    }
    r->candidates.push_back(Candidate{e.mask, e.score, CandidateSource::kBox,
                                      BoxMethodName(r->chosen_box_method), kBoxPrompt});
  } else {
    r->candidates = r->text_candidates;
  }
  if (o.vote) {
    ASSIGN_OR_RETURN(r->final_vote, FinalVote(r->candidates, r->box_evidence, r->chosen_box_method,
                                              r->description, rsn, o.final_vote));
    r->chosen = r->final_vote.chosen;
  } else {
    r->chosen = BestScore(r->candidates);
  }
  std::string weights;
  for (size_t k = 0; k < r->candidates.size(); ++k) {
    weights += fmt::format("{}{}:{} '{}' {}", k ? "; " : "", k,
                           CandidateSourceName(r->candidates[k].source), r->candidates[k].phrase,
                           o.vote ? fmt::format("w {:.5f}", r->final_vote.weights.weight[k])
                                  : "score " + FormatScore(r->candidates[k].score));
  }
  TraceDecision(trace, "eri", o.vote ? "final_vote" : "best_score", weights,
                r->chosen < 0
                    ? "none"
                    : fmt::format("{} ({})", r->chosen, o.vote ? r->final_vote.how : "best score"));
  return core::Status::Ok();
}

}  // namespace

core::StatusOr<EriResult> RunEri(const std::string& query, int width, int height,
                                 TracedSegmenter& segmenter, TracedReasoner& reasoner,
                                 const EriOptions& options, CallTrace* trace) {
  RETURN_IF_ERROR(ValidateEriOptions(options));
  EriResult r;
  r.mask = Mask(width, height);
  RETURN_IF_ERROR(Contract(query, segmenter, reasoner, options, trace, &r));
  if (options.use_boxes) {
    RETURN_IF_ERROR(Ground(reasoner, &r));
    RETURN_IF_ERROR(BoxCandidates(width, height, segmenter, options, trace, &r));
  }
  if (options.use_text) RETURN_IF_ERROR(TextCandidates(segmenter, reasoner, options, &r));
  RETURN_IF_ERROR(Select(options, reasoner, trace, &r));
  if (r.chosen >= 0) r.mask = r.candidates[r.chosen].mask;
  return r;
}

}  // namespace tessera::tarot
