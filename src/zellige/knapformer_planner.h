// KnapFormer baseline (zellige.md, "KnapFormer, as its public code does it"), ported:
//   bags "g{G}n{N}+..." = N bags of G ranks each, contiguous rank ranges in spec order;
//   workload w(L) = 24 L d^2 + gamma * 4 L^2 d, gamma fitted to the cost model;
//   capacity per rank = total workload / N, per bag = that x bag size;
//   sequences by workload, descending; candidates = bags whose capacity >= w and whose size
//   <= L; if none, the bags of the largest size; pick the lowest occupancy
//   (occupancy += w / bag capacity; ties to the earlier bag).
// Each sequence is split evenly over its bag: Ulysses inside the bag (UlyssesRingConfig).
// No memory term. Option "knapformer.bags" overrides the default spec, which halves:
// g{N/2}n1+g{N/4}n1+...+g2n1+g1n2 (e.g. a800x16: g8n1+g4n1+g2n1+g1n2).
// Stateless functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "zellige/cost_model.h"

namespace tessera::zellige {

struct Bag {
  int first_rank = 0;
  int size = 1;
};

// Parses a bag spec; the bags must cover exactly `num_ranks` ranks.
core::StatusOr<std::vector<Bag>> ParseBagSpec(const std::string& spec, int num_ranks);
std::string DefaultBagSpec(int num_ranks);
// gamma such that 24 L d^2 + gamma 4 L^2 d is proportional to the modeled whole time
// (least squares of time = a L + b L^2 over the batch's distinct lengths, relative error).
double FitKnapFormerGamma(const CostModel& cost, const std::vector<int64_t>& lengths);
// The greedy: bag index per sequence, in input order.
std::vector<int> KnapFormerAssign(const std::vector<double>& workload,
                                  const std::vector<int64_t>& lengths,
                                  const std::vector<Bag>& bags);

}  // namespace tessera::zellige
