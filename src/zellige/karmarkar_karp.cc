#include "zellige/karmarkar_karp.h"

#include <algorithm>
#include <numeric>
#include <queue>

#include "core/check.h"

namespace tessera::zellige {
namespace {

// A partial partition: `ways` subsets, each with its sum and items, sorted by sum desc.
struct Partial {
  std::vector<double> sums;
  std::vector<std::vector<int>> items;
  double spread() const { return sums.front() - sums.back(); }
};

}  // namespace

std::vector<int> KarmarkarKarp(const std::vector<double>& weights, int ways) {
  CHECK_GE(ways, 1);
  std::vector<int> out(weights.size(), 0);
  if (weights.empty() || ways == 1) return out;
  std::vector<Partial> pool;
  pool.reserve(weights.size());
  auto cmp = [&](int a, int b) {
    if (pool[a].spread() != pool[b].spread()) return pool[a].spread() < pool[b].spread();
    return a > b;  // deterministic ties: earlier first
  };
  std::priority_queue<int, std::vector<int>, decltype(cmp)> heap(cmp);
  for (size_t i = 0; i < weights.size(); ++i) {
    Partial p;
    p.sums.assign(ways, 0.0);
    p.items.assign(ways, {});
    p.sums[0] = weights[i];
    p.items[0].push_back(static_cast<int>(i));
    pool.push_back(std::move(p));
    heap.push(static_cast<int>(i));
  }
  while (heap.size() > 1) {
    int a = heap.top();
    heap.pop();
    int b = heap.top();
    heap.pop();
    Partial& A = pool[a];
    Partial& B = pool[b];
    // Pair A's largest with B's smallest.
    Partial m;
    m.sums.resize(ways);
    m.items.resize(ways);
    for (int j = 0; j < ways; ++j) {
      int bj = ways - 1 - j;
      m.sums[j] = A.sums[j] + B.sums[bj];
      m.items[j] = std::move(A.items[j]);
      m.items[j].insert(m.items[j].end(), B.items[bj].begin(), B.items[bj].end());
    }
    std::vector<int> idx(ways);
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int x, int y) { return m.sums[x] > m.sums[y]; });
    Partial sorted;
    sorted.sums.resize(ways);
    sorted.items.resize(ways);
    for (int j = 0; j < ways; ++j) {
      sorted.sums[j] = m.sums[idx[j]];
      sorted.items[j] = std::move(m.items[idx[j]]);
    }
    A = Partial{};
    B = Partial{};
    pool.push_back(std::move(sorted));
    heap.push(static_cast<int>(pool.size() - 1));
  }
  const Partial& final_p = pool[heap.top()];
  for (int j = 0; j < ways; ++j)
    for (int i : final_p.items[j]) out[i] = j;
  return out;
}

}  // namespace tessera::zellige
