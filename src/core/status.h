// Status and StatusOr<T>: the result of an operation that can fail in an expected way
// (bad configuration, infeasible plan, out of memory under a budget, I/O errors).
//
// A Status is either OK or carries a code and a one-line message a user can act on,
// e.g. `cluster.nodes: got 0, must be >= 1`. StatusOr<T> holds either a T or a non-OK
// Status. Both are cheap value types; they are not thread-safe to mutate concurrently.
// Broken invariants (programming errors) use CHECK from check.h instead.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "core/check.h"

namespace tessera::core {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // user input is malformed or out of range
  kNotFound,         // a named preset, file or key does not exist
  kInfeasible,       // a plan or model has no feasible solution (e.g. out of memory)
  kFailedPrecondition,
  kInternal,     // a library we call failed unexpectedly
  kUnavailable,  // a peer or resource went away (e.g. an MPI rank died)
  kDeadlineExceeded,
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: <message>" or "OK".
  std::string ToString() const;
  // Returns a copy whose message is "<prefix>: <message>".
  Status WithPrefix(const std::string& prefix) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status Infeasible(std::string m) { return {StatusCode::kInfeasible, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status DeadlineExceeded(std::string m) {
  return {StatusCode::kDeadlineExceeded, std::move(m)};
}

// A file path as error messages quote it: 'path'.
inline std::string QuotedPath(const std::string& path) { return "'" + path + "'"; }

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const Status& status) : status_(status) {  // NOLINT: implicit by design
    CHECK(!status_.ok()) << "StatusOr constructed from an OK Status without a value";
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  const T& value() const& {
    CHECK(ok()) << "StatusOr::value() on error: " << status_.ToString();
    return *value_;
  }
  T& value() & {
    CHECK(ok()) << "StatusOr::value() on error: " << status_.ToString();
    return *value_;
  }
  T&& value() && {
    CHECK(ok()) << "StatusOr::value() on error: " << status_.ToString();
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace tessera::core

#define TESSERA_CONCAT_INNER(a, b) a##b
#define TESSERA_CONCAT(a, b) TESSERA_CONCAT_INNER(a, b)

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define RETURN_IF_ERROR(expr)             \
  do {                                    \
    ::tessera::core::Status _st = (expr); \
    if (!_st.ok()) return _st;            \
  } while (0)

// ASSIGN_OR_RETURN(lhs, expr): evaluates a StatusOr; on error returns its Status,
// otherwise moves the value into `lhs` (which may be a declaration).
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(TESSERA_CONCAT(_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
