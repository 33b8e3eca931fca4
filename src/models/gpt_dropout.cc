#include "models/gpt_dropout.h"

#include "core/rng.h"

namespace tessera::models {

namespace {

core::Rng Stream(uint64_t seed, MicroBatchKey key, int64_t layer, GptDropoutSite site) {
  return core::Rng(seed).Keyed({static_cast<uint64_t>(key.step),
                                static_cast<uint64_t>(key.micro_batch),
                                static_cast<uint64_t>(layer), static_cast<uint64_t>(site)});
}

}  // namespace

bool GptDropoutKeeps(uint64_t seed, float p, MicroBatchKey key, int64_t layer, GptDropoutSite site,
                     int64_t element) {
  return !(Stream(seed, key, layer, site).UniformAt(static_cast<uint64_t>(element)) <
           static_cast<double>(p));
}

void ApplyGptDropout(uint64_t seed, float p, MicroBatchKey key, int64_t layer, GptDropoutSite site,
                     int64_t row0, int64_t rows, int64_t width, float* x) {
  if (p == 0.0f) return;
  const core::Rng stream = Stream(seed, key, layer, site);
  const double threshold = static_cast<double>(p);
  const float scale = static_cast<float>(1.0 / (1.0 - static_cast<double>(p)));
  const uint64_t first = static_cast<uint64_t>(row0 * width);
  const uint64_t count = static_cast<uint64_t>(rows * width);
  for (uint64_t i = 0; i < count; ++i) {
    x[i] = stream.UniformAt(first + i) < threshold ? 0.0f : x[i] * scale;
  }
}

}  // namespace tessera::models
