// KnapFormer baseline (zellige.md, "KnapFormer, as its public code does it"), ported from its
// SequenceBalancer:
//   bags "g{G}n{N}+..." = N bags of G ranks each; the parts are sorted by increasing G (each G
//   once) and the bags numbered and given contiguous rank ranges in that order, so the
//   smallest bags sit on the lowest ranks (e.g. g8n1+g4n1+g2n1+g1n2 on 16 ranks: bags 0, 1 =
//   ranks {0}, {1}; bag 2 = {2, 3}; bag 3 = {4..7}; bag 4 = {8..15});
//   workload w(L) = (24 L d^2 + gamma * 4 L^2 d) / 1e12, d the model's hidden size, gamma
//   fitted to the cost model, or set with the option knapformer.gamma as KnapFormer's own
//   gamma is (its default 1);
//   capacity per rank = total workload / N, per bag = that x bag size;
//   sequences by workload, descending (ties keep input order); candidates = bags whose
//   capacity >= w and whose size <= L; pick the lowest occupancy (occupancy += w / bag
//   capacity), ties to the lowest bag number (the smaller bag); if none qualifies, the bags of
//   the largest size, kept in one list that each such sequence re-sorts by occupancy (stable),
//   ties to the first of that list.
// Every step is the original's double arithmetic in its order (KnapFormerWorkload,
// KnapFormerAssign), so near-ties break as they do there and the bags equal its own, bag for
// bag (scripts/check_knapformer_port.py runs both on the same batches). The equality is with
// a fresh SequenceBalancer: the original keeps the fallback list's order from one step's
// plan_routing to the next, and each plan here starts it in bag order. Floats as in the
// original's Python 3.10 (its .python-version) and 3.11: sum() adds left to right (3.12's
// compensated sum() may round the total differently).
// Each sequence is split evenly over its bag: Ulysses inside the bag (UlyssesRingConfig).
// No memory term. Option "knapformer.bags" overrides the default spec, which halves:
// g{N/2}n1+g{N/4}n1+...+g2n1+g1n2 (e.g. a800x16: g8n1+g4n1+g2n1+g1n2).
// Stateless functions; thread-safe.
#pragma once

#include <cstdint>
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
// KnapFormer's workload_estimator(L, d, gamma) with a float gamma, to the last bit: the
// integer 24 L d^2 rounded once to a double, plus ((gamma * 4) * double(L^2)) * d, the sum
// divided by 1e12. Needs 1 <= L, 1 <= d and 24 L d <= 2^53 (CHECK; every batch and model
// satisfies it: L <= 2^27, d <= 2^20).
double KnapFormerWorkload(int64_t tokens, int64_t token_dim, double gamma);
// The greedy: bag index per sequence, in input order; ties in occupancy go to the earlier bag
// of `bags` (with ParseBagSpec's order, the smaller one), except among the fallback (largest)
// bags: KnapFormer sorts its one list of them in place, so a tie there goes to the bag that
// led the list at the previous fallback. The arithmetic is the original's, in its order:
// total = workloads summed in input order from 0 (Python 3.10/3.11 sum()), per-rank capacity
// = total / ranks, bag capacity = that x size; a bag's occupancy is the running sum of
// workload / bag capacity over its sequences in assignment order. Another order, or occupancy
// as (sum of workloads) / capacity, breaks near-ties differently.
std::vector<int> KnapFormerAssign(const std::vector<double>& workload,
                                  const std::vector<int64_t>& lengths,
                                  const std::vector<Bag>& bags);

}  // namespace tessera::zellige
