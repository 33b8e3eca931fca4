// Test-only helpers for the elaswave tests: the job shape most tests use (dp x pp x tp of a
// model with 8 layers, 32 sequences in micro-batches of 2). Not part of tessera_elaswave.
#pragma once

#include "elaswave/job_shape.h"

namespace tessera::elaswave::testing {

inline JobShape TestShape(int dp = 2, int pp = 2, int tp = 2) {
  JobShape s;
  s.dp = dp;
  s.pp = pp;
  s.tp = tp;
  s.num_blocks = 8;
  s.global_batch = 32;
  s.micro_batch = 2;
  return s;
}

}  // namespace tessera::elaswave::testing
