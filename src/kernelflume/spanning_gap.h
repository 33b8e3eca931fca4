// The token gap that spans an instant, and a placebo control for it: the arithmetic behind
// `bench death`'s "unaffected requests' TPOT unchanged within noise".
//
// An instant falls more often inside a long gap than a short one (the inspection paradox), so
// the gap spanning a kill is length-biased: comparing it with the median of ALL gaps overstates
// any effect of the kill. The fair control is the same statistic at placebo instants of the same
// run, drawn the way kills are triggered (just after the k-th token the requests generated
// together, for seeded random k) and away from every kill's window. The noise band is the
// spread of the median of n placebo spanning gaps (n = the number of unaffected samples) over
// seeded draws without replacement: an unaffected median inside [p5, p95] of those medians is
// unchanged within noise.
//
// A request the kill left unaffected counts only when it is clear of the other kills too: not
// still stalled by an earlier kill that affected it (no token of its own since that kill), and
// not stalled by a later kill that affects it before its next token. Such a request is counted
// as overlapped, not as unaffected: with kills a few steps apart, its gap is another kill's
// stall, not this kill's effect on a bystander.
//
// Times are seconds on one clock (the weight node's); token_times_s of a request are ascending.
// Pure functions: no state, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace tessera::kernelflume {

// Seconds: the gap between a request's last token at or before t_s and its first token after
// t_s; nullopt when the request has no token on one side (not started, or finished).
std::optional<double> SpanningGapS(std::span<const double> token_times_s, double t_s);

// One kill: when, and which requests (indices into the token clocks) had a range on the node.
struct KillInstant {
  double t_s = 0;
  std::vector<size_t> affected;
};
struct UnaffectedGaps {
  std::vector<double> gaps_s;  // spanning gaps of the requests left unaffected
  int overlapped = 0;          // unaffected by this kill, but stalled by another (see above)
};
// Per kill (in `kills`' order, which must be by time), the gaps of the requests it left
// unaffected. A request without a token on both sides of the kill is in neither list.
std::vector<UnaffectedGaps> UnaffectedSpanningGaps(
    std::span<const std::vector<double>> token_times_s, std::span<const KillInstant> kills);

// [begin_s, end_s]: instants inside are not placebo instants.
struct TimeWindow {
  double begin_s = 0, end_s = 0;
};

// Up to `count` distinct instants, each the time of the k-th token of the run (all requests'
// tokens merged and sorted; k seeded uniform, first and last token excluded) that lies outside
// every window of `exclude`; sorted. Fewer when the run has fewer eligible tokens.
std::vector<double> PlaceboInstants(std::span<const std::vector<double>> token_times_s,
                                    std::span<const TimeWindow> exclude, int count, uint64_t seed);

// The spread of the median of n values drawn without replacement from `pool`, over `draws`
// seeded draws. n is clamped to the pool's size; all 0 when the pool is empty or n < 1.
struct MedianBand {
  int n = 0, draws = 0;
  double p5 = 0, p50 = 0, p95 = 0;  // percentiles of the draws' medians
};
MedianBand MedianNoiseBand(std::span<const double> pool, int n, int draws, uint64_t seed);

}  // namespace tessera::kernelflume
