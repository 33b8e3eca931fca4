// Pixel judges of the rule reasoner: what the image alone says about colours and shapes, with
// the refscenes vocabulary (palette, silhouettes) as the only knowledge; no ground truth.
//   ColourLabels      per pixel, the nearest palette colour (allowing a brightness scale in
//                     [0.8, 1.2], which covers the textures) or -1 for background (every channel
//                     >= 190: the pale backgrounds).
//   ColourStats       the fraction of a mask's pixels per palette colour and on background, and
//                     the dominant colour.
//   MatchSilhouette   the category (and mirroring) whose silhouette, stretched over the mask's
//                     box, has the highest IoU with the mask, among simple shapes or all.
//   DetectObjects     candidate objects: each 4-connected foreground blob that a thing's
//                     silhouette fits (IoU >= 0.7) is a thing, its parts the silhouette's parts
//                     inside it; else every single-colour component of >= 12 pixels that a simple
//                     shape fits (IoU >= 0.55) is that shape. Colour: the main part's dominant
//                     colour; size: the half-size the silhouette implies; sorted by fit, best
//                     first.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "tarot/program.h"
#include "tarot/types.h"

namespace tessera::tarot {

std::vector<int> ColourLabels(const Image& image);

struct ColourStats {
  std::vector<double> fraction;  // per palette colour
  double background = 0;
  int dominant = -1;  // palette index, -1 for an empty mask or all background
};
ColourStats StatsOf(const std::vector<int>& labels, const Mask& mask);

struct SilhouetteMatch {
  int category = -1;
  bool mirrored = false;
  double iou = 0;
};
SilhouetteMatch MatchSilhouette(const Mask& mask, bool shapes_only);

struct Detection {
  std::string category, colour, size;
  Mask mask;
  double fit = 0;  // silhouette IoU
  Point centroid;
  std::vector<std::pair<std::string, Mask>> parts;  // things only
  Entity AsEntity() const;
  // The mask of `part` ("" for the whole), or an empty mask when it has no such part.
  Mask PartMask(const std::string& part) const;
};
std::vector<Detection> DetectObjects(const Image& image);

}  // namespace tessera::tarot
