// Program: what a refscenes referring expression means, as data. A program names a target object
// (category or a generic noun, colour, size, an ordinal rank along an axis), optionally one of its
// parts, optionally a relation to a reference object, and whether it is plural (a group). The
// grammar's texts (tarot/expression_generator.h) and the grammar parser (tarot/query_parser.h)
// both map to programs; Evaluate gives a program's denotation over a list of entities (the
// scene's objects for ground truth, or detections from pixels for the rule reasoner).
//
// Semantics of Evaluate, in order:
//   candidates  the entities the target spec covers (category, colour, size; a generic noun
//               covers every simple shape ("shape") or every entity ("object")), with the part
//               when one is named;
//   relation    the reference (its own spec, ordinal included) must denote one entity; the
//               candidates (the reference excluded) are those in the relation to it, measured
//               between visible centroids: "left of" when the direction's cosine along -x is
//               >= kRelationCosine (likewise right, above (-y), below); "closest to" keeps the
//               nearest candidate;
//   ordinal     rank k (1-based) along the axis ("from the left": increasing x of the centroid);
//   number      plural: every remaining candidate (at least one); singular: exactly one.
// Strict evaluation fails on an ambiguous singular target or reference (FailedPrecondition
// "ambiguous: ...") and on no match (NotFound "no ... matches"); lenient evaluation takes the
// first entity in list order for an ambiguous one (the rule reasoner lists detections best
// first).
// Tiers: E0 category, E1 attributes, E2 ordinal, E3 relational, E4 long (15-30 words), I1/I2
// one and two hops over the fact table (tarot/vocabulary.h).
// Thread-safety: values and pure functions.
#pragma once

#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "tarot/reasoner.h"

namespace tessera::tarot {

enum class Tier { kE0, kE1, kE2, kE3, kE4, kI1, kI2 };
inline constexpr int kTierCount = 7;
const char* TierName(Tier t);  // "E0", ..., "I2"
core::StatusOr<Tier> ParseTier(const std::string& name);
std::vector<Tier> AllTiers();

enum class Relation { kNone, kLeftOf, kRightOf, kAbove, kBelow, kClosestTo };
const char* RelationName(Relation r);  // "none", "left_of", ...
const char* RelationText(Relation r);  // "", "left of", "right of", "above", "below", "closest to"
core::StatusOr<Relation> ParseRelationName(const std::string& name);

enum class Axis { kNone, kFromLeft, kFromRight, kFromTop, kFromBottom };
const char* AxisName(Axis a);  // "none", "left", "right", "top", "bottom"
core::StatusOr<Axis> ParseAxisName(const std::string& name);

// The relation threshold: the direction from the reference to the candidate within ~45 degrees
// of the axis.
inline constexpr double kRelationCosine = 0.7;

struct ObjectSpec {
  std::string category;  // canonical category, "shape" or "object"; never empty in a program
  std::string colour;    // palette name or ""
  std::string size;      // small / medium / large or ""
  int ordinal = 0;       // 1-based rank along `axis`, 0 if none
  Axis axis = Axis::kNone;
  friend bool operator==(const ObjectSpec&, const ObjectSpec&) = default;
};

struct Program {
  ObjectSpec target;
  std::string part;  // "" for the whole object
  bool plural = false;
  Relation relation = Relation::kNone;
  ObjectSpec reference;  // when relation != kNone
  friend bool operator==(const Program&, const Program&) = default;
};

// A denotation: object ids (ascending) and the part ("" for whole objects).
struct Target {
  std::vector<int> objects;
  std::string part;
  bool empty() const { return objects.empty(); }
  friend bool operator==(const Target&, const Target&) = default;
};

struct Expression {
  std::string text;
  Tier tier = Tier::kE0;
  int hops = 0;  // facts of the fact table the text uses
  Program program;
  Target target;  // the stored denotation (ground truth)
};

// What Evaluate sees of an object.
struct Entity {
  std::string category, colour, size;
  double cx = 0, cy = 0;  // visible centroid, pixels
  std::vector<std::string> parts;
};

// The direction cosine of `to` seen from `from` along relation r's axis (-x for left of, +y for
// below; 0 for closest_to or equal centroids).
double DirectionCosine(Relation r, const Entity& from, const Entity& to);
// The sort key of an ordinal axis: x for "from the left", -x for "from the right", ...
double AxisKey(Axis a, const Entity& e);
// Does `spec` (ordinal aside) cover `e`?
bool SpecCovers(const ObjectSpec& spec, const Entity& e);
// Indices into `entities` of the program's denotation (ascending), as described above.
core::StatusOr<std::vector<int>> Evaluate(const std::vector<Entity>& entities,
                                          const Program& program, bool strict = true);

// The canonical explicit text of a program: "the second small red circle from the left", "the
// roof of the house left of the blue star", "the stars".
std::string RenderProgram(const Program& program);
// The noun phrase of a spec without the article: "small red circle", "leftmost star".
std::string RenderSpec(const ObjectSpec& spec, bool plural = false);
// The target contract a perfect reasoner gives for the program (tarot/reasoner.h).
ParsedQuery ToParsedQuery(const Program& program);

core::Json ProgramToJson(const Program& p);
core::StatusOr<Program> ProgramFromJson(const core::Json& j, const std::string& path);
core::Json TargetToJson(const Target& t);
core::StatusOr<Target> TargetFromJson(const core::Json& j, const std::string& path);
core::Json ExpressionToJson(const Expression& e);
core::StatusOr<Expression> ExpressionFromJson(const core::Json& j, const std::string& path);

}  // namespace tessera::tarot
