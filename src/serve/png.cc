#include "serve/png.h"

#include <fmt/format.h>
#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tessera::serve {
namespace {

core::Status CheckSides(int64_t width, int64_t height) {
  if (width < 1 || height < 1 || width > kMaxPngSide || height > kMaxPngSide) {
    return core::InvalidArgument(
        fmt::format("png: got {}x{}, each side must be in [1, {}]", width, height, kMaxPngSide));
  }
  return core::Status::Ok();
}

}  // namespace

core::StatusOr<Rgb8Image> FrameToRgb8(std::span<const float> planar, int64_t width,
                                      int64_t height) {
  RETURN_IF_ERROR(CheckSides(width, height));
  const int64_t plane = width * height;
  if (static_cast<int64_t>(planar.size()) != 3 * plane) {
    return core::InvalidArgument(fmt::format("png: got {} floats for a {}x{} RGB frame, need {}",
                                             planar.size(), width, height, 3 * plane));
  }
  Rgb8Image img;
  img.width = width;
  img.height = height;
  img.rgb.resize(static_cast<size_t>(3 * plane));
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t p = 0; p < plane; ++p) {
      float v = planar[static_cast<size_t>(c * plane + p)];
      v = std::isnan(v) ? -1.0f : std::clamp(v, -1.0f, 1.0f);
      img.rgb[static_cast<size_t>(3 * p + c)] =
          static_cast<uint8_t>(std::lround((static_cast<double>(v) + 1.0) * 127.5));
    }
  }
  return img;
}

core::StatusOr<std::string> EncodePng(const Rgb8Image& image) {
  RETURN_IF_ERROR(CheckSides(image.width, image.height));
  if (static_cast<int64_t>(image.rgb.size()) != 3 * image.width * image.height) {
    return core::InvalidArgument(fmt::format("png: got {} bytes for a {}x{} RGB image",
                                             image.rgb.size(), image.width, image.height));
  }
  png_image p;
  std::memset(&p, 0, sizeof(p));
  p.version = PNG_IMAGE_VERSION;
  p.width = static_cast<png_uint_32>(image.width);
  p.height = static_cast<png_uint_32>(image.height);
  p.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  // First call: the size; second: the bytes.
  if (!png_image_write_to_memory(&p, nullptr, &size, 0, image.rgb.data(), 0, nullptr)) {
    std::string why = p.message;
    png_image_free(&p);
    return core::Internal("png: libpng cannot size the image: " + why);
  }
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&p, out.data(), &size, 0, image.rgb.data(), 0, nullptr)) {
    std::string why = p.message;
    png_image_free(&p);
    return core::Internal("png: libpng cannot encode the image: " + why);
  }
  out.resize(size);
  return out;
}

core::StatusOr<Rgb8Image> DecodePng(const std::string& png) {
  png_image p;
  std::memset(&p, 0, sizeof(p));
  p.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&p, png.data(), png.size())) {
    std::string why = p.message;
    png_image_free(&p);
    return core::InvalidArgument("png: not a PNG libpng can read: " + why);
  }
  const core::Status sides = CheckSides(p.width, p.height);
  if (!sides.ok()) {
    png_image_free(&p);
    return sides;
  }
  p.format = PNG_FORMAT_RGB;
  Rgb8Image img;
  img.width = p.width;
  img.height = p.height;
  img.rgb.resize(PNG_IMAGE_SIZE(p));
  if (!png_image_finish_read(&p, nullptr, img.rgb.data(), 0, nullptr)) {
    std::string why = p.message;
    png_image_free(&p);
    return core::InvalidArgument("png: cannot decode: " + why);
  }
  return img;
}

core::StatusOr<std::string> FramePng(std::span<const float> frames, int64_t frame, int64_t width,
                                     int64_t height) {
  const int64_t n = 3 * width * height;
  if (frame < 0 || (frame + 1) * n > static_cast<int64_t>(frames.size())) {
    return core::InvalidArgument(
        fmt::format("png: frame {} is outside the {} floats given", frame, frames.size()));
  }
  ASSIGN_OR_RETURN(Rgb8Image img, FrameToRgb8(frames.subspan(static_cast<size_t>(frame * n),
                                                             static_cast<size_t>(n)),
                                              width, height));
  return EncodePng(img);
}

}  // namespace tessera::serve
