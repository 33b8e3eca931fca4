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

core::StatusOr<FlowMatchingBatch> MakeFlowMatchingChunks(uint64_t seed, int64_t channels,
                                                         std::span<const SequenceChunk> chunks,
                                                         int64_t step) {
  if (channels < 1) {
    return core::InvalidArgument("channels: got " + std::to_string(channels) + ", must be >= 1");
  }
  if (chunks.empty()) return core::InvalidArgument("chunks: got none, need >= 1");
  if (step < 0) {
    return core::InvalidArgument("step: got " + std::to_string(step) + ", must be >= 0");
  }
  FlowMatchingBatch b;
  b.cu_seqlens.push_back(0);
  for (size_t i = 0; i < chunks.size(); ++i) {
    const SequenceChunk& c = chunks[i];
    if (!(c.begin >= 0 && c.begin < c.end && c.end <= c.seq_len)) {
      return core::InvalidArgument("chunks[" + std::to_string(i) + "]: got [" +
                                   std::to_string(c.begin) + ", " + std::to_string(c.end) +
                                   ") of seq_len " + std::to_string(c.seq_len) +
                                   ", need 0 <= begin < end <= seq_len");
    }
    b.cu_seqlens.push_back(b.cu_seqlens.back() + c.end - c.begin);
    b.position_offsets.push_back(c.begin);
  }
  const int64_t total = b.cu_seqlens.back() * channels;
  b.x_t.resize(total);
  b.target.resize(total);
  b.timesteps.resize(chunks.size());
  std::vector<float> x0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const SequenceChunk& c = chunks[i];
    x0.resize(c.seq_len * channels);
    SyntheticLatents(seed, c.seq_id, c.seq_len, channels, x0.data());
    core::Rng rng =
        core::Rng(seed).Fork(static_cast<uint64_t>(c.seq_id)).Fork(static_cast<uint64_t>(step) + 1);
    const float t = static_cast<float>(rng.Uniform());
    b.timesteps[i] = t;
    float* xt = b.x_t.data() + b.cu_seqlens[i] * channels;
    float* v = b.target.data() + b.cu_seqlens[i] * channels;
    // The noise stream runs over the whole sequence; keep the chunk's rows.
    for (int64_t j = 0; j < c.end * channels; ++j) {
      const float e = static_cast<float>(rng.Normal());
      if (j < c.begin * channels) continue;
      const int64_t r = j - c.begin * channels;
      xt[r] = (1.0f - t) * x0[j] + t * e;
      v[r] = e - x0[j];
    }
  }
  return b;
}

core::StatusOr<FlowMatchingBatch> MakeFlowMatchingBatch(uint64_t seed, int64_t channels,
                                                        std::span<const int64_t> seq_ids,
                                                        std::span<const int64_t> lengths,
                                                        int64_t step) {
  if (seq_ids.empty() || seq_ids.size() != lengths.size()) {
    return core::InvalidArgument("seq_ids/lengths: got " + std::to_string(seq_ids.size()) +
                                 " ids and " + std::to_string(lengths.size()) +
                                 " lengths, need the same count >= 1");
  }
  std::vector<SequenceChunk> chunks;
  for (size_t i = 0; i < seq_ids.size(); ++i) {
    if (lengths[i] < 1) {
      return core::InvalidArgument("lengths[" + std::to_string(i) + "]: got " +
                                   std::to_string(lengths[i]) + ", must be >= 1");
    }
    chunks.push_back({seq_ids[i], lengths[i], 0, lengths[i]});
  }
  return MakeFlowMatchingChunks(seed, channels, chunks, step);
}

double FlowMatchingLoss(std::span<const float> prediction, std::span<const float> target,
                        std::span<float> d_prediction, int64_t normalizer) {
  CHECK_EQ(prediction.size(), target.size());
  CHECK(normalizer >= 0) << "normalizer " << normalizer;
  const size_t n = prediction.size();
  if (n == 0) return 0.0;
  const double denom = normalizer > 0 ? static_cast<double>(normalizer) : static_cast<double>(n);
  double sum = 0.0;
  const float scale = static_cast<float>(2.0 / denom);
  if (!d_prediction.empty()) {
    CHECK_EQ(d_prediction.size(), n);
  }
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(prediction[i]) - target[i];
    sum += d * d;
    if (!d_prediction.empty()) d_prediction[i] = scale * (prediction[i] - target[i]);
  }
  return sum / denom;
}

core::StatusOr<double> TrainStep(SmallDit& model, AdamW& optimizer, const FlowMatchingBatch& batch,
                                 AttentionBackend& backend, SmallDitActivations* acts) {
  model.ZeroGradients();
  RETURN_IF_ERROR(model.Forward(batch.View(), backend, acts));
  std::vector<float> d_out(acts->output.size());
  const double loss = FlowMatchingLoss(acts->output, batch.target, d_out);
  RETURN_IF_ERROR(model.Backward(*acts, d_out, backend));
  RETURN_IF_ERROR(optimizer.Step(model.Parameters(), model.Gradients(), model.DecayMask()));
  return loss;
}

}  // namespace tessera::models
