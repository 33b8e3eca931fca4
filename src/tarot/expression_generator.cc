#include "tarot/expression_generator.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "tarot/seeded.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

constexpr double kMarginFraction = 0.04;  // of the shorter side
constexpr double kClearCosine = 0.85;     // the target's direction cosine
constexpr double kOtherCosine = 0.5;      // the most any other candidate may have
constexpr double kClosestRatio = 0.75;
constexpr int kMaxOrdinal = 6;
constexpr int kMinLongWords = 15, kMaxLongWords = 30;

struct Unit {
  int id;
  std::string part;
};

std::string PluralOf(const std::string& word) {
  const int ci = CategoryIndex(word);
  if (ci >= 0) return Categories()[ci].plural;
  if (word.ends_with("s") || word.ends_with("x") || word.ends_with("sh") || word.ends_with("ch"))
    return word + "es";
  return word + "s";
}

const Fact* FindFact(FactKind kind, const std::string& category, const std::string& part,
                     const std::string& colour) {
  for (const Fact& f : Facts())
    if (f.kind == kind && f.category == category && f.part == part && f.colour == colour) return &f;
  return nullptr;
}

class Grammar {
 public:
  Grammar(const Scene& s, core::Rng& rng, const ExpressionOptions& opt)
      : s_(s),
        rng_(rng),
        opt_(opt),
        ents_(s.Entities()),
        margin_(kMarginFraction * std::min(s.width, s.height)) {}

  std::vector<int> Matching(const ObjectSpec& spec, const std::string& part) const {
    std::vector<int> out;
    for (size_t i = 0; i < ents_.size(); ++i) {
      const auto& parts = ents_[i].parts;
      if (SpecCovers(spec, ents_[i]) &&
          (part.empty() || std::find(parts.begin(), parts.end(), part) != parts.end()))
        out.push_back(static_cast<int>(i));
    }
    return out;
  }
  int CategoryCount(const std::string& cat) const {
    return static_cast<int>(Matching({cat, "", "", 0, Axis::kNone}, "").size());
  }
  ObjectSpec SpecOf(int id, bool colour, bool size) const {
    const SceneObject& o = s_.objects[id];
    return {o.category, colour ? o.colour : "", size ? o.size : "", 0, Axis::kNone};
  }

  std::optional<ObjectSpec> Minimal(int id, const std::string& part) const {
    for (auto [c, z] : {std::pair{false, false}, {true, false}, {false, true}, {true, true}}) {
      ObjectSpec spec = SpecOf(id, c, z);
      if (Matching(spec, part) == std::vector<int>{id}) return spec;
    }
    return std::nullopt;
  }

  // Ordinal `spec` clear for `id` along `axis`: the spec with the rank, or nullopt.
  std::optional<ObjectSpec> Ordinal(int id, const std::string& part, ObjectSpec spec,
                                    Axis axis) const {
    const std::vector<int> c = Matching(spec, part);
    if (c.size() < 2) return std::nullopt;
    int rank = 1;
    const double k = AxisKey(axis, ents_[id]);
    for (int o : c) {
      if (o == id) continue;
      const double ko = AxisKey(axis, ents_[o]);
      if (std::abs(ko - k) < margin_) return std::nullopt;
      if (ko < k) ++rank;
    }
    if (rank > kMaxOrdinal) return std::nullopt;
    spec.ordinal = rank;
    spec.axis = axis;
    return spec;
  }

  // Is `rel` to `ref` clear for `id` among the candidates of `spec`? Sets *others to the number
  // of other candidates.
  bool RelationClear(int id, const std::string& part, const ObjectSpec& spec, Relation rel, int ref,
                     int* others) const {
    std::vector<int> c = Matching(spec, part);
    c.erase(std::remove(c.begin(), c.end(), ref), c.end());
    if (std::find(c.begin(), c.end(), id) == c.end()) return false;
    *others = static_cast<int>(c.size()) - 1;
    const Entity& r = ents_[ref];
    if (rel == Relation::kClosestTo) {
      const double d = std::hypot(ents_[id].cx - r.cx, ents_[id].cy - r.cy);
      for (int o : c)
        if (o != id && d > kClosestRatio * std::hypot(ents_[o].cx - r.cx, ents_[o].cy - r.cy))
          return false;
      return true;
    }
    const double cos_t = DirectionCosine(rel, r, ents_[id]);
    const double along = std::max(std::abs(ents_[id].cx - r.cx), std::abs(ents_[id].cy - r.cy));
    if (cos_t < kClearCosine || along < margin_) return false;
    for (int o : c)
      if (o != id && DirectionCosine(rel, r, ents_[o]) > kOtherCosine) return false;
    return true;
  }

  // A clear relational program for the unit and its reference's id, preferring ones where the
  // relation is needed (other candidates exist) when `need_others`. `ref_ok` (when given)
  // chooses the references; the reference spec is then its category alone.
  std::optional<std::pair<Program, int>> Relational(
      const Unit& u, bool need_others, const std::function<bool(int ref)>& ref_ok = nullptr) {
    std::vector<int> refs;
    for (size_t i = 0; i < ents_.size(); ++i)
      if (static_cast<int>(i) != u.id) refs.push_back(static_cast<int>(i));
    Shuffle(rng_, refs);
    std::vector<Relation> rels = {Relation::kLeftOf, Relation::kRightOf, Relation::kAbove,
                                  Relation::kBelow, Relation::kClosestTo};
    Shuffle(rng_, rels);
    for (int ref : refs) {
      if (ref_ok && !ref_ok(ref)) continue;
      std::optional<ObjectSpec> ref_spec = Minimal(ref, "");
      if (!ref_ok && !ref_spec) continue;
      for (Relation rel : rels) {
        for (auto [c, z] : {std::pair{false, false}, {true, false}, {false, true}}) {
          const ObjectSpec spec = SpecOf(u.id, c, z);
          int others = 0;
          if (!RelationClear(u.id, u.part, spec, rel, ref, &others)) continue;
          if (need_others && others == 0) continue;
          Program p;
          p.target = spec;
          p.part = u.part;
          p.relation = rel;
          p.reference = ref_ok ? SpecOf(ref, false, false) : *ref_spec;
          return std::pair{p, ref};
        }
      }
    }
    return std::nullopt;
  }

  // --- surface forms ---
  std::string CatWord(const std::string& cat, bool plural) {
    const int ci = CategoryIndex(cat);
    std::string w = cat;
    if (ci >= 0 && !Categories()[ci].synonyms.empty() && rng_.Uniform() < 0.2) {
      const auto& syn = Categories()[ci].synonyms;
      w = syn[rng_.Below(syn.size())];
    }
    return plural ? PluralOf(w) : w;
  }
  std::string SizeWord(const std::string& size) {
    if (rng_.Uniform() >= 0.3) return size;
    if (size == "large") return "big";
    if (size == "small") return rng_.Below(2) ? "little" : "tiny";
    return "medium-sized";
  }
  std::string ColourWord(const std::string& colour) {
    return colour == "gray" && rng_.Uniform() < 0.3 ? "grey" : colour;
  }
  std::string SpecText(const ObjectSpec& s, bool plural) {
    std::vector<std::string> w;
    const bool most = s.ordinal == 1 && rng_.Below(2) == 0;
    if (most) {
      w.push_back(std::string(AxisName(s.axis)) + "most");
    } else if (s.ordinal > 0) {
      w.push_back(OrdinalWords()[s.ordinal - 1].text);
    }
    if (!s.size.empty()) w.push_back(SizeWord(s.size));
    if (!s.colour.empty()) w.push_back(ColourWord(s.colour));
    w.push_back(CatWord(s.category, plural));
    if (s.ordinal > 0 && !most) w.push_back(std::string("from the ") + AxisName(s.axis));
    return JoinWords(w);
  }
  std::string NounText(const ObjectSpec& s, const std::string& part, bool plural) {
    return "the " + (part.empty() ? "" : part + " of the ") + SpecText(s, plural);
  }
  std::string RelText(Relation r) {
    const bool alt = rng_.Below(2) == 0;
    switch (r) {
      case Relation::kLeftOf:
        return alt ? "to the left of" : "left of";
      case Relation::kRightOf:
        return alt ? "to the right of" : "right of";
      case Relation::kClosestTo:
        return alt ? "nearest to" : "closest to";
      default:
        return RelationText(r);
    }
  }
  std::string ProgramText(const Program& p) {
    std::string t = NounText(p.target, p.part, p.plural);
    if (p.relation != Relation::kNone)
      t += " " + RelText(p.relation) + " " + NounText(p.reference, "", false);
    return t;
  }

  // The expression if the program strictly denotes `want`.
  std::optional<Expression> Finish(std::string text, Tier tier, int hops, const Program& p,
                                   const Target& want) {
    auto t = EvaluateInScene(s_, p);
    if (!t.ok() || !(*t == want) || used_.count(text)) return std::nullopt;
    if (tier != Tier::kE4 && Words(text).size() >= kMinLongWords) return std::nullopt;
    used_.insert(text);
    return Expression{std::move(text), tier, hops, p, want};
  }

  std::vector<Unit> Units(bool parts_first) {
    std::vector<Unit> whole, parts;
    for (const SceneObject& o : s_.objects) {
      whole.push_back({o.id, ""});
      for (const ScenePart& p : o.parts) parts.push_back({o.id, p.name});
    }
    Shuffle(rng_, whole);
    Shuffle(rng_, parts);
    if (parts_first) std::swap(whole, parts);
    whole.insert(whole.end(), parts.begin(), parts.end());
    return whole;
  }

  std::optional<Expression> Plural(Tier tier) {
    std::vector<int> ids(ents_.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int>(i);
    Shuffle(rng_, ids);
    for (int id : ids) {
      Program p;
      p.plural = true;
      p.target = SpecOf(id, tier == Tier::kE1, false);
      const std::vector<int> m = Matching(p.target, "");
      if (m.size() < 2) continue;
      if (tier == Tier::kE1 && static_cast<int>(m.size()) == CategoryCount(p.target.category))
        continue;
      if (auto e = Finish(NounText(p.target, "", true), tier, 0, p, {m, ""})) return e;
    }
    return std::nullopt;
  }

  std::optional<Expression> One(Tier tier);
  std::optional<Expression> Long(const Unit& u);
  std::optional<Expression> Implicit(Tier tier, const Unit& u, int form);

  const Scene& s_;
  core::Rng& rng_;
  const ExpressionOptions& opt_;
  std::vector<Entity> ents_;
  double margin_;
  std::set<std::string> used_;
};

std::optional<Expression> Grammar::Long(const Unit& u) {
  auto rel = Relational(u, true);
  if (!rel) rel = Relational(u, false);
  std::optional<Program> p;
  if (rel) {
    p = rel->first;
    p->target = SpecOf(u.id, true, true);
  } else {
    p = Program{SpecOf(u.id, true, true), u.part, false, Relation::kNone, {}};
  }
  const Target want{{u.id}, u.part};
  const SceneObject& o = s_.objects[u.id];
  const std::string hint = PositionHint(o.centroid.x / s_.width, o.centroid.y / s_.height);
  for (int attempt = 0; attempt < 12; ++attempt) {
    std::string body = NounText(p->target, u.part, false);
    if (p->relation != Relation::kNone) {
      const char* clause[] = {"", "that is ", "which sits "};
      body += " " + std::string(clause[rng_.Below(3)]) + RelText(p->relation) + " " +
              NounText(p->reference, "", false);
    }
    std::vector<std::string> pieces = {FillerOpeners()[rng_.Below(FillerOpeners().size())], body};
    if (rng_.Uniform() < 0.8) pieces.push_back(hint);
    if (rng_.Uniform() < 0.7) pieces.push_back(FillerClosers()[rng_.Below(FillerClosers().size())]);
    std::string text = JoinWords(pieces);
    const size_t n = Words(text).size();
    if (n < kMinLongWords || n > kMaxLongWords) continue;
    if (auto e = Finish(text, Tier::kE4, 0, *p, want)) return e;
  }
  return std::nullopt;
}

std::optional<Expression> Grammar::Implicit(Tier tier, const Unit& u, int form) {
  const SceneObject& o = s_.objects[u.id];
  const CategoryInfo& info = Categories()[CategoryIndex(o.category)];
  const bool unique_cat = CategoryCount(o.category) == 1;
  const Target want{{u.id}, u.part};
  Program p{SpecOf(u.id, false, false), u.part, false, Relation::kNone, {}};
  const Fact* colour_fact = FindFact(FactKind::kColour, "", "", o.colour);
  const bool colour_needed = !unique_cat && Matching(SpecOf(u.id, true, false), "").size() == 1;
  if (tier == Tier::kI1) {
    // Object facts name refscenes things and fashion items (shapes have shape facts instead).
    if (form == 0 && u.part.empty() && unique_cat) {
      if (const Fact* f = FindFact(FactKind::kObject, o.category, "", ""))
        return Finish(f->phrase, tier, 1, p, want);
    } else if (form == 1 && !u.part.empty() && unique_cat) {
      if (const Fact* f = FindFact(FactKind::kPart, o.category, u.part, ""))
        return Finish(f->phrase, tier, 1, p, want);
    } else if (form == 2 && u.part.empty() && unique_cat && info.is_shape) {
      if (const Fact* f = FindFact(FactKind::kShape, o.category, "", ""))
        return Finish(f->phrase, tier, 1, p, want);
    } else if (form == 3 && u.part.empty() && colour_needed && colour_fact) {
      p.target.colour = o.colour;
      return Finish("the " + CatWord(o.category, false) + " that is " + colour_fact->phrase, tier,
                    1, p, want);
    }
    return std::nullopt;
  }
  if (form == 0 && !u.part.empty() && unique_cat) {
    const Fact* pf = FindFact(FactKind::kPartFunction, o.category, u.part, "");
    const Fact* of = FindFact(FactKind::kObject, o.category, "", "");
    if (pf && of) return Finish(pf->phrase + " of " + of->phrase, tier, 2, p, want);
  } else if (form == 1 && u.part.empty() && info.is_shape && colour_needed && colour_fact) {
    // A shape fact, or (a fashion item) its object fact: "what you carry your shopping in that
    // is the colour of grass".
    const Fact* sf = FindFact(FactKind::kShape, o.category, "", "");
    if (!sf) sf = FindFact(FactKind::kObject, o.category, "", "");
    if (sf) {
      p.target.colour = o.colour;
      return Finish(sf->phrase + " that is " + colour_fact->phrase, tier, 2, p, want);
    }
  } else if (form == 2) {
    auto ref_fact = [&](int ref) -> const Fact* {
      const std::string& cat = s_.objects[ref].category;
      if (CategoryCount(cat) != 1) return nullptr;
      const Fact* f = FindFact(FactKind::kObject, cat, "", "");
      return f ? f : FindFact(FactKind::kShape, cat, "", "");
    };
    auto rel = Relational(u, false, [&](int ref) { return ref_fact(ref) != nullptr; });
    if (!rel) return std::nullopt;
    return Finish(NounText(rel->first.target, u.part, false) + " " + RelText(rel->first.relation) +
                      " " + ref_fact(rel->second)->phrase,
                  tier, 2, rel->first, want);
  }
  return std::nullopt;
}

std::optional<Expression> Grammar::One(Tier tier) {
  const bool group_tier = tier == Tier::kE0 || tier == Tier::kE1;
  if (group_tier && rng_.Uniform() < opt_.plural_rate) {
    if (auto e = Plural(tier)) return e;
  }
  const std::vector<Unit> units = Units(rng_.Uniform() < opt_.part_rate);
  auto make = [&](const Unit& u, const Program& p) {
    return Finish(ProgramText(p), tier, 0, p, Target{{u.id}, u.part});
  };
  switch (tier) {
    case Tier::kE0:
      for (const Unit& u : units) {
        const Program p{SpecOf(u.id, false, false), u.part, false, Relation::kNone, {}};
        if (Matching(p.target, u.part) != std::vector<int>{u.id}) continue;
        if (auto e = make(u, p)) return e;
      }
      break;
    case Tier::kE1:
      for (int pass = 0; pass < 2; ++pass) {
        for (const Unit& u : units) {
          if (pass == 0 && Matching(SpecOf(u.id, false, false), u.part).size() < 2) continue;
          std::vector<std::pair<bool, bool>> sets = {{true, false}, {false, true}};
          Shuffle(rng_, sets);
          sets.push_back({true, true});
          for (auto [c, z] : sets) {
            const Program p{SpecOf(u.id, c, z), u.part, false, Relation::kNone, {}};
            if (Matching(p.target, u.part) != std::vector<int>{u.id}) continue;
            if (auto e = make(u, p)) return e;
            break;
          }
        }
      }
      break;
    case Tier::kE2:
      for (const Unit& u : units) {
        std::vector<ObjectSpec> specs = {SpecOf(u.id, false, false), SpecOf(u.id, true, false)};
        Shuffle(rng_, specs);
        std::vector<Axis> axes = {Axis::kFromLeft, Axis::kFromRight, Axis::kFromTop,
                                  Axis::kFromBottom};
        Shuffle(rng_, axes);
        for (const ObjectSpec& spec : specs) {
          for (Axis a : axes) {
            std::optional<ObjectSpec> o = Ordinal(u.id, u.part, spec, a);
            if (!o) continue;
            if (auto e = make(u, Program{*o, u.part, false, Relation::kNone, {}})) return e;
          }
        }
      }
      break;
    case Tier::kE3:
      for (int pass = 0; pass < 2; ++pass) {
        for (const Unit& u : units) {
          auto rel = Relational(u, pass == 0);
          if (!rel) continue;
          if (auto e = make(u, rel->first)) return e;
        }
      }
      break;
    case Tier::kE4:
      for (const Unit& u : units)
        if (auto e = Long(u)) return e;
      break;
    case Tier::kI1:
    case Tier::kI2: {
      std::vector<int> forms = {0, 1, 2};
      if (tier == Tier::kI1) forms.push_back(3);
      Shuffle(rng_, forms);
      for (int form : forms)
        for (const Unit& u : units)
          if (auto e = Implicit(tier, u, form)) return e;
      break;
    }
  }
  if (group_tier) return Plural(tier);
  return std::nullopt;
}

}  // namespace

std::vector<Expression> GenerateTierExpressions(const Scene& scene, Tier tier, core::Rng& rng,
                                                const ExpressionOptions& options) {
  Grammar g(scene, rng, options);
  for (const Expression& e : scene.expressions) g.used_.insert(e.text);
  std::vector<Expression> out;
  for (int i = 0; i < options.per_tier; ++i) {
    std::optional<Expression> e = g.One(tier);
    if (!e) break;
    out.push_back(std::move(*e));
  }
  return out;
}

std::vector<Expression> GenerateExpressions(const Scene& scene, core::Rng& rng,
                                            const ExpressionOptions& options) {
  std::vector<Expression> out;
  for (Tier t : AllTiers()) {
    for (Expression& e : GenerateTierExpressions(scene, t, rng, options)) out.push_back(e);
  }
  return out;
}

std::optional<ObjectSpec> MinimalSpec(const Scene& scene, int id, const std::string& part) {
  core::Rng rng(0);
  const ExpressionOptions opt;
  return Grammar(scene, rng, opt).Minimal(id, part);
}

std::optional<Program> ExplicitProgramFor(const Scene& scene, const Target& target) {
  if (target.empty()) return std::nullopt;
  core::Rng rng(0);
  const ExpressionOptions opt;
  Grammar g(scene, rng, opt);
  const int id = target.objects[0];
  if (target.objects.size() > 1) {
    for (bool colour : {false, true}) {
      Program p{g.SpecOf(id, colour, false), target.part, true, Relation::kNone, {}};
      if (g.Matching(p.target, target.part) == target.objects) return p;
    }
    return std::nullopt;
  }
  if (auto spec = g.Minimal(id, target.part))
    return Program{*spec, target.part, false, Relation::kNone, {}};
  for (bool colour : {false, true}) {
    for (Axis a : {Axis::kFromLeft, Axis::kFromTop, Axis::kFromRight, Axis::kFromBottom}) {
      if (auto o = g.Ordinal(id, target.part, g.SpecOf(id, colour, false), a))
        return Program{*o, target.part, false, Relation::kNone, {}};
    }
  }
  if (auto rel = g.Relational({id, target.part}, false)) return rel->first;
  return std::nullopt;
}

}  // namespace tessera::tarot
