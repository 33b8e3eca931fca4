// RandomTrace: seeded random MemoryTraces for differential tests of the memory planners
// (layouts against brute force, the allocator replay against invariants). Every trace it
// returns passes Validate; the same seed and options give the same trace on every platform
// (core::Rng). Sizes are multiples of kAlignmentBytes drawn log-uniformly from
// [min_bytes, max_bytes], so a trace mixes small and large tensors. Thread-safe (no state).
#pragma once

#include <cstdint>

#include "xema/memory_trace.h"

namespace tessera::xema {

struct RandomTraceOptions {
  int prologue_ops = 3;
  int body_ops = 4;
  int epilogue_ops = 3;
  int steps = 2;
  int weights = 1;   // weight tensors
  int tensors = 10;  // activation / workspace tensors (template, before expansion)
  int64_t min_bytes = 512;
  int64_t max_bytes = int64_t{64} << 20;
  double body_fraction = 0.4;      // share of tensors allocated in the body
  double carry_probability = 0.2;  // body tensors freed in the next step
};

// CHECK-fails on options that cannot give a valid trace (a test bug): ops < 1, steps < 1,
// min_bytes > max_bytes, ...
MemoryTrace RandomTrace(uint64_t seed, const RandomTraceOptions& options = {});

}  // namespace tessera::xema
