#include "core/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

namespace tessera::core {
namespace {

namespace fs = std::filesystem;

std::string ErrnoText(int err) { return std::strerror(err); }

// The file a write to `path` lands in: symlinks resolved (also dangling ones, to the path
// they name). Falls back to `path` when it cannot be resolved (the caller reports errors).
std::string WriteTarget(const std::string& path) {
  std::error_code ec;
  fs::path p(path);
  for (int hops = 0; hops < 40; ++hops) {
    if (!fs::is_symlink(fs::symlink_status(p, ec))) break;
    fs::path link = fs::read_symlink(p, ec);
    if (ec) break;
    p = link.is_absolute() ? link : p.parent_path() / link;
  }
  return p.string();
}

bool IsDevice(const struct stat& st) { return S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode); }

Status WriteAll(int fd, std::string_view contents, const std::string& path) {
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      // A full disk or quota is the user's to fix, not a tessera bug.
      if (errno == ENOSPC || errno == EDQUOT || errno == EFBIG) {
        return InvalidArgument(path + ": write failed: " + ErrnoText(errno));
      }
      return Internal(path + ": write failed: " + ErrnoText(errno));
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status WriteDevice(const std::string& path, std::string_view contents) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return InvalidArgument(path + ": cannot open for writing: " + ErrnoText(errno));
  Status st = WriteAll(fd, contents, path);
  ::close(fd);
  return st;
}

}  // namespace

Status CheckWritable(const std::string& option, const std::string& path) {
  if (path.empty()) return InvalidArgument((option.empty() ? "output" : option) + ": empty path");
  std::string what = path;
  if (!option.empty()) what = option + ": " + QuotedPath(path);
  const std::string target = WriteTarget(path);
  struct stat st;
  if (::stat(target.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return InvalidArgument(what + " is a directory; give a file path");
    }
    if (IsDevice(st)) return Status::Ok();
    if (!S_ISREG(st.st_mode)) {
      return InvalidArgument(what + " is not a regular file or a device");
    }
    if (::access(target.c_str(), W_OK) != 0) {
      return InvalidArgument(what + " is not writable: " + ErrnoText(errno));
    }
  } else if (errno != ENOENT) {
    return InvalidArgument(what + ": " + ErrnoText(errno));
  }
  fs::path parent = fs::path(target).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  struct stat dst;
  if (::stat(dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode)) {
    return InvalidArgument(what + ": directory " + QuotedPath(dir) + " does not exist");
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    return InvalidArgument(what + ": directory " + QuotedPath(dir) + " is not writable");
  }
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  RETURN_IF_ERROR(CheckWritable("", path));
  const std::string target = WriteTarget(path);
  struct stat st;
  if (::stat(target.c_str(), &st) == 0 && IsDevice(st)) return WriteDevice(target, contents);
  const bool existed = ::stat(target.c_str(), &st) == 0;

  std::string tmp = target + ".tessera-XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0) {
    return InvalidArgument(path +
                           ": cannot create a temporary file beside it: " + ErrnoText(errno));
  }
  // Keep the target's permission bits (mkstemp makes 0600); new files get 0644 less umask.
  mode_t mode = 0644;
  if (existed) {
    mode = st.st_mode & 07777;
  } else {
    mode_t mask = ::umask(0);
    ::umask(mask);
    mode &= ~mask;
  }
  Status result = WriteAll(fd, contents, path);
  if (result.ok() && ::fchmod(fd, mode) != 0) {
    result = Internal(path + ": chmod failed: " + ErrnoText(errno));
  }
  if (result.ok() && ::fsync(fd) != 0) {
    result = Internal(path + ": fsync failed: " + ErrnoText(errno));
  }
  if (::close(fd) != 0 && result.ok()) {
    result = Internal(path + ": close failed: " + ErrnoText(errno));
  }
  if (result.ok() && std::rename(tmp.c_str(), target.c_str()) != 0) {
    result = Internal(path + ": rename of the temporary file failed: " + ErrnoText(errno));
  }
  if (!result.ok()) ::unlink(tmp.c_str());  // ours: created above with O_EXCL
  return result;
}

void OutputPaths::Input(const std::string& option, const std::string& path) {
  if (!path.empty()) inputs_.push_back({option, path});
}

void OutputPaths::Output(const std::string& option, const std::string& path) {
  if (!path.empty()) outputs_.push_back({option, path});
}

namespace {

// True when a and b name the same existing file (device + inode), or resolve to the same
// path (for files that do not exist yet).
bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  const std::string ta = WriteTarget(a), tb = WriteTarget(b);
  if (::stat(ta.c_str(), &sa) == 0 && ::stat(tb.c_str(), &sb) == 0) {
    if (IsDevice(sa) && IsDevice(sb)) return false;  // /dev/null twice is fine
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  }
  std::error_code ec1, ec2;
  fs::path pa = fs::weakly_canonical(ta, ec1), pb = fs::weakly_canonical(tb, ec2);
  if (ec1 || ec2) return ta == tb;
  return pa == pb;
}

}  // namespace

Status OutputPaths::Check() const {
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const Entry& out = outputs_[i];
    for (const Entry& in : inputs_) {
      if (SameFile(out.path, in.path)) {
        return InvalidArgument(out.option + ": " + QuotedPath(out.path) + " is also the input of " +
                               in.option + "; choose another output path");
      }
    }
    for (size_t j = 0; j < i; ++j) {
      if (SameFile(out.path, outputs_[j].path)) {
        return InvalidArgument(out.option + ": " + QuotedPath(out.path) +
                               " is also the output of " + outputs_[j].option +
                               "; give each output its own path");
      }
    }
    RETURN_IF_ERROR(CheckWritable(out.option, out.path));
  }
  return Status::Ok();
}

}  // namespace tessera::core
