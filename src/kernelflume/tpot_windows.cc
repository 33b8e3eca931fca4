#include "kernelflume/tpot_windows.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/stats.h"

namespace tessera::kernelflume {

std::vector<double> TpotGapsMs(const std::vector<std::vector<double>>& token_times_s) {
  std::vector<double> gaps;
  for (const std::vector<double>& times : token_times_s) {
    for (size_t i = 1; i < times.size(); ++i) gaps.push_back(1e3 * (times[i] - times[i - 1]));
  }
  return gaps;
}

core::StatusOr<TpotWindowReport> TpotByWindow(const std::vector<std::vector<double>>& token_times_s,
                                              double window_s, int64_t min_samples) {
  if (!(window_s > 0) || !std::isfinite(window_s)) {
    return core::InvalidArgument(fmt::format("window_s: got {}, must be > 0", window_s));
  }
  if (min_samples < 1) {
    return core::InvalidArgument(fmt::format("min_samples: got {}, must be >= 1", min_samples));
  }
  std::vector<std::vector<double>> gaps_ms;
  for (const std::vector<double>& times : token_times_s) {
    for (size_t i = 1; i < times.size(); ++i) {
      const size_t w = static_cast<size_t>(std::max(0.0, std::floor(times[i] / window_s)));
      if (gaps_ms.size() <= w) gaps_ms.resize(w + 1);
      gaps_ms[w].push_back(1e3 * (times[i] - times[i - 1]));
    }
  }
  TpotWindowReport rep;
  for (size_t w = 0; w < gaps_ms.size(); ++w) {
    TpotWindow win;
    win.start_s = static_cast<double>(w) * window_s;
    win.samples = static_cast<int64_t>(gaps_ms[w].size());
    if (!gaps_ms[w].empty()) {
      win.p50_ms = core::Percentile(gaps_ms[w], 50);
      win.p99_ms = core::Percentile(gaps_ms[w], 99);
      win.max_ms = *std::max_element(gaps_ms[w].begin(), gaps_ms[w].end());
    }
    win.counted = win.samples >= min_samples;
    if (win.counted) {
      const int i = static_cast<int>(w);
      if (rep.lowest < 0 || win.p99_ms < rep.windows[rep.lowest].p99_ms) rep.lowest = i;
      if (rep.highest < 0 || win.p99_ms > rep.windows[rep.highest].p99_ms) rep.highest = i;
    }
    rep.windows.push_back(win);
  }
  if (rep.lowest >= 0 && rep.lowest != rep.highest && rep.windows[rep.lowest].p99_ms > 0) {
    rep.flatness = rep.windows[rep.highest].p99_ms / rep.windows[rep.lowest].p99_ms;
  } else if (rep.lowest >= 0) {
    int counted = 0;
    for (const TpotWindow& w : rep.windows) counted += w.counted ? 1 : 0;
    rep.flatness = counted >= 2 ? 1.0 : 0.0;
  }
  return rep;
}

}  // namespace tessera::kernelflume
