// Leveled logging to stderr for diagnostics a developer turns on (solver progress, search
// decisions); never for results, which go to stdout, JSON or a Status.
//
// Levels, most to least severe: kError, kWarn, kInfo, kDebug. A message is written when its
// level is at or above the threshold's severity. The threshold comes from the environment
// variable TESSERA_LOG, read once at the first log statement: a name (error, warn, warning,
// info, debug; any case) or a number 0-3 (0 = error ... 3 = debug). Unset or empty means
// kWarn; an invalid value is reported once on stderr, just before the first line the log
// writes, and kWarn is kept (a run whose log stays silent, say one whose only statements are
// disabled debug ones, says nothing about it: a command that fails still prints one line).
// SetLogLevel overrides it (tests, a --verbose flag).
//
//   TLOG(kDebug, "ecf: {} vars, lb {:.4f}", vars, lb);   // fmt-style (fmt::format)
//   TLOG_STREAM(kInfo) << "groups: " << n;                // ostream-style
//
// Both macros test the level first: when it is disabled the arguments are not evaluated and
// nothing is formatted (one relaxed atomic load). Each message is one line
// "tessera D file.cc:123: text" written with a single write under a mutex, so lines of
// concurrent threads never interleave. Thread-safe.
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <sstream>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tessera::core {

enum class LogLevel : int { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// "error", "warn", "info", "debug".
const char* LogLevelName(LogLevel level);
// A name (error, warn, warning, info, debug; case-insensitive) or a number 0-3; otherwise
// InvalidArgument "TESSERA_LOG: got 'x', must be one of error, warn, info, debug or 0-3".
StatusOr<LogLevel> ParseLogLevel(std::string_view text);

LogLevel GetLogLevel();
void SetLogLevel(LogLevel level);

namespace internal {
// The threshold as an int; -1 until TESSERA_LOG has been read.
extern std::atomic<int> g_log_threshold;
// Reads TESSERA_LOG once (later calls return the stored threshold).
int InitLogThreshold();
// The threshold TESSERA_LOG=`value` selects (nullptr = unset) and, when `value` is invalid,
// the warning to print; exposed for tests.
LogLevel ThresholdFromEnv(const char* value, std::string* warning);
// Writes one formatted line to stderr.
void LogLine(LogLevel level, const char* file, int line, std::string_view message);

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line)
      : level_(level), file_(file), line_(line) {}
  ~LogMessage() { LogLine(level_, file_, line_, stream_.str()); }
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  const char* file_;
  int line_;
  std::ostringstream stream_;
};
}  // namespace internal

// True when a message of `level` is written.
inline bool LogEnabled(LogLevel level) {
  int t = internal::g_log_threshold.load(std::memory_order_relaxed);
  if (t < 0) t = internal::InitLogThreshold();
  return static_cast<int>(level) <= t;
}

}  // namespace tessera::core

// TLOG(kDebug, "format {}", args...): fmt-style; arguments evaluated only when enabled.
#define TLOG(level, ...)                                                                       \
  do {                                                                                         \
    if (::tessera::core::LogEnabled(::tessera::core::LogLevel::level)) {                       \
      ::tessera::core::internal::LogLine(::tessera::core::LogLevel::level, __FILE__, __LINE__, \
                                         ::fmt::format(__VA_ARGS__));                          \
    }                                                                                          \
  } while (0)

// TLOG_STREAM(kInfo) << ...: ostream-style; the chain is evaluated only when enabled.
#define TLOG_STREAM(level)                                                                      \
  if (!::tessera::core::LogEnabled(::tessera::core::LogLevel::level)) {                         \
  } else                                                                                        \
    ::tessera::core::internal::LogMessage(::tessera::core::LogLevel::level, __FILE__, __LINE__) \
        .stream()
