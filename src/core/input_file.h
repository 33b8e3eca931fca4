// Safe file input: the one way tessera reads a file a user named. Every way reading can go
// wrong becomes one line a user can act on, never an exception, and never a process that
// swells to the machine's memory before saying anything.
//
// ReadInputFile(path) returns the whole file, or:
//  - NotFound "PATH: no such file";
//  - InvalidArgument naming the problem for a directory, a device (/dev/null, /dev/zero,
//    a socket), an empty file, a file name that is too long, a symlink loop, a missing
//    permission or an I/O error;
//  - InvalidArgument when the file is larger than MaxInputBytes(), with the size, the limit,
//    where the limit comes from and how to raise it.
// A FIFO (a shell's `<(...)`) is read, up to the limit.
//
// MaxInputBytes(): $TESSERA_MAX_INPUT_MB megabytes when set (a positive integer; anything else
// is an InvalidArgument naming the variable), otherwise MemAvailable / 256 from /proc/meminfo
// clamped to [16 MiB, 1 GiB] (parsing JSON takes tens of bytes per input byte, and a loaded
// workload is planned and simulated after that).
//
// PathExists(path): whether anything is at `path` (lstat; true for a dangling symlink or a
// symlink loop, false for a name that is too long). Never throws; used by loaders that take
// "a preset name or a file".
// Thread-safety: all functions are reentrant.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace tessera::core {

// The environment variable that overrides the input size limit, in megabytes.
inline constexpr const char* kMaxInputEnv = "TESSERA_MAX_INPUT_MB";

StatusOr<std::string> ReadInputFile(const std::string& path);
StatusOr<int64_t> MaxInputBytes();
// Where MaxInputBytes() came from, for messages: "$TESSERA_MAX_INPUT_MB" or
// "1/256 of the 21.3 GB of available memory".
std::string MaxInputBytesOrigin();
bool PathExists(const std::string& path);

}  // namespace tessera::core
