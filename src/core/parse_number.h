// Strict parsing of numbers a user typed (command-line values, planner options, environment
// variables), shared so every command accepts and refuses the same text:
//   ParseInteger: optional sign and decimal digits only ("010" is ten, "0x10" and "1e3" are
//     refused), within [lo, hi]; values beyond int64 are refused, never wrapped or clamped.
//   ParseNumber: a decimal or scientific number that is finite (nan, inf and 1e400 refused)
//     and within [lo, hi]; `lo_open` makes the lower bound exclusive ("must be > 0").
// Errors are InvalidArgument "got 'TEXT', must be ..." (the caller prefixes the option name).
// ShowNumber: how messages quote a number (ostream's default form: 600, 1e-300, 0.001).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace tessera::core {

StatusOr<int64_t> ParseInteger(const std::string& text, int64_t lo, int64_t hi);
std::string ShowNumber(double v);
StatusOr<double> ParseNumber(const std::string& text, double lo, double hi, bool lo_open = false);

}  // namespace tessera::core
