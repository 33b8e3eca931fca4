#include "models/flow_matching.h"

#include <cmath>
#include <numbers>
#include <string>

#include "core/check.h"
#include "core/rng.h"

namespace tessera::models {

void SyntheticLatents(uint64_t seed, int64_t seq_id, int64_t length, int64_t channels, float* x0) {
  core::Rng rng = core::Rng(seed).Fork(static_cast<uint64_t>(seq_id));
  const double amp = 0.8 + 0.4 * rng.Uniform();
  const double freq = 1.0 + static_cast<double>(rng.Below(3));
  const double phase = 2.0 * std::numbers::pi * rng.Uniform();
  for (int64_t t = 0; t < length; ++t) {
    const double pos = static_cast<double>(t) / static_cast<double>(length);
    for (int64_t c = 0; c < channels; ++c) {
      x0[t * channels + c] =
          static_cast<float>(amp * std::sin(2.0 * std::numbers::pi * freq * pos + phase +
                                            static_cast<double>(c) * std::numbers::pi / 8.0));
    }
  }
}

core::StatusOr<FlowMatchingBatch> MakeFlowMatchingBatch(uint64_t seed, int64_t channels,
                                                        std::span<const int64_t> seq_ids,
                                                        std::span<const int64_t> lengths,
                                                        int64_t step) {
  if (channels < 1) {
    return core::InvalidArgument("channels: got " + std::to_string(channels) + ", must be >= 1");
  }
  if (seq_ids.empty() || seq_ids.size() != lengths.size()) {
    return core::InvalidArgument("seq_ids/lengths: got " + std::to_string(seq_ids.size()) +
                                 " ids and " + std::to_string(lengths.size()) +
                                 " lengths, need the same count >= 1");
  }
  if (step < 0) {
    return core::InvalidArgument("step: got " + std::to_string(step) + ", must be >= 0");
  }
  FlowMatchingBatch b;
  b.cu_seqlens.push_back(0);
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] < 1) {
      return core::InvalidArgument("lengths[" + std::to_string(i) + "]: got " +
                                   std::to_string(lengths[i]) + ", must be >= 1");
    }
    b.cu_seqlens.push_back(b.cu_seqlens.back() + lengths[i]);
  }
  const int64_t total = b.cu_seqlens.back() * channels;
  b.x_t.resize(total);
  b.target.resize(total);
  b.timesteps.resize(seq_ids.size());
  std::vector<float> x0;
  for (size_t i = 0; i < seq_ids.size(); ++i) {
    const int64_t len = lengths[i];
    x0.resize(len * channels);
    SyntheticLatents(seed, seq_ids[i], len, channels, x0.data());
    core::Rng rng = core::Rng(seed)
                        .Fork(static_cast<uint64_t>(seq_ids[i]))
                        .Fork(static_cast<uint64_t>(step) + 1);
    const float t = static_cast<float>(rng.Uniform());
    b.timesteps[i] = t;
    float* xt = b.x_t.data() + b.cu_seqlens[i] * channels;
    float* v = b.target.data() + b.cu_seqlens[i] * channels;
    for (int64_t j = 0; j < len * channels; ++j) {
      const float e = static_cast<float>(rng.Normal());
      xt[j] = (1.0f - t) * x0[j] + t * e;
      v[j] = e - x0[j];
    }
  }
  return b;
}

double FlowMatchingLoss(std::span<const float> prediction, std::span<const float> target,
                        std::span<float> d_prediction) {
  CHECK_EQ(prediction.size(), target.size());
  const size_t n = prediction.size();
  if (n == 0) return 0.0;
  double sum = 0.0;
  const float scale = 2.0f / static_cast<float>(n);
  if (!d_prediction.empty()) {
    CHECK_EQ(d_prediction.size(), n);
  }
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(prediction[i]) - target[i];
    sum += d * d;
    if (!d_prediction.empty()) d_prediction[i] = scale * (prediction[i] - target[i]);
  }
  return sum / static_cast<double>(n);
}

core::StatusOr<double> TrainStep(SmallDit& model, AdamW& optimizer, const FlowMatchingBatch& batch,
                                 AttentionBackend& backend, SmallDitActivations* acts) {
  model.ZeroGradients();
  RETURN_IF_ERROR(model.Forward(batch.View(), backend, acts));
  std::vector<float> d_out(acts->output.size());
  const double loss = FlowMatchingLoss(acts->output, batch.target, d_out);
  RETURN_IF_ERROR(model.Backward(*acts, d_out, backend));
  RETURN_IF_ERROR(optimizer.Step(model.Parameters(), model.Gradients()));
  return loss;
}

}  // namespace tessera::models
