#include "core/memory_info.h"

#include <fstream>
#include <string>

namespace tessera::core {

int64_t AvailableMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  int64_t kb = 0;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

}  // namespace tessera::core
