#include "core/log.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace tessera::core {

namespace {

constexpr LogLevel kDefaultLevel = LogLevel::kWarn;

std::mutex& OutputMutex() {
  static std::mutex m;
  return m;
}

// The complaint about an invalid TESSERA_LOG, written just before the first line the log
// writes (under OutputMutex); empty once written or when there is none.
std::string& PendingWarning() {
  static std::string w;
  return w;
}

std::string FormatLine(LogLevel level, const char* file, int line, std::string_view message);

const char* Basename(const char* path) {
  const char* base = path;
  for (const char* p = path; *p != '\0'; ++p)
    if (*p == '/') base = p + 1;
  return base;
}

}  // namespace

namespace internal {

std::atomic<int> g_log_threshold{-1};

LogLevel ThresholdFromEnv(const char* value, std::string* warning) {
  if (value == nullptr || *value == '\0') return kDefaultLevel;
  auto level = ParseLogLevel(value);
  if (level.ok()) return *level;
  if (warning != nullptr) *warning = level.status().message() + " (using warn)";
  return kDefaultLevel;
}

int InitLogThreshold() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::string warning;
    const LogLevel level = ThresholdFromEnv(std::getenv("TESSERA_LOG"), &warning);
    int expected = -1;  // SetLogLevel may have run first; it wins
    g_log_threshold.compare_exchange_strong(expected, static_cast<int>(level));
    if (!warning.empty()) {
      std::lock_guard<std::mutex> lock(OutputMutex());
      PendingWarning() = FormatLine(LogLevel::kWarn, __FILE__, __LINE__, warning);
    }
  });
  return g_log_threshold.load(std::memory_order_relaxed);
}

void LogLine(LogLevel level, const char* file, int line, std::string_view message) {
  std::string out = FormatLine(level, file, line, message);
  std::lock_guard<std::mutex> lock(OutputMutex());
  if (!PendingWarning().empty()) {
    out.insert(0, PendingWarning());
    PendingWarning().clear();
  }
  std::fwrite(out.data(), 1, out.size(), stderr);
  std::fflush(stderr);
}

}  // namespace internal

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
  }
  return "?";
}

StatusOr<LogLevel> ParseLogLevel(std::string_view text) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "error" || lower == "0") return LogLevel::kError;
  if (lower == "warn" || lower == "warning" || lower == "1") return LogLevel::kWarn;
  if (lower == "info" || lower == "2") return LogLevel::kInfo;
  if (lower == "debug" || lower == "3") return LogLevel::kDebug;
  return InvalidArgument("TESSERA_LOG: got '" + std::string(text) +
                         "', must be one of error, warn, info, debug or 0-3");
}

namespace {

std::string FormatLine(LogLevel level, const char* file, int line, std::string_view message) {
  static constexpr char kTag[] = {'E', 'W', 'I', 'D'};
  return fmt::format("tessera {} {}:{}: {}\n", kTag[static_cast<int>(level)], Basename(file), line,
                     message);
}

}  // namespace

LogLevel GetLogLevel() { return static_cast<LogLevel>(internal::InitLogThreshold()); }

void SetLogLevel(LogLevel level) {
  internal::InitLogThreshold();  // read TESSERA_LOG first so that it cannot override this
  internal::g_log_threshold.store(static_cast<int>(level), std::memory_order_relaxed);
}

}  // namespace tessera::core
