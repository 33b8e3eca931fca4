#include "kernelflume/spanning_gap.h"

#include <algorithm>

#include "core/rng.h"
#include "core/stats.h"

namespace tessera::kernelflume {

std::optional<double> SpanningGapS(std::span<const double> token_times_s, double t_s) {
  const auto next = std::upper_bound(token_times_s.begin(), token_times_s.end(), t_s);
  if (next == token_times_s.begin() || next == token_times_s.end()) return std::nullopt;
  return *next - *(next - 1);
}

std::vector<UnaffectedGaps> UnaffectedSpanningGaps(
    std::span<const std::vector<double>> token_times_s, std::span<const KillInstant> kills) {
  auto hits = [&](size_t kill, size_t request) {
    const std::vector<size_t>& a = kills[kill].affected;
    return std::find(a.begin(), a.end(), request) != a.end();
  };
  std::vector<UnaffectedGaps> out(kills.size());
  for (size_t k = 0; k < kills.size(); ++k) {
    for (size_t r = 0; r < token_times_s.size(); ++r) {
      if (hits(k, r)) continue;
      const std::vector<double>& t = token_times_s[r];
      const auto next = std::upper_bound(t.begin(), t.end(), kills[k].t_s);
      if (next == t.begin() || next == t.end()) continue;
      const double prev_s = *(next - 1), next_s = *next;
      bool overlapped = false;
      for (size_t j = 0; j < kills.size() && !overlapped; ++j) {
        if (j == k || !hits(j, r)) continue;
        // An earlier kill it has not produced a token since, or a later one before its next.
        overlapped = j < k ? kills[j].t_s >= prev_s : kills[j].t_s < next_s;
      }
      if (overlapped) {
        ++out[k].overlapped;
      } else {
        out[k].gaps_s.push_back(next_s - prev_s);
      }
    }
  }
  return out;
}

std::vector<double> PlaceboInstants(std::span<const std::vector<double>> token_times_s,
                                    std::span<const TimeWindow> exclude, int count, uint64_t seed) {
  std::vector<double> all;
  for (const std::vector<double>& r : token_times_s) all.insert(all.end(), r.begin(), r.end());
  std::sort(all.begin(), all.end());
  std::vector<double> eligible;
  for (size_t i = 1; i + 1 < all.size(); ++i) {
    const double t = all[i];
    const bool excluded = std::any_of(exclude.begin(), exclude.end(), [t](const TimeWindow& w) {
      return t >= w.begin_s && t <= w.end_s;
    });
    if (!excluded && (eligible.empty() || eligible.back() != t)) eligible.push_back(t);
  }
  // A seeded partial Fisher-Yates shuffle picks `count` distinct ones.
  core::Rng rng(seed);
  const size_t take = std::min(eligible.size(), static_cast<size_t>(std::max(count, 0)));
  for (size_t i = 0; i < take; ++i) {
    const size_t j = i + static_cast<size_t>(rng.Below(eligible.size() - i));
    std::swap(eligible[i], eligible[j]);
  }
  eligible.resize(take);
  std::sort(eligible.begin(), eligible.end());
  return eligible;
}

MedianBand MedianNoiseBand(std::span<const double> pool, int n, int draws, uint64_t seed) {
  MedianBand band;
  if (pool.empty() || n < 1 || draws < 1) return band;
  band.n = std::min(n, static_cast<int>(pool.size()));
  band.draws = draws;
  core::Rng rng(seed);
  std::vector<double> v(pool.begin(), pool.end()), medians;
  for (int d = 0; d < draws; ++d) {
    for (size_t i = 0; i < static_cast<size_t>(band.n); ++i) {
      const size_t j = i + static_cast<size_t>(rng.Below(v.size() - i));
      std::swap(v[i], v[j]);
    }
    medians.push_back(core::Median(std::span(v).first(static_cast<size_t>(band.n))));
  }
  band.p5 = core::Percentile(medians, 5);
  band.p50 = core::Percentile(medians, 50);
  band.p95 = core::Percentile(medians, 95);
  return band;
}

}  // namespace tessera::kernelflume
