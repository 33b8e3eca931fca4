#include "tarot/program.h"

#include <algorithm>
#include <cmath>

#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

constexpr const char* kTierNames[kTierCount] = {"E0", "E1", "E2", "E3", "E4", "I1", "I2"};

}  // namespace

double DirectionCosine(Relation r, const Entity& from, const Entity& to) {
  const double dx = to.cx - from.cx, dy = to.cy - from.cy;
  const double d = std::hypot(dx, dy);
  if (d == 0) return 0;
  switch (r) {
    case Relation::kLeftOf:
      return -dx / d;
    case Relation::kRightOf:
      return dx / d;
    case Relation::kAbove:
      return -dy / d;
    case Relation::kBelow:
      return dy / d;
    default:
      return 0;
  }
}

double AxisKey(Axis a, const Entity& e) {
  switch (a) {
    case Axis::kFromLeft:
      return e.cx;
    case Axis::kFromRight:
      return -e.cx;
    case Axis::kFromTop:
      return e.cy;
    case Axis::kFromBottom:
      return -e.cy;
    default:
      return 0;
  }
}

namespace {

bool HasPart(const Entity& e, const std::string& part) {
  return part.empty() || std::find(e.parts.begin(), e.parts.end(), part) != e.parts.end();
}

// Candidates of `spec` (with `part`), then its ordinal.
core::StatusOr<std::vector<int>> Select(const std::vector<Entity>& entities, const ObjectSpec& spec,
                                        const std::string& part, std::vector<int> among) {
  std::vector<int> c;
  for (int i : among)
    if (SpecCovers(spec, entities[i]) && HasPart(entities[i], part)) c.push_back(i);
  if (spec.ordinal <= 0) return c;
  if (spec.axis == Axis::kNone) {
    return core::InvalidArgument("program: ordinal " + std::to_string(spec.ordinal) +
                                 " without an axis");
  }
  std::stable_sort(c.begin(), c.end(), [&](int a, int b) {
    return AxisKey(spec.axis, entities[a]) < AxisKey(spec.axis, entities[b]);
  });
  if (spec.ordinal > static_cast<int>(c.size())) return std::vector<int>{};
  return std::vector<int>{c[spec.ordinal - 1]};
}

std::string Describe(const ObjectSpec& s, bool plural) {
  return "'the " + RenderSpec(s, plural) + "'";
}

}  // namespace

const char* TierName(Tier t) { return kTierNames[static_cast<int>(t)]; }

core::StatusOr<Tier> ParseTier(const std::string& name) {
  for (int i = 0; i < kTierCount; ++i)
    if (name == kTierNames[i]) return static_cast<Tier>(i);
  return core::InvalidArgument("tier: got '" + name +
                               "', must be one of E0, E1, E2, E3, E4, I1, I2");
}

std::vector<Tier> AllTiers() {
  std::vector<Tier> t;
  for (int i = 0; i < kTierCount; ++i) t.push_back(static_cast<Tier>(i));
  return t;
}

const char* RelationName(Relation r) {
  switch (r) {
    case Relation::kNone:
      return "none";
    case Relation::kLeftOf:
      return "left_of";
    case Relation::kRightOf:
      return "right_of";
    case Relation::kAbove:
      return "above";
    case Relation::kBelow:
      return "below";
    case Relation::kClosestTo:
      return "closest_to";
  }
  return "?";
}

const char* RelationText(Relation r) {
  switch (r) {
    case Relation::kNone:
      return "";
    case Relation::kLeftOf:
      return "left of";
    case Relation::kRightOf:
      return "right of";
    case Relation::kAbove:
      return "above";
    case Relation::kBelow:
      return "below";
    case Relation::kClosestTo:
      return "closest to";
  }
  return "?";
}

core::StatusOr<Relation> ParseRelationName(const std::string& name) {
  for (Relation r : {Relation::kNone, Relation::kLeftOf, Relation::kRightOf, Relation::kAbove,
                     Relation::kBelow, Relation::kClosestTo})
    if (name == RelationName(r)) return r;
  return core::InvalidArgument("relation: got '" + name +
                               "', must be one of none, left_of, right_of, above, below, "
                               "closest_to");
}

const char* AxisName(Axis a) {
  switch (a) {
    case Axis::kNone:
      return "none";
    case Axis::kFromLeft:
      return "left";
    case Axis::kFromRight:
      return "right";
    case Axis::kFromTop:
      return "top";
    case Axis::kFromBottom:
      return "bottom";
  }
  return "?";
}

core::StatusOr<Axis> ParseAxisName(const std::string& name) {
  for (Axis a : {Axis::kNone, Axis::kFromLeft, Axis::kFromRight, Axis::kFromTop, Axis::kFromBottom})
    if (name == AxisName(a)) return a;
  return core::InvalidArgument("axis: got '" + name +
                               "', must be one of none, left, right, top, bottom");
}

bool SpecCovers(const ObjectSpec& spec, const Entity& e) {
  if (!CategoryCovers(spec.category, e.category)) return false;
  if (!spec.colour.empty() && spec.colour != e.colour) return false;
  if (!spec.size.empty() && spec.size != e.size) return false;
  return true;
}

core::StatusOr<std::vector<int>> Evaluate(const std::vector<Entity>& entities,
                                          const Program& program, bool strict) {
  std::vector<int> all(entities.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  std::vector<int> among = all;
  if (program.relation != Relation::kNone) {
    ASSIGN_OR_RETURN(std::vector<int> refs, Select(entities, program.reference, "", all));
    if (refs.empty())
      return core::NotFound("no object matches the reference " +
                            Describe(program.reference, false));
    if (refs.size() > 1 && strict) {
      return core::FailedPrecondition("ambiguous: " + std::to_string(refs.size()) +
                                      " objects match the reference " +
                                      Describe(program.reference, false));
    }
    const Entity& ref = entities[refs[0]];
    ObjectSpec plain = program.target;
    plain.ordinal = 0;
    ASSIGN_OR_RETURN(std::vector<int> cands, Select(entities, plain, program.part, all));
    cands.erase(std::remove(cands.begin(), cands.end(), refs[0]), cands.end());
    among.clear();
    if (program.relation == Relation::kClosestTo) {
      double best = 0;
      for (int c : cands) {
        const double d = std::hypot(entities[c].cx - ref.cx, entities[c].cy - ref.cy);
        if (among.empty() || d < best) {
          among = {c};
          best = d;
        } else if (d == best) {
          among.push_back(c);
        }
      }
    } else {
      for (int c : cands)
        if (DirectionCosine(program.relation, ref, entities[c]) >= kRelationCosine)
          among.push_back(c);
    }
  }
  ASSIGN_OR_RETURN(std::vector<int> out, Select(entities, program.target, program.part, among));
  if (out.empty()) {
    return core::NotFound(
        "no object matches " + Describe(program.target, program.plural) +
        (program.relation != Relation::kNone
             ? std::string(" ") + RelationText(program.relation) + " its reference"
             : ""));
  }
  if (!program.plural && out.size() > 1) {
    if (strict) {
      return core::FailedPrecondition("ambiguous: " + std::to_string(out.size()) +
                                      " objects match " + Describe(program.target, false));
    }
    out.erase(out.begin() + 1, out.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string RenderSpec(const ObjectSpec& s, bool plural) {
  std::vector<std::string> w;
  bool most = false;
  if (s.ordinal == 1 && s.axis != Axis::kNone) {
    w.push_back(std::string(AxisName(s.axis)) + "most");
    most = true;
  } else if (s.ordinal > 0) {
    for (const Phrase& p : OrdinalWords())
      if (p.value == std::to_string(s.ordinal)) w.push_back(p.text);
  }
  if (!s.size.empty()) w.push_back(s.size);
  if (!s.colour.empty()) w.push_back(s.colour);
  if (plural) {
    const int ci = CategoryIndex(s.category);
    w.push_back(ci >= 0 ? Categories()[ci].plural : s.category + "s");
  } else {
    w.push_back(s.category);
  }
  if (s.ordinal > 0 && !most && s.axis != Axis::kNone) {
    w.push_back("from the");
    w.push_back(AxisName(s.axis));
  }
  return JoinWords(w);
}

std::string RenderProgram(const Program& p) {
  std::string out = "the ";
  if (!p.part.empty()) out += p.part + " of the ";
  out += RenderSpec(p.target, p.plural);
  if (p.relation != Relation::kNone) {
    out += std::string(" ") + RelationText(p.relation) + " the " + RenderSpec(p.reference);
  }
  return out;
}

ParsedQuery ToParsedQuery(const Program& p) {
  ParsedQuery q;
  std::vector<std::string> name;
  if (!p.part.empty()) name = {p.part, "of"};
  if (!p.target.size.empty() && p.part.empty()) name.push_back(p.target.size);
  if (!p.target.colour.empty()) name.push_back(p.target.colour);
  name.push_back(p.plural && CategoryIndex(p.target.category) >= 0
                     ? Categories()[CategoryIndex(p.target.category)].plural
                     : p.target.category);
  q.target_name = JoinWords(name);
  q.scope = !p.part.empty() ? Scope::kPart : p.plural ? Scope::kGroup : Scope::kWholeObject;
  if (p.relation != Relation::kNone) {
    q.refer_objects.push_back(RenderSpec(p.reference));
    q.relation = RelationText(p.relation);
  }
  if (!p.target.size.empty()) q.attributes.push_back(p.target.size);
  if (!p.target.colour.empty()) q.attributes.push_back(p.target.colour);
  q.ordinal = p.target.ordinal;
  switch (p.target.axis) {
    case Axis::kFromLeft:
      q.ordinal_axis = "left-to-right";
      break;
    case Axis::kFromRight:
      q.ordinal_axis = "right-to-left";
      break;
    case Axis::kFromTop:
      q.ordinal_axis = "top-to-bottom";
      break;
    case Axis::kFromBottom:
      q.ordinal_axis = "bottom-to-top";
      break;
    case Axis::kNone:
      break;
  }
  return q;
}

namespace {

core::Json SpecToJson(const ObjectSpec& s) {
  core::Json j = {{"category", s.category}, {"colour", s.colour}, {"size", s.size}};
  if (s.ordinal > 0) {
    j["ordinal"] = s.ordinal;
    j["axis"] = AxisName(s.axis);
  }
  return j;
}

core::StatusOr<ObjectSpec> SpecFromJson(const core::Json& j, const std::string& path) {
  RETURN_IF_ERROR(core::CheckKnownKeys(j, path, {"category", "colour", "size", "ordinal", "axis"}));
  ObjectSpec s;
  ASSIGN_OR_RETURN(s.category, core::GetString(j, path, "category"));
  if (CategoryIndex(s.category) < 0 && !IsGenericCategory(s.category)) {
    return core::InvalidArgument(core::JoinPath(path, "category") + ": got '" + s.category +
                                 "', must be a refscenes category, 'shape' or 'object'");
  }
  ASSIGN_OR_RETURN(s.colour, core::GetString(j, path, "colour"));
  if (!s.colour.empty() && ColourIndex(s.colour) < 0) {
    return core::InvalidArgument(core::JoinPath(path, "colour") + ": got '" + s.colour +
                                 "', must be a palette colour or empty");
  }
  ASSIGN_OR_RETURN(s.size, core::GetString(j, path, "size"));
  if (!s.size.empty() && SizeIndex(s.size) < 0) {
    return core::InvalidArgument(core::JoinPath(path, "size") + ": got '" + s.size +
                                 "', must be small, medium, large or empty");
  }
  if (j.contains("ordinal")) {
    ASSIGN_OR_RETURN(const int64_t ord, core::GetIntInRange(j, path, "ordinal", 1, 64));
    s.ordinal = static_cast<int>(ord);
    ASSIGN_OR_RETURN(const std::string axis, core::GetString(j, path, "axis"));
    ASSIGN_OR_RETURN(s.axis, ParseAxisName(axis));
    if (s.axis == Axis::kNone) {
      return core::InvalidArgument(core::JoinPath(path, "axis") +
                                   ": got 'none', an ordinal needs left, right, top or bottom");
    }
  }
  return s;
}

}  // namespace

core::Json ProgramToJson(const Program& p) {
  core::Json j = {{"target", SpecToJson(p.target)}, {"part", p.part}, {"plural", p.plural}};
  if (p.relation != Relation::kNone) {
    j["relation"] = RelationName(p.relation);
    j["reference"] = SpecToJson(p.reference);
  }
  return j;
}

core::StatusOr<Program> ProgramFromJson(const core::Json& j, const std::string& path) {
  RETURN_IF_ERROR(
      core::CheckKnownKeys(j, path, {"target", "part", "plural", "relation", "reference"}));
  Program p;
  ASSIGN_OR_RETURN(const core::Json* t, core::Member(j, path, "target"));
  ASSIGN_OR_RETURN(p.target, SpecFromJson(*t, core::JoinPath(path, "target")));
  ASSIGN_OR_RETURN(p.part, core::GetString(j, path, "part"));
  if (!p.part.empty() &&
      std::find(PartNames().begin(), PartNames().end(), p.part) == PartNames().end()) {
    return core::InvalidArgument(core::JoinPath(path, "part") + ": got '" + p.part +
                                 "', must be a part name (roof, handle, ...) or empty");
  }
  ASSIGN_OR_RETURN(const core::Json* plural, core::Member(j, path, "plural"));
  if (!plural->is_boolean()) {
    return core::InvalidArgument(core::JoinPath(path, "plural") + ": got " +
                                 core::ShowJson(*plural) + ", must be true or false");
  }
  p.plural = plural->get<bool>();
  if (j.contains("relation")) {
    ASSIGN_OR_RETURN(const std::string rel, core::GetString(j, path, "relation"));
    ASSIGN_OR_RETURN(p.relation, ParseRelationName(rel));
    if (p.relation != Relation::kNone) {
      ASSIGN_OR_RETURN(const core::Json* r, core::Member(j, path, "reference"));
      ASSIGN_OR_RETURN(p.reference, SpecFromJson(*r, core::JoinPath(path, "reference")));
    }
  }
  return p;
}

core::Json TargetToJson(const Target& t) { return {{"objects", t.objects}, {"part", t.part}}; }

core::StatusOr<Target> TargetFromJson(const core::Json& j, const std::string& path) {
  RETURN_IF_ERROR(core::CheckKnownKeys(j, path, {"objects", "part"}));
  Target t;
  ASSIGN_OR_RETURN(const core::Json* objs, core::Member(j, path, "objects"));
  if (!objs->is_array()) {
    return core::InvalidArgument(core::JoinPath(path, "objects") + ": got " +
                                 core::ShowJson(*objs) + ", must be an array of object ids");
  }
  for (const core::Json& o : *objs) {
    if (!o.is_number_integer() || o.get<int64_t>() < 0 || o.get<int64_t>() > 1000) {
      return core::InvalidArgument(core::JoinPath(path, "objects") + ": got " + core::ShowJson(o) +
                                   ", must be an object id in [0, 1000]");
    }
    t.objects.push_back(o.get<int>());
  }
  ASSIGN_OR_RETURN(t.part, core::GetString(j, path, "part"));
  return t;
}

core::Json ExpressionToJson(const Expression& e) {
  return {{"text", e.text},
          {"tier", TierName(e.tier)},
          {"hops", e.hops},
          {"program", ProgramToJson(e.program)},
          {"target", TargetToJson(e.target)}};
}

core::StatusOr<Expression> ExpressionFromJson(const core::Json& j, const std::string& path) {
  RETURN_IF_ERROR(core::CheckKnownKeys(j, path, {"text", "tier", "hops", "program", "target"}));
  Expression e;
  ASSIGN_OR_RETURN(e.text, core::GetString(j, path, "text"));
  ASSIGN_OR_RETURN(const std::string tier, core::GetString(j, path, "tier"));
  auto t = ParseTier(tier);
  if (!t.ok()) return t.status().WithPrefix(path);
  e.tier = *t;
  ASSIGN_OR_RETURN(const int64_t hops, core::GetIntInRange(j, path, "hops", 0, 2));
  e.hops = static_cast<int>(hops);
  ASSIGN_OR_RETURN(const core::Json* p, core::Member(j, path, "program"));
  ASSIGN_OR_RETURN(e.program, ProgramFromJson(*p, core::JoinPath(path, "program")));
  ASSIGN_OR_RETURN(const core::Json* tj, core::Member(j, path, "target"));
  ASSIGN_OR_RETURN(e.target, TargetFromJson(*tj, core::JoinPath(path, "target")));
  return e;
}

}  // namespace tessera::tarot
