// The refscenes grammar: referring expressions of a scene, by tier, each with its program and its
// denotation, each denoting a unique non-empty target (checked with strict Evaluate) and clear by
// a margin, so that a careful reader of the image agrees with the program:
//   E0  category                 "the star", "the roof of the house", "the circles"
//   E1  attributes               "the small red star", "the handle of the blue mug"
//   E2  ordinal                  "the second circle from the left", "the topmost house"
//   E3  relational               "the square left of the blue circle"
//   E4  long (15-30 words)       filler + the target with colour and size + a relation (when
//                                one is clear) + a position hint + filler
//   I1  one hop over the facts   "where rain can't reach you" (the roof of the one house),
//                                "the star that is the colour of grass"
//   I2  two hops                 "the part you hold of what you drink coffee from", "the shape
//                                with five points that is the colour of the sky", "the star
//                                left of what you drink coffee from"
// Margins: an ordinal's target lies >= 4% of the shorter side from every other candidate along
// the axis; a directional relation holds for the target with cosine >= 0.85 and for no other
// candidate above 0.5; "closest to" needs the target at most 0.75 x the next distance.
// Surface variety (synonyms, "leftmost" or "first ... from the left", "to the left of") is drawn
// from the rng; the parser (tarot/query_parser.h) reads every form back to the same program.
// Thread-safety: pure functions of their arguments (the rng is the caller's).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "tarot/program.h"
#include "tarot/scene.h"

namespace tessera::tarot {

struct ExpressionOptions {
  int per_tier = 1;           // expressions per tier per scene (distinct texts)
  double plural_rate = 0.15;  // E0/E1: chance of trying a plural (group) expression first
  double part_rate = 0.35;    // chance of trying a part of a thing as the target first
};

// Up to options.per_tier expressions of `tier` (fewer when the scene cannot carry more).
std::vector<Expression> GenerateTierExpressions(const Scene& scene, Tier tier, core::Rng& rng,
                                                const ExpressionOptions& options);
// Every tier in order.
std::vector<Expression> GenerateExpressions(const Scene& scene, core::Rng& rng,
                                            const ExpressionOptions& options);

// The shortest explicit spec that picks out object `id` (with `part`) alone: the category, then
// with colour, with size, with both; nullopt when even that is ambiguous.
std::optional<ObjectSpec> MinimalSpec(const Scene& scene, int id, const std::string& part);
// An explicit program (E1, E2 or E3 style, in that preference) that clearly denotes `target`
// (one object, or a group of a whole category or category + colour), or nullopt.
std::optional<Program> ExplicitProgramFor(const Scene& scene, const Target& target);

}  // namespace tessera::tarot
