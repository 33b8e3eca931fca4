#include "tarot/cv_components.h"

#include <opencv2/imgproc.hpp>
#include <utility>

namespace tessera::tarot {

std::vector<Mask> ComponentMasks(const cv::Mat& on, int connectivity, int min_area) {
  cv::Mat labels, stats, centroids;
  const int n =
      cv::connectedComponentsWithStats(on, labels, stats, centroids, connectivity, CV_32S);
  std::vector<Mask> all(n > 1 ? n - 1 : 0, Mask(on.cols, on.rows));
  for (int y = 0; y < on.rows; ++y) {
    const int* row = labels.ptr<int>(y);
    for (int x = 0; x < on.cols; ++x)
      if (row[x] > 0) all[row[x] - 1].set(x, y);
  }
  std::vector<Mask> kept;
  for (int i = 1; i < n; ++i)
    if (stats.at<int>(i, cv::CC_STAT_AREA) >= min_area) kept.push_back(std::move(all[i - 1]));
  return kept;
}

}  // namespace tessera::tarot
