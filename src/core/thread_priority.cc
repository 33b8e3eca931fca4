#include "core/thread_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

namespace tessera::core {
namespace {

id_t ThisThreadId() { return static_cast<id_t>(syscall(SYS_gettid)); }

Status CheckIncrement(int increment) {
  if (increment >= 0 && increment <= 39) return Status::Ok();
  return InvalidArgument("thread priority: got an increment of " + std::to_string(increment) +
                         ", must be from 0 to 39 (nice values go from -20 to 19)");
}

}  // namespace

StatusOr<int> ThisThreadNice() {
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, ThisThreadId());
  if (nice == -1 && errno != 0) {
    return Internal(std::string("getpriority of this thread: ") + std::strerror(errno));
  }
  return nice;
}

Status LowerThisThreadPriority(int increment) {
  RETURN_IF_ERROR(CheckIncrement(increment));
  ASSIGN_OR_RETURN(const int nice, ThisThreadNice());
  const int target = std::min(nice + increment, 19);
  if (setpriority(PRIO_PROCESS, ThisThreadId(), target) != 0) {
    return Internal("setpriority of this thread to nice " + std::to_string(target) + ": " +
                    std::strerror(errno));
  }
  return Status::Ok();
}

Status RunAtLowerPriority(int increment, const std::function<Status()>& work) {
  RETURN_IF_ERROR(CheckIncrement(increment));
  if (increment == 0) return work();
  Status result = Status::Ok();
  std::thread worker([&] {
    (void)LowerThisThreadPriority(increment);  // best effort: the work is right either way
    result = work();
  });
  worker.join();
  return result;
}

}  // namespace tessera::core
