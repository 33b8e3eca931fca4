#include "core/heap_tuning.h"

#include <malloc.h>

namespace tessera::core {

bool UseSteadyHeap() {
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024) == 1;
  return mmap_ok && trim_ok;
}

}  // namespace tessera::core
