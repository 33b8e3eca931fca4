// The contract every `tessera` command line must keep, however bad its arguments or input
// files ("never crash, never destroy a file"), as the CLI fuzz harness checks it per case:
//  - kSignal: the process is not ended by a signal (no crash, no abort);
//  - kTimeout: it ends within the case timeout (no hang);
//  - kExitCode: it exits 0 (success) or 1 (user error), never 2 (internal error) or another
//    code;
//  - kStderr: when it exits 1, stderr is exactly one line and it starts with "tessera: ";
//  - kInputChanged: every file that was there before (inputs, symlinks, folders) is
//    byte-identical afterwards;
//  - kStrayFile: it leaves nothing behind but the outputs it was asked to write.
// The first four are judged here from the process result; the last two from the work folder
// (case_runner.h).
#pragma once

#include <string>
#include <vector>

#include "process_runner.h"

namespace tessera::fuzz {

enum class FailureClass { kSignal, kTimeout, kExitCode, kStderr, kInputChanged, kStrayFile };
inline constexpr int kNumFailureClasses = 6;

// "signal", "timeout", "exit code", "stderr", "input changed", "stray file".
const char* FailureClassName(FailureClass c);

struct Failure {
  FailureClass cls;
  std::string detail;  // one line, e.g. "exit 2: tessera: /dev/full: write failed"
};

std::vector<Failure> CheckProcess(const ProcessResult& r);

// The first line of `text` (without the newline), cut to `max` characters.
std::string FirstLine(const std::string& text, size_t max = 160);

}  // namespace tessera::fuzz
