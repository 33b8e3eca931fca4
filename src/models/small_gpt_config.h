// The configuration and the data of SmallGpt (small_gpt.h) and its pipeline stages
// (small_gpt_stage.h): the model's sizes, its presets and their validation, and a batch of
// token sequences (with a seeded synthetic source) and its validation against a config.
//
// Sizes are counts (tokens, features); ids are int32 token ids in [0, vocab). Dropout (p in
// [0, 1), 0 = off) is residual dropout after the attention projection and after fc2, with masks
// keyed by global ids (gpt_dropout.h).
// Thread-safety: pure functions and plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::models {

struct SmallGptConfig {
  int64_t vocab = 1024;
  int64_t hidden = 256;
  int64_t num_heads = 8;
  int64_t num_layers = 4;
  int64_t ffn_hidden = 1024;
  int64_t max_seq = 256;  // positions with an embedding
  float layer_norm_eps = 1e-5f;
  uint64_t init_seed = 1;
  // Residual dropout probability (0: off, the model is deterministic in its inputs) and the
  // seed of its masks.
  float dropout = 0.0f;
  uint64_t dropout_seed = 1;
  int64_t head_dim() const { return num_heads > 0 ? hidden / num_heads : 0; }
};

// "gpt-small": the config above (V 1024, h 256, 8 heads, 4 layers, f 1024, 256 positions);
// "gpt-medium": V 2048, h 1024, 16 heads, 2 layers, f 4096, 512 positions (GEMMs large enough
// that a TP collective and its GEMM take comparable time on the paper's GPUs);
// "gpt-tiny": V 128, h 64, 4 heads, 2 layers, f 256, 64 positions (tests);
// "gpt-mini": V 1024, h 128, 4 heads, 8 layers, f 512, 128 positions (ElasWave's elastic
// training job: enough layers to split over pipeline stages, small enough for 8 processes on
// 2 cores). NotFound naming the
// allowed names otherwise.
core::StatusOr<SmallGptConfig> SmallGptPreset(const std::string& name);

// InvalidArgument naming the field: sizes >= 1 (vocab, hidden <= 2^16, ffn <= 2^18, layers
// <= 2^10, max_seq <= 2^16), heads dividing hidden, tp in [1, 64] dividing heads and ffn,
// eps positive and finite, dropout in [0, 1).
[[nodiscard]] core::Status ValidateSmallGptConfig(const SmallGptConfig& c, int tp);

// A batch of `batch` sequences of `seq` tokens each (M = batch x seq), packed row-major.
struct GptBatch {
  int64_t batch = 0, seq = 0;
  std::vector<int32_t> tokens;   // (M)
  std::vector<int32_t> targets;  // (M) the next token of each position
  int64_t num_tokens() const { return batch * seq; }
};

// Seeded synthetic text with structure to learn: each sequence starts at a random token and
// continues with next = (5 prev + 3 + e) mod V, e = 0 with probability 3/4 and else a random
// token offset. Different (seed, step) give different batches. InvalidArgument for sizes < 1
// or vocab < 2.
core::StatusOr<GptBatch> MakeSyntheticGptBatch(int64_t vocab, int64_t batch, int64_t seq,
                                               uint64_t seed, int64_t step);

// InvalidArgument when batch.seq is outside [1, max_seq], M is not a positive multiple of
// tp, tokens or targets do not hold M entries, or a token or target is outside [0, vocab).
[[nodiscard]] core::Status ValidateGptBatch(const SmallGptConfig& c, int tp, const GptBatch& batch);

}  // namespace tessera::models
