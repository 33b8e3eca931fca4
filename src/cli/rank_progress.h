// RankZeroProgress: the progress bar of a collective service run on MPI ranks (every rank
// calls the callback; only rank 0 draws). Not thread-safe: the rank's own thread calls it.
#pragma once

#include <memory>
#include <string>

#include "comm/communicator.h"
#include "core/progress.h"

namespace tessera::cli {

// The progress callback of a collective service: a bar called `label` on rank 0 only,
// created at the first report (when the total is known). Pass it as std::ref(progress).
class RankZeroProgress {
 public:
  RankZeroProgress(const comm::Communicator& world, std::string label)
      : on_(world.rank() == 0), label_(std::move(label)) {}
  void operator()(int done, int total) {
    if (!on_) return;
    if (!bar_) bar_ = std::make_unique<core::ProgressBar>(label_, total);
    bar_->Update(done);
  }
  void Done() {
    if (bar_) bar_->Done();
  }

 private:
  bool on_;
  std::string label_;
  std::unique_ptr<core::ProgressBar> bar_;
};

}  // namespace tessera::cli
