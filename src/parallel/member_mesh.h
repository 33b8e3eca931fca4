// MemberMesh: the (h, q, k) factorisation of the lambda = h*q*k members of one sequence-
// parallel placement. Member i has coordinates hi = i % h (Ulysses, fastest), qi = (i/h) % q
// (all-gather), ki = i / (h*q) (ring). Its groups:
//  - Ulysses group of (qi, ki): the h members ki*h*q + qi*h + 0..h-1;
//  - gather group of (hi, ki): the q members ki*h*q + 0..q-1 * h + hi;
//  - ring neighbours: members i + h*q and i - h*q (mod lambda).
// Group member lists are indices into the placement's rank list; the ...Ranks functions map
// them through it. Value type; thread-safe.
#pragma once

#include <vector>

namespace tessera::parallel {

struct MeshCoord {
  int hi = 0, qi = 0, ki = 0;
};

struct MemberMesh {
  int h = 1, q = 1, k = 1;

  int size() const { return h * q * k; }
  MeshCoord Coord(int member) const;
  int Member(const MeshCoord& c) const { return c.ki * h * q + c.qi * h + c.hi; }
  // ranks[member] for the members of the Ulysses group of (qi, ki), in hi order.
  std::vector<int> UlyssesRanks(const std::vector<int>& ranks, int qi, int ki) const;
  // ranks[member] for the members of the gather group of (hi, ki), in qi order.
  std::vector<int> GatherRanks(const std::vector<int>& ranks, int hi, int ki) const;
  int RingNext(int member) const { return (member + h * q) % size(); }
  int RingPrev(int member) const { return (member - h * q + size()) % size(); }
};

}  // namespace tessera::parallel
