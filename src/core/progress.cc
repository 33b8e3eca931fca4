#include "core/progress.h"

#include <unistd.h>

#include <cstdio>

namespace tessera::core {

ProgressBar::ProgressBar(std::string label, long total, bool force)
    : label_(std::move(label)),
      total_(total > 0 ? total : 1),
      enabled_(force || isatty(STDERR_FILENO)),
      last_draw_(std::chrono::steady_clock::now()),
      start_(last_draw_) {}

ProgressBar::~ProgressBar() { Done(); }

void ProgressBar::Update(long done) {
  if (!enabled_ || finished_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100) && done < total_) return;
  last_draw_ = now;
  Draw(done);
}

void ProgressBar::Draw(long done) {
  const int width = 30;
  int filled = static_cast<int>(width * done / total_);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "\r%s [%.*s%*s] %ld/%ld %.1fs", label_.c_str(), filled,
               "##############################", width - filled, "", done, total_, secs);
  std::fflush(stderr);
}

void ProgressBar::Done() {
  if (!enabled_ || finished_) return;
  Draw(total_);
  std::fprintf(stderr, "\n");
  finished_ = true;
}

}  // namespace tessera::core
