#include "core/cpu_affinity.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>

#include <cstring>

namespace tessera::core {
namespace {

bool AllowedSet(cpu_set_t* set) {
  CPU_ZERO(set);
  return sched_getaffinity(0, sizeof(cpu_set_t), set) == 0;
}

}  // namespace

int OnlineCpus() {
  cpu_set_t set;
  if (!AllowedSet(&set)) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

int AllowedCpu(int index) {
  cpu_set_t set;
  if (index < 0 || !AllowedSet(&set)) return -1;
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    if (seen++ == index) return cpu;
  }
  return -1;
}

Status PinThisThreadToCpu(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) {
    return InvalidArgument(fmt::format("cpu: got {}, must be in [0, {})", cpu, CPU_SETSIZE));
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  const int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (rc != 0) {
    return Internal(fmt::format("cannot pin a thread to cpu {}: {}", cpu, std::strerror(rc)));
  }
  return Status::Ok();
}

}  // namespace tessera::core
