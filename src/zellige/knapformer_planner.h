// KnapFormer baseline (zellige.md, "KnapFormer, as its public code does it"), ported from its
// SequenceBalancer:
//   bags "g{G}n{N}+..." = N bags of G ranks each; the parts are sorted by increasing G (each G
//   once) and the bags numbered and given contiguous rank ranges in that order, so the
//   smallest bags sit on the lowest ranks (e.g. g8n1+g4n1+g2n1+g1n2 on 16 ranks: bags 0, 1 =
//   ranks {0}, {1}; bag 2 = {2, 3}; bag 3 = {4..7}; bag 4 = {8..15});
//   workload w(L) = 24 L d^2 + gamma * 4 L^2 d, gamma fitted to the cost model, or set with
//   the option knapformer.gamma as KnapFormer's own gamma is (its default 1);
//   capacity per rank = total workload / N, per bag = that x bag size;
//   sequences by workload, descending (ties keep input order); candidates = bags whose
//   capacity >= w and whose size <= L; if none, the bags of the largest size; pick the lowest
//   occupancy (occupancy += w / bag capacity), ties to the lowest bag number (the smaller bag).
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

// Parses a bag spec into bags in KnapFormer's order (increasing size, contiguous ranks from
// 0); InvalidArgument naming the spec when a part is malformed, a size appears twice or the
// bags do not cover exactly `num_ranks` ranks.
core::StatusOr<std::vector<Bag>> ParseBagSpec(const std::string& spec, int num_ranks);
std::string DefaultBagSpec(int num_ranks);
// gamma such that 24 L d^2 + gamma 4 L^2 d is proportional to the modeled whole time
// (least squares of time = a L + b L^2 over the batch's distinct lengths, relative error).
double FitKnapFormerGamma(const CostModel& cost, const std::vector<int64_t>& lengths);
// The option knapformer.gamma: a number in (0, 1e6]; InvalidArgument naming it otherwise.
core::StatusOr<double> ParseKnapFormerGamma(const std::string& text);
// The greedy: bag index per sequence, in input order; ties in occupancy go to the earlier bag
// of `bags` (with ParseBagSpec's order, the smaller one).
std::vector<int> KnapFormerAssign(const std::vector<double>& workload,
                                  const std::vector<int64_t>& lengths,
                                  const std::vector<Bag>& bags);

}  // namespace tessera::zellige
