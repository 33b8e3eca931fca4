// A seeded generator of agentic sessions ("tracelab-like"): long, growing contexts where each
// step sends the whole conversation so far plus a little more, in the Mooncake format
// (request_trace.h). Every default below is our choice [X], set so that the step medians match
// the figures TraceLab reports for agentic decode: median prefix ~120K tokens, append ~880,
// output ~200 per step (AgenticStepMedians measures them; the tests pin them).
//
// Sessions: `sessions` of them start as a Poisson process of arrival events over about
// [0, duration_s): an event is a burst with probability burst_probability, bringing
// burst_sessions sessions whose starts are spread uniformly over burst_window_s; the event rate
// is chosen so that the expected start of the last session is duration_s. A session has
// 1 + Geometric turns with mean mean_turns (its last requests arrive after duration_s).
// Turns of one session:
//   turn 1: input = the initial context ~ LogNormal(median initial_context_median_tokens,
//           sigma initial_context_sigma), at least shared_prefix_tokens + 1; its first
//           floor(shared_prefix_tokens / 512) blocks are the same in every session (a common
//           system prompt and tool list);
//   turn k > 1: prefix = input(k-1) + output(k-1) (the context so far), append ~ LogNormal(
//           append_median_tokens, append_sigma), input = prefix + append; arrival = arrival of
//           turn k-1 + output(k-1) * decode_ms_per_token + tool gap ~ LogNormal(
//           tool_gap_median_s, tool_gap_sigma);
//   every turn: output ~ LogNormal(output_median_tokens, output_sigma), at least 1 token.
// A session ends after its turns or before a prompt would pass max_context_tokens.
// Lengths round to whole tokens, times to whole milliseconds.
// Hash ids: turn k repeats the ids of the floor(input(k-1) / 512) full blocks of turn k-1's
// prompt (an unchanged prefix is the same blocks) and takes new ids for the rest; new ids are
// handed out 0, 1, 2, ... in file order, as in the released Mooncake traces.
// Determinism: each session draws from its own core::Rng stream (Fork of the seed), arrivals
// from another: the same options give the same requests, and FormatMooncakeTrace the same bytes,
// on every run (LogNormal and Exp draws go through the C library's log/exp/cos).
// Errors: InvalidArgument naming the field (counts < 1, medians < 1, sigmas outside [0, 4],
// probabilities outside [0, 1], a context limit below the initial context's floor, ...).
// Plain values and free functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "workload/request_trace.h"

namespace tessera::workload {

struct AgenticTraceOptions {
  uint64_t seed = 1;
  int64_t sessions = 100;
  double duration_s = 600;
  double burst_probability = 0.1;
  int64_t burst_sessions = 4;
  double burst_window_s = 2;
  double mean_turns = 24;
  int64_t initial_context_median_tokens = 81920;
  double initial_context_sigma = 0.5;
  int64_t shared_prefix_tokens = 4096;
  int64_t append_median_tokens = 880;
  double append_sigma = 1.0;
  int64_t output_median_tokens = 200;
  double output_sigma = 0.8;
  double tool_gap_median_s = 2;
  double tool_gap_sigma = 1.0;
  double decode_ms_per_token = 20;
  int64_t max_context_tokens = int64_t{1} << 20;
};

// Where a request of the trace came from (parallel to the requests).
struct AgenticStep {
  int64_t session = 0;
  int64_t turn = 0;           // 1-based
  int64_t prefix_tokens = 0;  // the context carried from the session's previous turn; 0 on turn 1
  int64_t append_tokens = 0;  // input_length - prefix_tokens
};

struct AgenticTrace {
  std::vector<TraceRequest> requests;  // in arrival order
  std::vector<AgenticStep> steps;      // steps[i] describes requests[i]
};

// Medians over the steps after each session's first turn (prefix, append) and over every
// request (output), as TraceLab reports them per step.
struct AgenticMedians {
  int64_t steps = 0;  // turns after the first
  double prefix_tokens = 0, append_tokens = 0, output_tokens = 0;
};

core::Status ValidateAgenticTrace(const AgenticTraceOptions& o);
core::StatusOr<AgenticTrace> MakeAgenticTrace(const AgenticTraceOptions& o);
AgenticMedians AgenticStepMedians(const AgenticTrace& trace);

}  // namespace tessera::workload
