// The silhouettes of the refscenes categories: which part of an object covers a point given in
// the object's unit frame (u to the right, v down, the object's half-size = 1, so the object lies
// within [-1, 1] x [-1, 1]; a mirrored object flips u first). The scene renderer draws with it
// and the rule reasoner matches measured regions against it (a template, not ground truth).
// Only the refscenes family has silhouettes (HasSilhouette, tarot/vocabulary.h); the functions
// below CHECK that they are given one.
// Thread-safety: pure functions and immutable tables; thread-safe.
#pragma once

#include <vector>

#include "tarot/types.h"

namespace tessera::tarot {

// The index of the part of category `category` (an index into Categories()) that covers
// (u, v), or -1 outside the silhouette; simple shapes have the one part 0.
int SilhouettePart(int category, double u, double v);

// The silhouette's extent in the unit frame (not mirrored): [u0, u1] x [v0, v1].
struct UnitExtent {
  double u0 = 0, v0 = 0, u1 = 0, v1 = 0;
};
UnitExtent SilhouetteExtent(int category);

// The silhouette of `category` (mirrored if asked) stretched so that its extent fills `box`
// (pixel centres inside the stretched silhouette are set), on a width x height mask. With
// `part` >= 0 only that part.
Mask SilhouetteInBox(int category, bool mirrored, const Box& box, int width, int height,
                     int part = -1);

}  // namespace tessera::tarot
