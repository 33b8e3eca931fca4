// Safe file output: the one way tessera writes a file, and the checks a command runs on its
// output paths before it starts long work.
//
// WriteFileAtomically(path, contents):
//  - a symlink is written through: the file it points to is replaced, the link is kept;
//  - a character device or FIFO (/dev/null, /dev/stdout, a pipe) is written directly, never
//    replaced by a regular file;
//  - otherwise (a regular file or a new path) the bytes go to a unique temporary file beside
//    the target (created with O_EXCL, so never a file that already exists), are fsync'ed, and
//    the temporary is renamed over the target: a reader sees the old or the new contents,
//    never a part; on any failure the temporary is removed and the target is untouched.
//    The only file ever deleted is that temporary.
//  - a directory, a missing parent directory or no write permission: InvalidArgument naming
//    the path and what is wrong; other I/O failures (disk full): Internal with the errno text.
//
// OutputPaths: what a command reads and writes. Add every input path (Input) and every
// output path (Output) with the option that named it, then Check() before the work:
//  - an output that is one of the inputs (same file by device and inode, or the same resolved
//    path) is refused, so `--json cluster.json` never destroys an input;
//  - two outputs on the same file are refused;
//  - each output must be writable: not a directory, its directory exists and is writable,
//    an existing file is writable (a device is accepted).
// Messages name the options, e.g. "--json: 'a.json' is also the input of --cluster; choose
// another output path". Empty paths are ignored (option not given).
// Thread-safety: free functions are reentrant; an OutputPaths is used by one thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera::core {

[[nodiscard]] Status WriteFileAtomically(const std::string& path, std::string_view contents);

class OutputPaths {
 public:
  // `option` names the path in messages, e.g. "--cluster".
  void Input(const std::string& option, const std::string& path);
  void Output(const std::string& option, const std::string& path);
  [[nodiscard]] Status Check() const;

 private:
  struct Entry {
    std::string option;
    std::string path;
  };
  std::vector<Entry> inputs_;
  std::vector<Entry> outputs_;
};

// InvalidArgument unless `path` could be written now (the Output checks above, alone).
[[nodiscard]] Status CheckWritable(const std::string& option, const std::string& path);

}  // namespace tessera::core
