// Token sampling from one row of logits (V floats).
//   Greedy: the index of the largest logit, the lowest index on ties (NaN logits never win
//     unless every logit is NaN, then 0).
//   SampleTemperature: draws index i with probability softmax(logits / temperature)_i, computed
//     in double with the max subtracted; one rng.Uniform() per draw, so a seeded Rng gives the
//     same tokens on every platform. temperature == 0 means Greedy (no draw).
// temperature must be finite and >= 0 (CHECK: callers validate user input first, see
// generate.h). Pure functions; the Rng is the caller's.
#pragma once

#include <cstdint>
#include <span>

#include "core/rng.h"

namespace tessera::models {

int32_t Greedy(std::span<const float> logits);
int32_t SampleTemperature(std::span<const float> logits, double temperature, core::Rng& rng);

}  // namespace tessera::models
