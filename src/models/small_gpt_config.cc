#include "models/small_gpt_config.h"

#include <cmath>
#include <string>

#include "core/rng.h"

namespace tessera::models {

namespace {

using core::InvalidArgument;

core::Status InRange(const char* field, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) {
    return InvalidArgument(std::string("gpt config: ") + field + ": got " + std::to_string(v) +
                           ", must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return core::Status::Ok();
}

core::Status Divides(const char* what, int64_t d, const char* field, int64_t v) {
  if (d < 1 || v % d != 0) {
    return InvalidArgument(std::string("gpt config: ") + what + " " + std::to_string(d) +
                           " must divide " + field + " = " + std::to_string(v));
  }
  return core::Status::Ok();
}

}  // namespace

core::StatusOr<SmallGptConfig> SmallGptPreset(const std::string& name) {
  if (name == "gpt-small") return SmallGptConfig{};
  if (name == "gpt-tiny") {
    return SmallGptConfig{.vocab = 128,
                          .hidden = 64,
                          .num_heads = 4,
                          .num_layers = 2,
                          .ffn_hidden = 256,
                          .max_seq = 64};
  }
  if (name == "gpt-mini") {
    return SmallGptConfig{.vocab = 1024,
                          .hidden = 128,
                          .num_heads = 4,
                          .num_layers = 8,
                          .ffn_hidden = 512,
                          .max_seq = 128};
  }
  if (name == "gpt-medium") {
    return SmallGptConfig{.vocab = 2048,
                          .hidden = 1024,
                          .num_heads = 16,
                          .num_layers = 2,
                          .ffn_hidden = 4096,
                          .max_seq = 512};
  }
  return core::NotFound("model: got '" + name +
                        "', allowed: gpt-tiny, gpt-mini, gpt-small, gpt-medium");
}

core::Status ValidateSmallGptConfig(const SmallGptConfig& c, int tp) {
  RETURN_IF_ERROR(InRange("vocab", c.vocab, 2, int64_t{1} << 20));
  RETURN_IF_ERROR(InRange("hidden", c.hidden, 1, int64_t{1} << 16));
  RETURN_IF_ERROR(InRange("heads", c.num_heads, 1, c.hidden));
  RETURN_IF_ERROR(InRange("layers", c.num_layers, 1, int64_t{1} << 10));
  RETURN_IF_ERROR(InRange("ffn", c.ffn_hidden, 1, int64_t{1} << 18));
  RETURN_IF_ERROR(InRange("max_seq", c.max_seq, 1, int64_t{1} << 16));
  RETURN_IF_ERROR(InRange("tp", tp, 1, 64));
  RETURN_IF_ERROR(Divides("heads", c.num_heads, "hidden", c.hidden));
  RETURN_IF_ERROR(Divides("tp", tp, "heads", c.num_heads));
  RETURN_IF_ERROR(Divides("tp", tp, "ffn", c.ffn_hidden));
  if (!(c.layer_norm_eps > 0) || !std::isfinite(c.layer_norm_eps)) {
    return InvalidArgument("gpt config: layer_norm_eps must be positive and finite");
  }
  if (!(c.dropout >= 0.0f && c.dropout < 1.0f)) {
    return InvalidArgument("gpt config: dropout: got " + std::to_string(c.dropout) +
                           ", must be in [0, 1)");
  }
  const double params = static_cast<double>(c.vocab) * c.hidden * 2 +
                        static_cast<double>(c.max_seq) * c.hidden +
                        static_cast<double>(c.num_layers) *
                            (4.0 * c.hidden * c.hidden + 2.0 * c.hidden * c.ffn_hidden);
  if (params > static_cast<double>(int64_t{1} << 31)) {
    return InvalidArgument("gpt config: " + std::to_string(static_cast<int64_t>(params)) +
                           " parameters, more than 2^31");
  }
  return core::Status::Ok();
}

core::StatusOr<GptBatch> MakeSyntheticGptBatch(int64_t vocab, int64_t batch, int64_t seq,
                                               uint64_t seed, int64_t step) {
  if (vocab < 2 || batch < 1 || seq < 1 || batch * seq > (int64_t{1} << 26)) {
    return InvalidArgument("gpt batch: vocab " + std::to_string(vocab) + ", batch " +
                           std::to_string(batch) + ", seq " + std::to_string(seq) +
                           ": need vocab >= 2, batch and seq >= 1, batch x seq <= 2^26");
  }
  GptBatch b;
  b.batch = batch;
  b.seq = seq;
  b.tokens.resize(static_cast<size_t>(batch * seq));
  b.targets.resize(b.tokens.size());
  core::Rng rng = core::Rng(seed).Fork(static_cast<uint64_t>(step));
  const uint64_t v = static_cast<uint64_t>(vocab);
  for (int64_t s = 0; s < batch; ++s) {
    uint64_t cur = rng.Below(v);
    for (int64_t i = 0; i < seq; ++i) {
      const uint64_t e = rng.Below(4) == 0 ? rng.Below(v) : 0;
      const uint64_t next = (5 * cur + 3 + e) % v;
      b.tokens[s * seq + i] = static_cast<int32_t>(cur);
      b.targets[s * seq + i] = static_cast<int32_t>(next);
      cur = next;
    }
  }
  return b;
}

core::Status ValidateGptBatch(const SmallGptConfig& c, int tp, const GptBatch& batch) {
  const int64_t m = batch.num_tokens();
  if (batch.seq < 1 || batch.seq > c.max_seq) {
    return InvalidArgument("gpt batch: seq " + std::to_string(batch.seq) + " outside [1, " +
                           std::to_string(c.max_seq) + "] (max_seq)");
  }
  if (batch.batch < 1 || m < tp || m % tp != 0) {
    return InvalidArgument("gpt batch: " + std::to_string(m) +
                           " tokens, not a positive multiple of tp " + std::to_string(tp));
  }
  if (static_cast<int64_t>(batch.tokens.size()) != m ||
      static_cast<int64_t>(batch.targets.size()) != m) {
    return InvalidArgument(
        "gpt batch: tokens and targets must hold batch x seq = " + std::to_string(m) + " entries");
  }
  for (int64_t t = 0; t < m; ++t) {
    if (batch.tokens[t] < 0 || batch.tokens[t] >= c.vocab || batch.targets[t] < 0 ||
        batch.targets[t] >= c.vocab) {
      return InvalidArgument("gpt batch: token or target at " + std::to_string(t) +
                             " outside [0, " + std::to_string(c.vocab) + ")");
    }
  }
  return core::Status::Ok();
}

}  // namespace tessera::models
