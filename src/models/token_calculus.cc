#include "models/token_calculus.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>

namespace tessera::models {

namespace {

// A side of a resolution: decimal digits only (no sign, space or other character) in
// [lo, hi]; nullopt otherwise (overflow included).
std::optional<int> Side(std::string_view digits, int lo, int hi) {
  if (digits.empty() || digits.size() > 9 ||
      digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  int v = 0;
  for (char c : digits) v = v * 10 + (c - '0');  // at most 9 digits: fits an int
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

}  // namespace

core::StatusOr<Resolution> ParseResolution(const std::string& text) {
  auto bad = [&]() {
    return core::InvalidArgument("res: got '" + text.substr(0, 60) +
                                 (text.size() > 60 ? "..." : "") +
                                 "', must be like 1080p (height 16..8640) or 1280x720 (width and "
                                 "height 16..16384, digits only)");
  };
  const std::string_view t(text);
  if (const size_t x = t.find('x'); x != std::string_view::npos) {
    const std::optional<int> w = Side(t.substr(0, x), 16, 16384);
    const std::optional<int> h = Side(t.substr(x + 1), 16, 16384);
    if (!w || !h) return bad();
    return Resolution{*h, *w};
  }
  if (t.size() >= 2 && t.back() == 'p') {
    const std::optional<int> h = Side(t.substr(0, t.size() - 1), 16, 8640);
    if (!h) return bad();
    const int w = static_cast<int>(std::lround(*h * 16.0 / 9.0 / 2.0)) * 2;
    return Resolution{*h, w};
  }
  return bad();
}

int64_t TokensPerLatentFrame(const Resolution& r) {
  auto padded = [](int64_t x) { return (x + 15) / 16; };
  return padded(r.height) * padded(r.width);
}

int64_t LatentFrames(MediaKind kind, double seconds, int fps) {
  if (kind == MediaKind::kImage) return 1;
  int64_t frames = static_cast<int64_t>(std::llround(seconds * fps)) + 1;
  return 1 + (frames - 1) / 4;
}

core::StatusOr<int64_t> CountTokens(MediaKind kind, const Resolution& r, double seconds, int fps) {
  if (fps < 1 || fps > 1000) {
    return core::InvalidArgument("fps: got " + std::to_string(fps) + ", must be in [1, 1000]");
  }
  if (kind == MediaKind::kVideo && !(seconds > 0 && seconds <= 3600)) {
    return core::InvalidArgument("seconds: got " + std::to_string(seconds) +
                                 ", must be in (0, 3600] for a video");
  }
  if (kind == MediaKind::kVideo && seconds * fps < 1) {
    return core::InvalidArgument("seconds: got " + std::to_string(seconds) + " at " +
                                 std::to_string(fps) +
                                 " fps, less than one frame; must be >= 1 / fps");
  }
  return LatentFrames(kind, seconds, fps) * TokensPerLatentFrame(r);
}

}  // namespace tessera::models
