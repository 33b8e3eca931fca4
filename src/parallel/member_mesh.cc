// MemberMesh; see member_mesh.h.
#include "parallel/member_mesh.h"

namespace tessera::parallel {

MeshCoord MemberMesh::Coord(int member) const {
  return {.hi = member % h, .qi = (member / h) % q, .ki = member / (h * q)};
}

std::vector<int> MemberMesh::UlyssesRanks(const std::vector<int>& ranks, int qi, int ki) const {
  std::vector<int> r;
  for (int hi = 0; hi < h; ++hi) r.push_back(ranks[Member({.hi = hi, .qi = qi, .ki = ki})]);
  return r;
}

std::vector<int> MemberMesh::GatherRanks(const std::vector<int>& ranks, int hi, int ki) const {
  std::vector<int> r;
  for (int qi = 0; qi < q; ++qi) r.push_back(ranks[Member({.hi = hi, .qi = qi, .ki = ki})]);
  return r;
}

}  // namespace tessera::parallel
