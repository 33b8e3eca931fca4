#include "core/parse_number.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace tessera::core {
namespace {

std::string Got(const std::string& text) {
  constexpr size_t kMaxShown = 60;
  return "got '" + (text.size() > kMaxShown ? text.substr(0, kMaxShown) + "..." : text) + "'";
}

}  // namespace

std::string ShowNumber(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

StatusOr<int64_t> ParseInteger(const std::string& text, int64_t lo, int64_t hi) {
  const std::string allowed =
      "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
  size_t i = (!text.empty() && (text[0] == '-' || text[0] == '+')) ? 1 : 0;
  if (i == text.size() || text.find_first_not_of("0123456789", i) != std::string::npos) {
    return InvalidArgument(Got(text) + ", " + allowed);
  }
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || v < lo || v > hi) return InvalidArgument(Got(text) + ", " + allowed);
  return static_cast<int64_t>(v);
}

StatusOr<double> ParseNumber(const std::string& text, double lo, double hi, bool lo_open) {
  const std::string allowed =
      "must be a finite number " + (lo_open ? "> " + ShowNumber(lo) + " and <= " + ShowNumber(hi)
                                            : "from " + ShowNumber(lo) + " to " + ShowNumber(hi));
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos ||
      text.find_first_not_of("0123456789+-.eE") != std::string::npos) {
    return InvalidArgument(Got(text) + ", " + allowed);
  }
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v) ||
      (lo_open ? !(v > lo) : !(v >= lo)) || !(v <= hi)) {
    // ERANGE also flags underflow (1e-400): refused as out of range like overflow.
    return InvalidArgument(Got(text) + ", " + allowed);
  }
  return v;
}

}  // namespace tessera::core
