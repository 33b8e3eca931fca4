// Open-loop arrival times of a load generator: requests at `rate_rps` per second on average
// from t = 0 for `duration_s` seconds, inter-arrival gaps drawn from a seeded core::Rng:
//   poisson  exponential gaps (coefficient of variation 1);
//   gamma    Gamma gaps with the given coefficient of variation cv (shape 1 / cv^2, mean
//            1 / rate): cv > 1 burstier than Poisson, cv < 1 more regular.
// The same (kind, rate, cv, duration, seed) gives the same times on every platform.
// Errors: InvalidArgument naming the bad parameter; more than kMaxArrivals arrivals is refused
// (rate x duration bounded). Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/rng.h"
#include "core/status.h"

namespace tessera::serve {

inline constexpr int64_t kMaxArrivals = 1'000'000;

enum class ArrivalKind { kPoisson, kGamma };

core::StatusOr<ArrivalKind> ParseArrivalKind(const std::string& text);

// A Gamma(shape, 1) draw (Marsaglia-Tsang; shape < 1 by the boost U^(1/shape)).
double GammaDraw(core::Rng& rng, double shape);

// Arrival times in seconds, increasing, all < duration_s.
core::StatusOr<std::vector<double>> ArrivalTimes(ArrivalKind kind, double rate_rps, double cv,
                                                 double duration_s, uint64_t seed);

// A recorded arrival trace (loadgen --trace FILE): a JSON array of {"at_s": seconds from the
// start, non-decreasing, in [0, 1e6], "template": index into the mix, [0, templates)}, at most
// kMaxArrivals entries. InvalidArgument naming the source, the entry and the field.
struct TraceArrival {
  double at_s = 0;
  int template_index = 0;
};
core::StatusOr<std::vector<TraceArrival>> ArrivalTraceFromJson(const core::Json& j,
                                                               const std::string& source,
                                                               int templates);
core::StatusOr<std::vector<TraceArrival>> ReadArrivalTrace(const std::string& path, int templates);

}  // namespace tessera::serve
