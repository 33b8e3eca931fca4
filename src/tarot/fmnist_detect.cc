#include "tarot/fmnist_detect.h"

#include <algorithm>
#include <opencv2/imgproc.hpp>

#include "tarot/classical_lexicon.h"
#include "tarot/cv_components.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {

core::StatusOr<std::vector<ItemRegion>> FindItems(const Image& image,
                                                  const std::vector<int>& labels, int min_area) {
  ASSIGN_OR_RETURN(std::shared_ptr<const FmnistClassifier> classifier, SharedFmnistClassifier());
  const int w = image.width, h = image.height;
  const int n_colours = static_cast<int>(Palette().size());
  const cv::Mat square = cv::getStructuringElement(cv::MORPH_RECT, cv::Size(3, 3));
  std::vector<ItemRegion> out;
  for (int c = 0; c < n_colours; ++c) {
    cv::Mat on = cv::Mat::zeros(h, w, CV_8U);
    Mask colour(w, h);
    bool any = false;
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        if (labels[static_cast<size_t>(y) * w + x] != c) continue;
        on.at<uint8_t>(y, x) = 255;
        colour.set(x, y);
        any = true;
      }
    }
    if (!any) continue;
    cv::Mat closed;
    cv::morphologyEx(on, closed, cv::MORPH_CLOSE, square);
    for (const Mask& component : ComponentMasks(closed, 8)) {
      ItemRegion r;
      r.mask = component & colour;
      if (r.mask.count() < min_area) continue;
      r.colour = c;
      const ClassProbabilities p = classifier->Probabilities(RegionInput(image, r.mask));
      for (int k = 0; k < kFmnistClasses; ++k) {
        if (r.label < 0 || p[k] > p[r.label]) {
          r.runner_up = r.label;
          r.label = k;
        } else if (r.runner_up < 0 || p[k] > p[r.runner_up]) {
          r.runner_up = k;
        }
      }
      r.probability = p[r.label];
      r.runner_up_probability = p[r.runner_up];
      const Box box = BoxOf(r.mask);
      const double half = std::max(box.x1 - box.x0, box.y1 - box.y0) / (2 * kItemFrameFill);
      r.size = SizeClassOf(half / std::min(w, h));
      out.push_back(std::move(r));
    }
  }
  return out;
}

core::StatusOr<ClassicalAnalysis> AnalyseFmnistImage(const Image& image, int min_area) {
  ClassicalAnalysis a;
  a.width = image.width;
  a.height = image.height;
  a.labels = QuantiseImage(image);
  ASSIGN_OR_RETURN(std::vector<ItemRegion> items, FindItems(image, a.labels, min_area));
  Mask fg(image.width, image.height);
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width; ++x)
      if (a.labels[static_cast<size_t>(y) * image.width + x] != kBackground) fg.set(x, y);
  a.blobs = {fg};
  for (ItemRegion& r : items) {
    a.regions.push_back(r.mask);
    a.region_colour.push_back(r.colour);
    ClassicalObject o;
    o.category = FashionCategory(r.label);
    o.distance = 1 - r.probability;
    o.runner_up = FashionCategory(r.runner_up);
    o.runner_up_distance = 1 - r.runner_up_probability;
    o.confidence = r.probability;
    o.colour = r.colour;
    o.size = r.size;
    o.mask = std::move(r.mask);
    a.objects.push_back(std::move(o));
  }
  return a;
}

}  // namespace tessera::tarot
