// TpotWindows: per-window TPOT statistics of a serving run -- what `bench tpot` and `bench
// scale` report and judge "flat" by.
//
// Input: for each request, the times (seconds since the run's start, increasing) at which its
// tokens reached the client. A TPOT sample is the gap between two consecutive tokens of one
// request; it belongs to the window holding the later token: window k covers
// [k * window_s, (k + 1) * window_s). Per window: the number of samples, p50 / p99 / max
// (core::Percentile, linear interpolation). A window counts for flatness when it has at least
// min_samples samples; flatness = max over counted windows of p99 / min over counted windows
// of p99 (1 = perfectly flat; 0 when fewer than two windows count).
// Errors: InvalidArgument for window_s <= 0 or min_samples < 1. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"

namespace tessera::kernelflume {

struct TpotWindow {
  double start_s = 0;
  int64_t samples = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
  bool counted = false;  // samples >= min_samples
};

struct TpotWindowReport {
  std::vector<TpotWindow> windows;  // from window 0 to the last token's window
  double flatness = 0;              // max p99 / min p99 over counted windows
  int lowest = -1, highest = -1;    // their indices (-1: none)
};

// Every TPOT sample of the run (ms), request by request.
std::vector<double> TpotGapsMs(const std::vector<std::vector<double>>& token_times_s);

core::StatusOr<TpotWindowReport> TpotByWindow(const std::vector<std::vector<double>>& token_times_s,
                                              double window_s, int64_t min_samples);

}  // namespace tessera::kernelflume
