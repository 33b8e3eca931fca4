// The trace a `tessera xema` command works on: a trace file (--trace) or an analytic trace of a
// public model (--analytic NAME --size WxH [--frames F] --steps N [--cfg on|off]
// [--unfused-attention]). Exactly one of --trace and --analytic.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "cli/options.h"
#include "core/status.h"
#include "xema/memory_trace.h"

namespace tessera::cli {

struct TraceSourceArgs {
  std::string trace_path;
  std::string analytic;
  std::string size = "1024x1024";
  int64_t frames = 1;
  int64_t steps = 28;
  std::string cfg = "default";
  bool unfused_attention = false;
};

void AddTraceSourceOptions(CLI::App* app, TraceSourceArgs* args, CommandPaths* paths);
core::StatusOr<xema::MemoryTrace> LoadTraceSource(const TraceSourceArgs& args);

}  // namespace tessera::cli
