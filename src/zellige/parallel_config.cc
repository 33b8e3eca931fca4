#include "zellige/parallel_config.h"

namespace tessera::zellige {

std::string ParallelConfig::ToString() const {
  std::string s = "(";  // appended piecewise: GCC 12 warns (-Wrestrict) on "lit" + string&&
  s += std::to_string(q);
  s += ',';
  s += std::to_string(h);
  s += ',';
  s += std::to_string(k);
  s += ')';
  return s;
}

core::Status ValidateConfig(const ParallelConfig& c, int heads, int ranks) {
  if (c.q < 1 || c.h < 1 || c.k < 1) {
    return core::InvalidArgument("config " + c.ToString() + ": q, h and k must be >= 1");
  }
  if (heads % c.h != 0) {
    return core::InvalidArgument("config " + c.ToString() + ": h = " + std::to_string(c.h) +
                                 " must divide the head count " + std::to_string(heads));
  }
  if (c.degree() != ranks) {
    return core::InvalidArgument("config " + c.ToString() +
                                 ": q*h*k = " + std::to_string(c.degree()) +
                                 " must equal the rank-set size " + std::to_string(ranks));
  }
  return core::Status::Ok();
}

std::vector<ParallelConfig> ConfigsOfDegree(int degree, int heads) {
  std::vector<ParallelConfig> out;
  for (int h = 1; h <= degree; ++h) {
    if (degree % h || heads % h) continue;
    int rest = degree / h;
    for (int q = 1; q <= rest; ++q) {
      if (rest % q) continue;
      out.push_back({q, h, rest / q});
    }
  }
  return out;
}

std::vector<int> RankBlock::Ranks() const {
  std::vector<int> r(size);
  for (int i = 0; i < size; ++i) r[i] = first + i;
  return r;
}

std::vector<RankBlock> AlignedBlocks(int num_ranks) {
  std::vector<RankBlock> out;
  for (int s = 1; s <= num_ranks; s *= 2)
    for (int b = 0; b + s <= num_ranks; b += s) out.push_back({b, s});
  return out;
}

}  // namespace tessera::zellige
