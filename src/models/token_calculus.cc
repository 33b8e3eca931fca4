#include "models/token_calculus.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tessera::models {

core::StatusOr<Resolution> ParseResolution(const std::string& text) {
  auto bad = [&]() {
    return core::InvalidArgument("res: got '" + text +
                                 "', must be like 1080p (height 16..8640) or 1280x720");
  };
  int a = 0, b = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%dx%d%c", &a, &b, &tail) == 2) {
    if (a < 16 || b < 16 || a > 16384 || b > 16384) return bad();
    return Resolution{b, a};
  }
  if (text.size() >= 2 && text.size() <= 6 && text.back() == 'p' &&
      text.find_first_not_of("0123456789") == text.size() - 1) {
    a = std::atoi(text.c_str());
    if (a < 16 || a > 8640) return bad();
    int w = static_cast<int>(std::lround(a * 16.0 / 9.0 / 2.0)) * 2;
    return Resolution{a, w};
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
