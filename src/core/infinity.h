// Infinity constants shared by the planners, simulators and kernels (a file-local copy in each
// would clash in unity builds): kInf (double, +inf) and kNegInf (float, -inf, the masked
// score of the attention kernels). Header-only.
#pragma once

#include <limits>

namespace tessera::core {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace tessera::core
