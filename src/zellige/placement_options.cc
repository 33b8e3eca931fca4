#include "zellige/placement_options.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace tessera::zellige {

std::vector<SeqGroup> GroupSequences(const workload::Batch& batch, const CostModel& cost) {
  std::map<int64_t, SeqGroup> by_tokens;
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    SeqGroup& g = by_tokens[batch.sequences[i].tokens];
    g.tokens = batch.sequences[i].tokens;
    g.seqs.push_back(static_cast<int>(i));
  }
  std::vector<SeqGroup> out;
  for (auto& [tokens, g] : by_tokens) {
    g.whole_time_s = cost.WholeTime(tokens);
    g.whole_mem_bytes = cost.MemoryBytes(tokens, {});
    out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(), [](const SeqGroup& a, const SeqGroup& b) {
    return a.whole_time_s > b.whole_time_s;
  });
  return out;
}

std::vector<GroupOption> GroupOptions(int64_t tokens, const CostModel& cost, double mem_cap_bytes) {
  const int n = cost.cluster().num_ranks();
  std::vector<GroupOption> out;
  for (int lambda = 1; lambda <= n && lambda <= tokens; lambda *= 2) {
    std::vector<GroupOption> cands;
    const std::vector<int> ranks = RankBlock{0, lambda}.Ranks();
    for (const ParallelConfig& c : ConfigsOfDegree(lambda, cost.model().heads)) {
      SeqCost sc = cost.Cost(tokens, c, ranks);
      if (sc.mem_bytes > mem_cap_bytes) continue;
      cands.push_back({c, lambda, sc.time_s(), sc.mem_bytes, sc.comm_bytes});
    }
    // Keep, among the configs within 2% of the fastest, the front that trades time for
    // communication bytes (each kept config has fewer bytes than every faster one), and
    // the one with the least memory.
    if (cands.empty()) continue;
    std::stable_sort(cands.begin(), cands.end(), [](const GroupOption& a, const GroupOption& b) {
      return a.time_s < b.time_s || (a.time_s == b.time_s && a.comm_bytes < b.comm_bytes);
    });
    std::vector<GroupOption> kept;
    size_t least_mem = 0;
    for (size_t i = 0; i < cands.size(); ++i) {
      if (cands[i].time_s > cands[0].time_s * 1.02) break;
      if (kept.empty() || cands[i].comm_bytes < kept.back().comm_bytes) kept.push_back(cands[i]);
      if (cands[i].mem_bytes < cands[least_mem].mem_bytes) least_mem = i;
    }
    bool have_least_mem = false;
    for (const GroupOption& k : kept) have_least_mem |= k.config == cands[least_mem].config;
    if (!have_least_mem) kept.push_back(cands[least_mem]);
    out.insert(out.end(), kept.begin(), kept.end());
  }
  return out;
}

int CatalogCut(const std::vector<SeqGroup>& groups) {
  const int m = static_cast<int>(groups.size());
  if (m <= 1) return m;
  // Anchors = groups[0, k), fillers = groups[k, m), 1 <= k <= m - 1.
  std::vector<double> lw(m);
  for (int i = 0; i < m; ++i) lw[i] = std::log(std::max(groups[i].whole_time_s, 1e-30));
  auto ssd = [&](int a, int b) {  // over [a, b)
    if (b - a <= 1) return 0.0;
    double mean = 0;
    for (int i = a; i < b; ++i) mean += lw[i];
    mean /= (b - a);
    double s = 0;
    for (int i = a; i < b; ++i) s += (lw[i] - mean) * (lw[i] - mean);
    return s;
  };
  int best_k = 1;
  double best = INFINITY;
  for (int k = 1; k < m; ++k) {  // ties go to the larger k: fewer fillers
    double v = ssd(0, k) + ssd(k, m);
    if (v <= best + 1e-12) {
      best = v;
      best_k = k;
    }
  }
  return best_k;
}

}  // namespace tessera::zellige
