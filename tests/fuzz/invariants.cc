#include "invariants.h"

#include <cstdio>
#include <cstring>

namespace tessera::fuzz {
namespace {

constexpr const char* kPrefix = "tessera: ";

std::string LastLine(const std::string& text, size_t max = 160) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const size_t nl = t.find_last_of('\n');
  return FirstLine(nl == std::string::npos ? t : t.substr(nl + 1), max);
}

}  // namespace

const char* FailureClassName(FailureClass c) {
  switch (c) {
    case FailureClass::kSignal:
      return "signal";
    case FailureClass::kTimeout:
      return "timeout";
    case FailureClass::kExitCode:
      return "exit code";
    case FailureClass::kStderr:
      return "stderr";
    case FailureClass::kInputChanged:
      return "input changed";
    case FailureClass::kStrayFile:
      return "stray file";
  }
  return "?";
}

std::string FirstLine(const std::string& text, size_t max) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > max) line = line.substr(0, max) + "...";
  for (char& ch : line)
    if (static_cast<unsigned char>(ch) < 0x20) ch = '?';
  return line;
}

std::vector<Failure> CheckProcess(const ProcessResult& r) {
  std::vector<Failure> f;
  if (r.timed_out) {
    char after[96];
    std::snprintf(after, sizeof(after),
                  r.cpu_limit ? "used %g s of CPU without ending (killed); stderr: "
                              : "still running after %g s (killed); stderr: ",
                  r.limit_s);
    f.push_back({FailureClass::kTimeout, after + LastLine(r.stderr_text)});
    return f;
  }
  if (r.signaled) {
    f.push_back({FailureClass::kSignal, "killed by signal " + std::to_string(r.signal) + " (" +
                                            strsignal(r.signal) +
                                            "); stderr: " + LastLine(r.stderr_text)});
    return f;
  }
  if (r.exit_code != 0 && r.exit_code != 1) {
    f.push_back({FailureClass::kExitCode,
                 "exit " + std::to_string(r.exit_code) + "; stderr: " + FirstLine(r.stderr_text)});
  }
  if (r.exit_code == 1) {
    const std::string& e = r.stderr_text;
    size_t lines = 0;
    for (size_t i = 0; i < e.size(); ++i)
      if (e[i] == '\n' && i + 1 < e.size()) ++lines;
    const bool one_line = !e.empty() && lines == 0 && !r.stderr_truncated;
    const bool prefixed = e.compare(0, std::strlen(kPrefix), kPrefix) == 0;
    if (!one_line || !prefixed) {
      std::string why = e.empty() ? "empty" : std::to_string(lines + 1) + " lines";
      if (r.stderr_truncated) why = "over " + std::to_string(e.size()) + " bytes";
      if (!e.empty() && !prefixed) why += ", not \"tessera: ...\"";
      f.push_back({FailureClass::kStderr, "exit 1, stderr " + why + ": " + FirstLine(e)});
    }
  }
  return f;
}

}  // namespace tessera::fuzz
