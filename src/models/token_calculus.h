// Token calculus of a DiT with a causal video VAE (zellige.md, "Evaluation setup"):
//   frames at `fps` (16): a clip of S seconds has 16*S + 1 frames;
//   VAE stride 4 in time: latent frames = 1 + (frames - 1) / 4 (an image is 1 frame);
//   VAE stride 8 and patch 2x2 in space: each side padded up to a multiple of 16,
//   tokens per latent frame = (height/16) * (width/16).
// A resolution "Np" means height N and width round(N * 16 / 9) (rounded to even), e.g.
// 1080p = 1920x1080 -> 1088 padded -> 68 x 120 = 8,160 tokens per latent frame.
// A 15 s 1080p video: 241 frames -> 61 latent frames -> 497,760 tokens.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace tessera::models {

enum class MediaKind { kImage, kVideo };

struct Resolution {
  int height = 0;
  int width = 0;
};

// Parses "1080p", "720p", ... (height 16..8640) or "WIDTHxHEIGHT" (e.g. "1280x720", each side
// 16..16384). Digits only: a sign, a space, trailing text, zero or a number too large is
// InvalidArgument "res: got '+1280x+720', must be like ...".
core::StatusOr<Resolution> ParseResolution(const std::string& text);
// Tokens per latent frame of a resolution.
int64_t TokensPerLatentFrame(const Resolution& r);
// Latent frames of a clip (1 for an image).
int64_t LatentFrames(MediaKind kind, double seconds, int fps);
// Total tokens; validates seconds > 0 for videos and fps >= 1.
core::StatusOr<int64_t> CountTokens(MediaKind kind, const Resolution& r, double seconds,
                                    int fps = 16);

}  // namespace tessera::models
