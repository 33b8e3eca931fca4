#include "zellige/filler_packing.h"

#include <algorithm>
#include <numeric>

namespace tessera::zellige {

core::StatusOr<std::vector<int>> PackFillers(const std::vector<FillerItem>& fillers,
                                             const std::vector<double>& budget,
                                             std::vector<double>& mem, double cap) {
  const int n = static_cast<int>(budget.size());
  double total = 0;
  for (const auto& f : fillers) total += f.time_s;
  const double target = std::max(total / n, 1e-30);
  std::vector<double> placed(n, 0.0);
  std::vector<int> order(fillers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return fillers[a].time_s > fillers[b].time_s; });
  std::vector<int> out(fillers.size(), -1);
  for (int i : order) {
    const FillerItem& f = fillers[i];
    int best = -1;
    double best_score = 0;
    for (int r = 0; r < n; ++r) {
      if (mem[r] + f.mem_bytes > cap) continue;
      double score =
          std::min((budget[r] - placed[r] - f.time_s) / target, (cap - mem[r] - f.mem_bytes) / cap);
      if (best < 0 || score > best_score) {
        best = r;
        best_score = score;
      }
    }
    if (best < 0) {
      return core::Infeasible("planning failed: filler sequence " + std::to_string(f.seq) +
                              " fits no rank's remaining memory");
    }
    out[i] = best;
    placed[best] += f.time_s;
    mem[best] += f.mem_bytes;
  }
  return out;
}

}  // namespace tessera::zellige
