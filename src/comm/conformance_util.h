// Shared helpers of the conformance checks (conformance.cc, conformance_dtypes.cc): failure
// accumulation, seeded values every rank can compute, random block layouts. Test support only.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "comm/communicator.h"
#include "core/rng.h"

namespace tessera::comm::testing {

template <typename T>
double ToDouble(T v) {
  if constexpr (std::is_same_v<T, Bf16>) {
    return Bf16ToFloat(v);
  } else {
    return static_cast<double>(v);
  }
}

// An element for messages: bf16 shows its bits too.
template <typename T>
std::string Show(T v) {
  if constexpr (std::is_same_v<T, Bf16>) {
    return fmt::format("bf16 0x{:04x} ({})", v.bits, Bf16ToFloat(v));
  } else {
    return fmt::format("{}", v);
  }
}

inline constexpr float kSentinel = -777.0f;

// Accumulates failures so that a check keeps making the same communication calls.
class Failures {
 public:
  explicit Failures(const Communicator& comm) : rank_(comm.rank()), size_(comm.size()) {}
  void Add(std::string message) {
    if (messages_.size() < 6) messages_.push_back(std::move(message));
    ++count_;
  }
  void ExpectOk(const Status& s, const std::string& what) {
    if (!s.ok()) Add(what + ": " + s.ToString());
  }
  void ExpectCode(const Status& s, core::StatusCode code, const std::string& what) {
    if (s.code() != code) {
      Add(fmt::format("{}: expected {}, got {}", what, core::StatusCodeName(code), s.ToString()));
    }
  }
  void Expect(bool cond, const std::string& what) {
    if (!cond) Add(what);
  }
  // Bitwise equality (data movement must not change a single bit).
  template <typename T>
  void ExpectSame(std::span<const T> got, std::span<const T> want, const std::string& what) {
    if (got.size() != want.size()) {
      Add(fmt::format("{}: got {} elements, expected {}", what, got.size(), want.size()));
      return;
    }
    for (size_t k = 0; k < got.size(); ++k) {
      if (std::memcmp(&got[k], &want[k], sizeof(T)) != 0) {
        Add(fmt::format("{}: element {} is {}, expected {}", what, k, Show(got[k]), Show(want[k])));
        return;
      }
    }
  }
  template <typename T>
  void ExpectNear(std::span<const T> got, std::span<const double> want,
                  std::span<const double> scale, double rel, const std::string& what) {
    for (size_t k = 0; k < got.size(); ++k) {
      if (!(std::abs(ToDouble(got[k]) - want[k]) <= rel * scale[k] + 1e-30)) {
        Add(fmt::format("{}: element {} is {}, expected {} (tolerance {})", what, k, Show(got[k]),
                        want[k], rel * scale[k]));
        return;
      }
    }
  }
  Status Result() const {
    if (count_ == 0) return Status::Ok();
    return core::Internal(fmt::format("rank {} of {}: {} failure(s): {}", rank_, size_, count_,
                                      fmt::join(messages_, " | ")));
  }

 private:
  int rank_;
  int size_;
  int count_ = 0;
  std::vector<std::string> messages_;
};

// A deterministic value for element k of the message (a -> b); every rank can compute it.
inline double Value(uint64_t seed, uint64_t a, uint64_t b, uint64_t k) {
  core::Rng rng = core::Rng(seed).Fork((a << 40) ^ (b << 20) ^ k);
  return rng.Uniform(-1.0, 1.0);
}
inline float ValueF(uint64_t seed, uint64_t a, uint64_t b, uint64_t k) {
  return static_cast<float>(Value(seed, a, b, k));
}

// Blocks placed in a random order with random gaps (the gaps hold kSentinel).
struct Layout {
  std::vector<int64_t> counts;
  std::vector<int64_t> displs;
  int64_t total = 0;
};

inline Layout MakeLayout(std::vector<int64_t> counts, core::Rng& rng) {
  const int n = static_cast<int>(counts.size());
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  for (int i = n - 1; i > 0; --i) std::swap(order[i], order[rng.Below(i + 1)]);
  Layout layout;
  layout.displs.assign(n, 0);
  int64_t at = static_cast<int64_t>(rng.Below(3));
  for (int idx : order) {
    layout.displs[idx] = at;
    at += counts[idx] + static_cast<int64_t>(rng.Below(3));
  }
  layout.counts = std::move(counts);
  layout.total = at;
  return layout;
}

template <typename T>
std::span<const T> C(const std::vector<T>& v) {
  return std::span<const T>(v);
}

}  // namespace tessera::comm::testing
