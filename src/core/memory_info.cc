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

StatusOr<int64_t> ResidentBytes(int pid) {
  const std::string path =
      pid == 0 ? std::string("/proc/self/status") : "/proc/" + std::to_string(pid) + "/status";
  std::ifstream in(path);
  if (!in) return NotFound("process " + std::to_string(pid) + ": cannot read " + path);
  std::string key, unit;
  int64_t kb = 0;
  while (in >> key) {
    if (key == "VmRSS:" && in >> kb) return kb * 1024;
    std::getline(in, unit);
  }
  return Internal(path + ": no VmRSS line (a zombie or kernel thread?)");
}

}  // namespace tessera::core
