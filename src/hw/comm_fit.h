// Alpha-beta model of a communication primitive: time_s = alpha_s + beta_s_per_byte * bytes,
// fitted to measured (bytes, time) samples of one primitive at one number of ranks, and
// turned into a Link (bandwidth = 1 / beta, latency = alpha) for the cost models.
//
// `bytes` is what the caller measured per message (e.g. bytes each rank sends); the fit does
// not interpret it. FitAlphaBeta is ordinary least squares (core::FitLine) with each
// coefficient clamped at 0: a negative intercept (latency below the resolution of the
// timer) becomes 0 latency, a negative slope (noise) 0 s per byte. Errors are
// InvalidArgument naming the input ("comm fit: got 1 distinct message sizes, must be >= 2").
// Plain values; stateless; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "hw/cluster.h"

namespace tessera::hw {

struct CommSample {
  double bytes = 0;   // message size
  double time_s = 0;  // measured time (e.g. a median over repeats)
  bool operator==(const CommSample&) const = default;
};

struct AlphaBeta {
  double alpha_s = 0;          // per-message latency, >= 0
  double beta_s_per_byte = 0;  // inverse bandwidth, >= 0
  double TimeS(double bytes) const { return alpha_s + beta_s_per_byte * bytes; }
  bool operator==(const AlphaBeta&) const = default;
};

// Needs >= 2 distinct sizes, finite non-negative bytes and times.
core::StatusOr<AlphaBeta> FitAlphaBeta(const std::vector<CommSample>& samples);

// The link a fit describes: {name, 1 / beta_s_per_byte, alpha_s}; InvalidArgument when beta
// is not > 0 (infinite bandwidth) or alpha is negative or either is not finite.
core::StatusOr<Link> ToLink(const AlphaBeta& fit, const std::string& name);

}  // namespace tessera::hw
