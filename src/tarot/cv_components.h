// Connected components of a binary OpenCV image as tarot masks: the one conversion the pixels-only
// backends (the classical segmenter's regions, the fmnist item finder) share.
// Thread-safety: pure; thread-safe.
#pragma once

#include <opencv2/core.hpp>
#include <vector>

#include "tarot/types.h"

namespace tessera::tarot {

// The components (`connectivity` 4 or 8) of the pixels where `on` (CV_8U, non-zero = set) is
// set, each of at least `min_area` pixels, as masks of on's size in scan order of their first
// pixel (OpenCV numbers its labels so).
std::vector<Mask> ComponentMasks(const cv::Mat& on, int connectivity, int min_area = 1);

}  // namespace tessera::tarot
