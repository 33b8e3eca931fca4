#include "serve/job.h"

#include <fmt/format.h>

#include "core/elapsed.h"

namespace tessera::serve {

bool StartBatch(std::span<Job* const> batch, int device) {
  bool any = false;
  for (Job* b : batch) {
    b->device = device;
    b->queue_s = core::SecondsSince(b->arrival);
    if (b->deadline_s > 0 && b->queue_s > b->deadline_s) {
      b->status = core::DeadlineExceeded(
          fmt::format("deadline_s {} passed while queued ({} s)", b->deadline_s, b->queue_s));
    } else {
      any = true;
    }
  }
  return any;
}

}  // namespace tessera::serve
