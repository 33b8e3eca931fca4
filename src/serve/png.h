// PNG images of the pipeline's frames, in memory (libpng's simplified API; no files).
//
// A frame is planar float RGB (3, height, width) as DiffusionPipeline::Run writes it, values
// nominally in [-1, 1]. FrameToRgb8 converts it to interleaved 8-bit RGB: each value clamped
// to [-1, 1] (NaN -> -1) and mapped to round((v + 1) * 127.5). EncodePng writes those bytes as
// an 8-bit RGB PNG; DecodePng reads any PNG libpng reads back as 8-bit RGB.
//
// Errors: InvalidArgument for a size that does not match the span (or is outside
// [1, kMaxPngSide] per side) and for bytes that are not a PNG; Internal when libpng fails.
// Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::serve {

inline constexpr int64_t kMaxPngSide = 16384;

struct Rgb8Image {
  int64_t width = 0, height = 0;
  std::vector<uint8_t> rgb;  // height * width * 3, rows top to bottom
};

core::StatusOr<Rgb8Image> FrameToRgb8(std::span<const float> planar, int64_t width, int64_t height);
core::StatusOr<std::string> EncodePng(const Rgb8Image& image);
core::StatusOr<Rgb8Image> DecodePng(const std::string& png);

// Frame f of `frames` (frames, 3, height, width) as PNG bytes.
core::StatusOr<std::string> FramePng(std::span<const float> frames, int64_t frame, int64_t width,
                                     int64_t height);

}  // namespace tessera::serve
