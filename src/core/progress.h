// ProgressBar: a one-line progress bar on stderr for work longer than a few seconds.
// Redraws at most every 100 ms; prints nothing when stderr is not a terminal unless
// forced, and finishes the line on Done() or destruction. Not thread-safe.
#pragma once

#include <chrono>
#include <string>

namespace tessera::core {

class ProgressBar {
 public:
  ProgressBar(std::string label, long total, bool force = false);
  ~ProgressBar();
  void Update(long done);
  void SetTotal(long total) { total_ = total; }  // when the work grows while it runs
  void Done();

 private:
  void Draw(long done);
  std::string label_;
  long total_;
  bool enabled_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point last_draw_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tessera::core
