// Elapsed wall time on the steady clock since a start instant, in seconds or milliseconds.
// Header-only; shared by the planners, solvers and servers that report their run times.
#pragma once

#include <chrono>

namespace tessera::core {

inline double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
inline double MillisecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace tessera::core
