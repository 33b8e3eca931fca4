#include "core/byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tessera::core {
namespace {

struct Unit {
  const char* name;
  double bytes;
};

constexpr Unit kUnits[] = {{"B", 1.0},
                           {"KiB", 1024.0},
                           {"MiB", 1024.0 * 1024},
                           {"GiB", 1024.0 * 1024 * 1024},
                           {"TiB", 1024.0 * 1024 * 1024 * 1024},
                           {"KB", 1e3},
                           {"MB", 1e6},
                           {"GB", 1e9},
                           {"TB", 1e12}};

std::string Allowed(int64_t lo, int64_t hi) {
  return "must be a size from " + FormatBytes(lo) + " to " + FormatBytes(hi) +
         " such as 512MiB, 80GB or 4096 (units B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)";
}

}  // namespace

StatusOr<int64_t> ParseByteSize(const std::string& text, int64_t lo, int64_t hi) {
  const std::string bad = "got '" + text + "', " + Allowed(lo, hi);
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  const std::string number = text.substr(0, i);
  if (number.empty() || number == "." || number.find('.') != number.rfind('.') ||
      number.size() > 40) {
    return InvalidArgument(bad);
  }
  std::string unit = text.substr(i);
  if (!unit.empty() && unit[0] == ' ') {
    unit = unit.substr(1);
    if (unit.empty()) return InvalidArgument(bad);
  }
  double scale = unit.empty() ? 1.0 : 0.0;
  for (const Unit& u : kUnits)
    if (unit == u.name) scale = u.bytes;
  if (scale == 0.0) return InvalidArgument(bad);
  const double value = std::strtod(number.c_str(), nullptr) * scale;
  if (!std::isfinite(value) || value > static_cast<double>(kMaxByteSize)) {
    return InvalidArgument(bad);
  }
  const int64_t bytes = static_cast<int64_t>(std::llround(value));
  if (bytes < lo || bytes > hi) return InvalidArgument(bad);
  return bytes;
}

std::string FormatBytes(int64_t bytes) {
  if (bytes < 0) {
    std::string s = "-";
    s += FormatBytes(bytes == INT64_MIN ? INT64_MAX : -bytes);
    return s;
  }
  static const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0) return std::to_string(bytes) + " B";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3f", v);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s + " " + kNames[u];
}

}  // namespace tessera::core
