#include "core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/memory_info.h"
#include "core/units.h"

namespace tessera::core {
namespace {

constexpr int64_t kMinLimitBytes = 16 * kMiBInt64;
constexpr int64_t kMaxLimitBytes = 1024 * kMiBInt64;
constexpr int64_t kMemoryDivisor = 256;

std::string Megabytes(int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

struct Limit {
  int64_t bytes = 0;
  std::string origin;
};

StatusOr<Limit> ComputeLimit() {
  if (const char* env = std::getenv(kMaxInputEnv); env != nullptr && *env != '\0') {
    char* end = nullptr;
    errno = 0;
    const long long mb = std::strtoll(env, &end, 10);
    if (errno != 0 || end == env || *end != '\0' || mb < 1 || mb > (int64_t{1} << 40) / kMiBInt64) {
      return InvalidArgument(std::string("$") + kMaxInputEnv + ": got '" + env +
                             "', must be a whole number of megabytes from 1 to 1048576");
    }
    return Limit{mb * kMiBInt64, std::string("$") + kMaxInputEnv};
  }
  const int64_t avail = AvailableMemoryBytes();
  if (avail <= 0) return Limit{kMinLimitBytes, "the default (available memory unknown)"};
  const int64_t bytes = std::clamp(avail / kMemoryDivisor, kMinLimitBytes, kMaxLimitBytes);
  return Limit{bytes, "1/" + std::to_string(kMemoryDivisor) + " of the " + Megabytes(avail) +
                          " of available memory"};
}

// The message for an errno from open/stat of an input path.
Status OpenError(const std::string& path, int err) {
  switch (err) {
    case ENOENT:
      return NotFound(path + ": no such file");
    case ENAMETOOLONG:
      return InvalidArgument(QuotedPath(path.substr(0, 40) + "...") +
                             ": file name too long for this system");
    case ELOOP:
      return InvalidArgument(path + ": too many levels of symbolic links (a link loop?)");
    case EACCES:
      return InvalidArgument(path + ": permission denied");
    case ENOTDIR:
      return InvalidArgument(path + ": a part of the path is not a directory");
    default:
      return InvalidArgument(path + ": cannot open: " + std::strerror(err));
  }
}

}  // namespace

StatusOr<int64_t> MaxInputBytes() {
  ASSIGN_OR_RETURN(Limit l, ComputeLimit());
  return l.bytes;
}

std::string MaxInputBytesOrigin() {
  StatusOr<Limit> l = ComputeLimit();
  return l.ok() ? l->origin : l.status().message();
}

bool PathExists(const std::string& path) {
  struct stat st;
  return !path.empty() && ::lstat(path.c_str(), &st) == 0;
}

StatusOr<std::string> ReadInputFile(const std::string& path) {
  if (path.empty()) return InvalidArgument("empty file name");
  ASSIGN_OR_RETURN(Limit limit, ComputeLimit());
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return OpenError(path, errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return OpenError(path, errno);
  if (S_ISDIR(st.st_mode)) return InvalidArgument(path + ": is a directory, not a file");
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode)) {
    return InvalidArgument(path + ": is a device, not a file");
  }
  const std::string raise = "; set " + std::string(kMaxInputEnv) + " (megabytes) to raise it";
  if (S_ISREG(st.st_mode) && st.st_size > limit.bytes) {
    return InvalidArgument(path + ": " + Megabytes(st.st_size) +
                           " is over the input size limit of " + Megabytes(limit.bytes) + " (" +
                           limit.origin + ")" + raise);
  }
  std::string data;
  if (S_ISREG(st.st_mode)) data.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return InvalidArgument(path + ": read failed: " + std::strerror(errno));
    }
    if (n == 0) break;
    if (static_cast<int64_t>(data.size()) + n > limit.bytes) {
      return InvalidArgument(path + ": more than the input size limit of " +
                             Megabytes(limit.bytes) + " (" + limit.origin + ")" + raise);
    }
    data.append(buf, static_cast<size_t>(n));
  }
  if (data.empty()) return InvalidArgument(path + ": is empty");
  return data;
}

}  // namespace tessera::core
