// Multiway Karmarkar-Karp (largest differencing method): partitions items with
// non-negative weights into `ways` subsets with nearly equal sums. O(n * ways log ways)
// plus heap operations. Returns the subset index of every item. Pure; thread-safe.
#pragma once

#include <vector>

namespace tessera::zellige {

std::vector<int> KarmarkarKarp(const std::vector<double>& weights, int ways);

}  // namespace tessera::zellige
