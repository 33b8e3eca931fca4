#include "tarot/scene_reasoner.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "tarot/backends.h"
#include "tarot/expression_generator.h"
#include "tarot/phrasing.h"
#include "tarot/query_parser.h"
#include "tarot/seeded.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

constexpr double kJudgeInside = 0.5;  // JudgeRegion: this much of the region in the target
constexpr double kCheckIou = 0.5;

enum Skill : uint64_t { kAttribute = 11, kRelation, kOrdinal, kKnowledge, kHallucination, kBox };

uint64_t MaskHash(const Mask& m) {
  uint64_t h = MixBits(static_cast<uint64_t>(m.width()) * 31 + static_cast<uint64_t>(m.height()));
  for (uint64_t w : m.words()) h = MixBits(h ^ w);
  return h;
}

// Another object than those in `t` that `ok` accepts, with `part` when one is named; chosen by
// `draw` in [0, 1). -1 when none.
int OtherObject(const Scene& s, const Target& t, const std::function<bool(const SceneObject&)>& ok,
                double draw) {
  std::vector<int> c;
  for (const SceneObject& o : s.objects) {
    if (std::find(t.objects.begin(), t.objects.end(), o.id) != t.objects.end()) continue;
    if (!t.part.empty() && o.FindPart(t.part) == nullptr) continue;
    if (ok(o)) c.push_back(o.id);
  }
  if (c.empty()) return -1;
  return c[std::min(c.size() - 1, static_cast<size_t>(draw * c.size()))];
}

// The object nearest (centroid distance, ties by id) to the target's first object, not in the
// target: of the same category when there is one, else of any; -1 when the scene has no other.
int NearestOther(const Scene& s, const Target& t) {
  if (t.objects.empty()) return -1;
  const SceneObject& first = s.objects[t.objects[0]];
  int best = -1;
  double best_d = 0;
  bool best_same = false;
  for (const SceneObject& o : s.objects) {
    if (std::find(t.objects.begin(), t.objects.end(), o.id) != t.objects.end()) continue;
    const bool same = o.category == first.category;
    const double d = std::hypot(o.centroid.x - first.centroid.x, o.centroid.y - first.centroid.y);
    if (best < 0 || (same && !best_same) || (same == best_same && d < best_d)) {
      best = o.id;
      best_d = d;
      best_same = same;
    }
  }
  return best;
}

}  // namespace

core::StatusOr<ReasonerErrorRates> ParseNoisyReasonerOptions(const core::RegistryOptions& options) {
  const std::string who = "tarot.reasoner 'noisy'";
  ReasonerErrorRates e;
  ASSIGN_OR_RETURN(e.seed, OptionSeed(options, who, "noisy.seed"));
  ASSIGN_OR_RETURN(const double rate, OptionNumber(options, who, "noisy.rate", 0.1, 0, 1));
  ASSIGN_OR_RETURN(e.attribute, OptionNumber(options, who, "noisy.attribute", rate, 0, 1));
  ASSIGN_OR_RETURN(e.relation, OptionNumber(options, who, "noisy.relation", rate, 0, 1));
  ASSIGN_OR_RETURN(e.ordinal, OptionNumber(options, who, "noisy.ordinal", rate, 0, 1));
  ASSIGN_OR_RETURN(e.knowledge, OptionNumber(options, who, "noisy.knowledge", rate, 0, 1));
  ASSIGN_OR_RETURN(e.hallucination, OptionNumber(options, who, "noisy.hallucination", rate, 0, 1));
  ASSIGN_OR_RETURN(e.box, OptionNumber(options, who, "noisy.box", rate, 0, 1));
  ASSIGN_OR_RETURN(e.judge, OptionNumber(options, who, "noisy.judge", rate, 0, 1));
  ASSIGN_OR_RETURN(e.box_jitter, OptionNumber(options, who, "noisy.box_jitter", 0.25, 0, 1));
  ASSIGN_OR_RETURN(e.box_swap, OptionNumber(options, who, "noisy.box_swap", 0.5, 0, 1));
  return e;
}

SceneReasoner::SceneReasoner(std::string name, std::shared_ptr<const Scene> scene,
                             ReasonerErrorRates errors)
    : name_(std::move(name)), scene_(std::move(scene)), errors_(errors) {}

core::Status SceneReasoner::SetImage(const Image& image) {
  image_set_ = false;
  beliefs_.clear();
  const std::string who = "tarot.reasoner '" + name_ + "'";
  if (scene_ == nullptr) {
    return core::FailedPrecondition(who + " reads a scene: build it with BackendContext.scene");
  }
  if (image.width != scene_->width || image.height != scene_->height ||
      image.pixels != scene_->image.pixels) {
    return core::FailedPrecondition(
        who + ": the image (" + std::to_string(image.width) + "x" + std::to_string(image.height) +
        ") is not the image of its scene (seed " + std::to_string(scene_->seed) + ")");
  }
  image_set_ = true;
  return core::Status::Ok();
}

core::Status SceneReasoner::Ready() const {
  if (image_set_) return core::Status::Ok();
  return core::FailedPrecondition("tarot.reasoner '" + name_ + "': SetImage first");
}

SceneReasoner::Belief SceneReasoner::Form(const std::string& text) const {
  Belief b;
  if (const Expression* e = FindExpression(*scene_, text)) {
    b.parsed = true;
    b.program = e->program;
    b.facts = e->hops > 0 ? 1 : 0;
    b.target = e->target;
  } else {
    const ParseResult r = ParseQuery(text);
    if (r.ok) {
      b.parsed = true;
      b.program = r.program;
      b.facts = r.facts;
      const std::vector<Entity> ents = scene_->Entities();
      auto ids = Evaluate(ents, r.program, /*strict=*/true);
      if (!ids.ok()) ids = Evaluate(ents, r.program, /*strict=*/false);
      if (ids.ok()) b.target = Target{*ids, r.program.part};
    }
  }
  if (errors_.any() && !b.target.empty()) Corrupt(text, b);
  return b;
}

void SceneReasoner::Corrupt(const std::string& text, Belief& b) const {
  const Scene& s = *scene_;
  const Program& p = b.program;
  const SceneObject& cur = s.objects[b.target.objects[0]];
  auto draw = [&](Skill k, uint64_t salt) {
    return HashUniform(KeyHash(errors_.seed, text, k * 1000 + salt));
  };
  auto lenient = [&](const Program& q) -> Target {
    auto ids = Evaluate(s.Entities(), q, /*strict=*/false);
    return ids.ok() ? Target{*ids, q.part} : Target{};
  };
  auto one = [&](int id, const std::string& part) {
    return id < 0 ? Target{} : Target{{id}, part};
  };
  const bool attributes =
      !p.target.colour.empty() || !p.target.size.empty() ||
      (p.relation != Relation::kNone && (!p.reference.colour.empty() || !p.reference.size.empty()));
  struct Option {
    Skill skill;
    const char* name;
    bool applies;
    double rate;
  };
  const Option options[] = {
      {kAttribute, "attribute", attributes, errors_.attribute},
      {kRelation, "relation", p.relation != Relation::kNone, errors_.relation},
      {kOrdinal, "ordinal", p.target.ordinal > 0, errors_.ordinal},
      {kKnowledge, "knowledge", b.facts > 0, errors_.knowledge},
      {kHallucination, "hallucination", true, errors_.hallucination},
  };
  auto same_category = [&](const SceneObject& o) { return o.category == cur.category; };
  for (const Option& opt : options) {
    if (!opt.applies || opt.rate <= 0 || draw(opt.skill, 0) >= opt.rate) continue;
    Target wrong;
    switch (opt.skill) {
      case kAttribute:
        wrong = one(OtherObject(s, b.target, same_category, draw(opt.skill, 1)), b.target.part);
        break;
      case kRelation: {
        Program q = p;
        const Relation flip[] = {Relation::kNone,  Relation::kRightOf, Relation::kLeftOf,
                                 Relation::kBelow, Relation::kAbove,   Relation::kClosestTo};
        q.relation = flip[static_cast<int>(p.relation)];
        if (q.relation != Relation::kClosestTo) wrong = lenient(q);
        if (wrong.empty() || wrong == b.target)
          wrong = one(OtherObject(s, b.target, same_category, draw(opt.skill, 1)), b.target.part);
        break;
      }
      case kOrdinal: {
        Program q = p;
        q.target.ordinal += draw(opt.skill, 1) < 0.5 && p.target.ordinal > 1 ? -1 : 1;
        wrong = lenient(q);
        if (wrong.empty()) {
          q.target.ordinal = std::max(1, p.target.ordinal - 1);
          wrong = lenient(q);
        }
        break;
      }
      case kKnowledge:
        if (!b.target.part.empty() && cur.parts.size() > 1) {
          std::vector<std::string> others;
          for (const ScenePart& part : cur.parts)
            if (part.name != b.target.part) others.push_back(part.name);
          const size_t k = static_cast<size_t>(draw(opt.skill, 1) * others.size());
          wrong = Target{{cur.id}, others[std::min(k, others.size() - 1)]};
        } else {
          Target whole{b.target.objects, ""};
          wrong = one(OtherObject(
                          s, whole, [&](const SceneObject& o) { return !same_category(o); },
                          draw(opt.skill, 1)),
                      "");
        }
        break;
      case kHallucination: {
        Target whole{b.target.objects, ""};
        wrong = one(OtherObject(
                        s, whole, [](const SceneObject&) { return true; }, draw(opt.skill, 1)),
                    "");
        break;
      }
      default:
        break;
    }
    if (wrong.empty() || wrong == b.target) continue;
    b.target = wrong;
    b.corrupted_by = opt.name;
    if (std::optional<Program> q = ExplicitProgramFor(s, wrong)) b.program = *q;
    return;
  }
}

const SceneReasoner::Belief& SceneReasoner::BeliefOf(const std::string& text) {
  auto it = beliefs_.find(text);
  if (it == beliefs_.end()) it = beliefs_.emplace(text, Form(text)).first;
  return it->second;
}

void SceneReasoner::Wrote(const std::string& text, const Belief& b) {
  Belief copy = b;
  beliefs_[text] = std::move(copy);
}

bool SceneReasoner::Flip(const std::string& what, const std::string& query, const Mask& a) const {
  return errors_.judge > 0 &&
         HashUniform(KeyHash(errors_.seed, what + "|" + query, MaskHash(a))) < errors_.judge;
}

core::StatusOr<ParsedQuery> SceneReasoner::Parse(const std::string& query) {
  RETURN_IF_ERROR(Ready());
  const Belief& b = BeliefOf(query);
  if (!b.parsed) {
    ParsedQuery q;
    q.ok = false;
    return q;
  }
  return ToParsedQuery(b.program);
}

core::StatusOr<std::string> SceneReasoner::Describe(const std::string& query, const ParsedQuery&,
                                                    const DescribeContext&) {
  RETURN_IF_ERROR(Ready());
  const Belief b = BeliefOf(query);
  if (!b.parsed) return query;
  std::optional<Program> p;
  if (!b.target.empty()) p = ExplicitProgramFor(*scene_, b.target);
  const std::string text = RenderProgram(p ? *p : b.program);
  if (text != query) Wrote(text, b);
  return text;
}

core::StatusOr<Variants> SceneReasoner::MakeVariants(const std::string& description) {
  RETURN_IF_ERROR(Ready());
  const Belief b = BeliefOf(description);
  if (!b.parsed) return Variants{description, description};
  Program p = b.program;
  std::string hint;
  if (!b.target.empty()) {
    if (std::optional<Program> e = ExplicitProgramFor(*scene_, b.target)) p = *e;
    const SceneObject& o = scene_->objects[b.target.objects[0]];
    // Attributes narrow the candidates, so an ordinal's rank would change: only without one.
    if (!b.program.plural && p.target.ordinal == 0) p = FullProgram(p, o.colour, o.size);
    const Point c = CentroidOf(TargetMask(*scene_, b.target));
    hint = " " + PositionHint(c.x / scene_->width, c.y / scene_->height);
  }
  Variants v{RenderProgram(ShortProgram(p)), RenderProgram(p) + hint};
  Wrote(v.short_text, b);
  Wrote(v.long_text, b);
  return v;
}

core::StatusOr<std::vector<std::string>> SceneReasoner::NounPhrases(const std::string& description,
                                                                    int n) {
  RETURN_IF_ERROR(Ready());
  const Belief b = BeliefOf(description);
  std::vector<std::string> out;
  if (!b.parsed || n <= 0) return out;
  Program p = b.program;
  if (!b.target.empty() && !b.program.plural) {
    const int id = b.target.objects[0];
    const SceneObject& o = scene_->objects[id];
    if (std::optional<ObjectSpec> m = MinimalSpec(*scene_, id, b.target.part)) {
      std::string phrase = RenderSpec(*m);
      if (!b.target.part.empty()) phrase = b.target.part + " of the " + phrase;
      if (Words(phrase).size() < 2) phrase = "the " + phrase;
      out.push_back(phrase);
    }
    p = Program{
        {o.category, o.colour, o.size, 0, Axis::kNone}, b.target.part, false, Relation::kNone, {}};
  }
  for (const std::string& s : NounPhrasesFor(p, n + 1))
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  if (static_cast<int>(out.size()) > n) out.resize(n);
  for (const std::string& s : out) Wrote(s, b);
  return out;
}

core::StatusOr<std::optional<std::string>> SceneReasoner::Rephrase(
    const std::string& phrase, const std::vector<std::string>& tried) {
  RETURN_IF_ERROR(Ready());
  std::optional<std::string> r = RephraseNotTried(phrase, tried);
  if (r) Wrote(*r, BeliefOf(phrase));
  return r;
}

core::StatusOr<std::optional<Box>> SceneReasoner::Ground(const std::string& expression) {
  RETURN_IF_ERROR(Ready());
  const Belief& b = BeliefOf(expression);
  if (b.target.empty()) return std::optional<Box>{};
  Box box = BoxOf(TargetMask(*scene_, b.target));
  auto draw = [&](uint64_t salt) {
    return HashUniform(KeyHash(errors_.seed, expression, kBox * 1000 + salt));
  };
  if (errors_.box > 0 && draw(0) < errors_.box && draw(5) < errors_.box_swap) {
    // The box of a look-alike: the nearest other object of the target's category, else the
    // nearest other object (the grounding mistake an MLLM makes among similar instances).
    const int other = NearestOther(*scene_, b.target);
    if (other >= 0) return std::optional<Box>(BoxOf(scene_->objects[other].mask));
  }
  if (errors_.box > 0 && draw(0) < errors_.box) {
    const double j = errors_.box_jitter, w = box.x1 - box.x0, h = box.y1 - box.y0;
    const double cx = 0.5 * (box.x0 + box.x1) + (2 * draw(1) - 1) * j * w;
    const double cy = 0.5 * (box.y0 + box.y1) + (2 * draw(2) - 1) * j * h;
    const double nw = w * (1 + (2 * draw(3) - 1) * j), nh = h * (1 + (2 * draw(4) - 1) * j);
    box = {std::max(0.0, cx - nw / 2), std::max(0.0, cy - nh / 2),
           std::min<double>(scene_->width, cx + nw / 2),
           std::min<double>(scene_->height, cy + nh / 2)};
    if (box.empty()) return std::optional<Box>{};
  }
  return std::optional<Box>(box);
}

core::StatusOr<bool> SceneReasoner::JudgeRegion(const std::string& query, const Mask&,
                                                const Mask& region) {
  RETURN_IF_ERROR(Ready());
  const Belief& b = BeliefOf(query);
  const int64_t n = region.count();
  bool yes = false;
  if (!b.target.empty() && n > 0)
    yes = region.IntersectionCount(TargetMask(*scene_, b.target)) >= kJudgeInside * n;
  return Flip("judge", query, region) ? !yes : yes;
}

core::StatusOr<bool> SceneReasoner::Check(const std::string& query, const Mask& mask) {
  RETURN_IF_ERROR(Ready());
  const Belief& b = BeliefOf(query);
  const bool yes = !b.target.empty() && MaskIou(mask, TargetMask(*scene_, b.target)) >= kCheckIou;
  return Flip("check", query, mask) ? !yes : yes;
}

core::StatusOr<int> SceneReasoner::Compare(const std::string& query, const Mask& a, const Mask& b) {
  RETURN_IF_ERROR(Ready());
  const Belief& belief = BeliefOf(query);
  int pick = 0;
  if (!belief.target.empty()) {
    const Mask t = TargetMask(*scene_, belief.target);
    pick = MaskIou(a, t) >= MaskIou(b, t) ? 0 : 1;
  }
  return Flip("compare", query, a | b) ? 1 - pick : pick;
}

ReasonerRegistry::Entry OracleReasonerEntry() {
  auto create = [](const BackendContext& c) -> core::StatusOr<std::unique_ptr<Reasoner>> {
    return std::unique_ptr<Reasoner>(new SceneReasoner("oracle", c.scene, {}));
  };
  return {{.reads_scene = true, .create = create},
          "oracle",
          "reads the refscenes scene program; always right",
          [] { return std::unique_ptr<Reasoner>(new SceneReasoner("oracle", nullptr, {})); },
          {}};
}

ReasonerRegistry::Entry NoisyReasonerEntry() {
  auto create = [](const BackendContext& c) -> core::StatusOr<std::unique_ptr<Reasoner>> {
    ASSIGN_OR_RETURN(ReasonerErrorRates e, ParseNoisyReasonerOptions(c.options));
    return std::unique_ptr<Reasoner>(new SceneReasoner("noisy", c.scene, e));
  };
  return {{.reads_scene = true, .create = create},
          "noisy",
          "the oracle with seeded per-skill error rates",
          [] {
            return std::unique_ptr<Reasoner>(
                new SceneReasoner("noisy", nullptr, *ParseNoisyReasonerOptions({})));
          },
          {{"noisy.seed", "seed of the error draws (default 0)"},
           {"noisy.rate", "every skill's error rate unless set on its own (0..1, default 0.1)"},
           {"noisy.attribute", "error rate on colour/size (0..1)"},
           {"noisy.relation", "error rate on relations (0..1)"},
           {"noisy.ordinal", "error rate on ordinals (0..1)"},
           {"noisy.knowledge", "error rate on fact-table hops (0..1)"},
           {"noisy.hallucination", "rate of a hallucinated target (0..1)"},
           {"noisy.box", "rate of a jittered Ground box (0..1)"},
           {"noisy.judge", "rate of a flipped JudgeRegion/Check/Compare answer (0..1)"},
           {"noisy.box_jitter", "box jitter as a fraction of its size (0..1, default 0.25)"},
           {"noisy.box_swap",
            "share of box errors that box the nearest look-alike object instead (0..1, "
            "default 0.5)"}}};
}

}  // namespace tessera::tarot
