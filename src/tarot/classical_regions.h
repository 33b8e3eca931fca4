// What the `classical` segmenter sees in an image, from pixels and the lexicon alone
// (tarot/classical_lexicon.h): colour regions, foreground blobs, and objects with their parts.
//   regions  4-connected components of each quantised colour (cv::connectedComponentsWithStats),
//            those of at least `min_area` pixels;
//   blobs    4-connected components of the foreground (every non-background pixel): an object
//            with parts of several colours is one blob, and so are objects that touch;
//   objects  per blob, the reading with the lowest cost (the area-weighted mean category
//            distance of its objects, tarot/classical_lexicon.h's RankCategories) among: the
//            blob as one object (its nearest thing when it has several regions; a one-region
//            blob takes its nearest category, a cup being one colour), every region a simple
//            shape, one region peeled off as a shape with the rest a thing, and -- for a
//            one-region blob whose distance exceeds 0.15 (two touching objects of one colour)
//            -- the region cut by cv::watershed on its distance transform, seeded by the
//            components above 0.7, 0.5 or 0.35 of its maximum. Ties: the earlier reading.
//            A thing's parts come from its silhouette stretched over its box (the mirroring
//            with the higher IoU): each region goes whole to the part holding >= 60% of its
//            pixels, otherwise pixel by pixel.
//   per object: the category and its distance, the runner-up category and distance, colour
//            (a shape: its region's; a thing: the dominant colour of its main part), size class
//            (the half-size its box implies for its category, as a fraction of the shorter side),
//            mask, part masks (things), and a confidence 1 / (1 + (distance / 0.2)^2).
// Deterministic: components are numbered in row-major order of their first pixel.
// Thread-safety: pure function.
#pragma once

#include <string>
#include <vector>

#include "tarot/types.h"

namespace tessera::tarot {

struct ClassicalObject {
  int category = -1;  // index into Categories()
  double distance = 0;
  int runner_up = -1;  // the next nearest category of the same kind (shape or thing), or -1
  double runner_up_distance = 0;
  double confidence = 0;
  int colour = -1;  // palette index
  int size = 0;     // size class
  Mask mask;
  std::vector<std::string> part_names;  // things: Categories()[category].parts
  std::vector<Mask> parts;              // one per part name (possibly empty)
  int blob = 0;
  // The mask of `part` ("" for the whole object); an empty mask when it has no such part.
  Mask PartMask(const std::string& part) const;
};

struct ClassicalAnalysis {
  int width = 0, height = 0;
  std::vector<int> labels;         // per pixel: palette index or kBackground
  std::vector<Mask> regions;       // colour regions
  std::vector<int> region_colour;  // per region
  std::vector<Mask> blobs;
  std::vector<ClassicalObject> objects;
};

double Confidence(double distance);

ClassicalAnalysis AnalyseImage(const Image& image, int min_area);

}  // namespace tessera::tarot
