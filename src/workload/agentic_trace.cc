#include "workload/agentic_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/rng.h"
#include "core/stats.h"

namespace tessera::workload {
namespace {

using core::InvalidArgument;
using core::Status;

// Streams of the seed: arrivals, and one per session.
constexpr uint64_t kArrivalStream = 1;
constexpr uint64_t kSessionStream = 2;
// The most hash ids a generated trace may hold (1 GiB of ids): more sessions or turns than a
// simulation needs are refused before they take the memory.
constexpr int64_t kMaxGeneratedIds = int64_t{1} << 27;

Status CheckCount(int64_t v, int64_t lo, int64_t hi, const char* field) {
  if (v < lo || v > hi) {
    return InvalidArgument(fmt::format("{}: got {}, must be in [{}, {}]", field, v, lo, hi));
  }
  return Status::Ok();
}

Status CheckReal(double v, double lo, double hi, const char* field, const char* unit = "") {
  if (!std::isfinite(v) || v < lo || v > hi) {
    return InvalidArgument(
        fmt::format("{}: got {}, must be in [{}, {}]{}", field, v, lo, hi, unit));
  }
  return Status::Ok();
}

double LogNormal(core::Rng& rng, double median, double sigma) {
  return std::exp(std::log(median) + sigma * rng.Normal());
}

// A draw as whole tokens in [1, kMaxTraceTokens] (a wide log-normal can pass any bound).
int64_t Tokens(double v) {
  return std::llround(std::clamp(v, 1.0, static_cast<double>(kMaxTraceTokens)));
}

// The longest tool gap a draw may give (a wide log-normal's tail would otherwise overflow the
// millisecond clock).
constexpr double kMaxToolGapS = 1e9;

// One request before its hash ids are known.
struct Draft {
  double arrival_ms = 0;
  int64_t input = 0, output = 0;
  int64_t shared_blocks = 0;  // turn 1: leading blocks common to every session
  int64_t kept_blocks = 0;    // turn > 1: leading blocks repeated from the previous turn
  AgenticStep step;
};

// The start of every session, in session order.
std::vector<double> SessionStartsMs(const AgenticTraceOptions& o) {
  core::Rng rng = core::Rng(o.seed).Keyed({kArrivalStream});
  const double per_event = 1.0 + o.burst_probability * static_cast<double>(o.burst_sessions - 1);
  const double event_rate_per_s = static_cast<double>(o.sessions) / o.duration_s / per_event;
  std::vector<double> starts;
  starts.reserve(static_cast<size_t>(o.sessions));
  double t_s = 0;
  while (static_cast<int64_t>(starts.size()) < o.sessions) {
    t_s += -std::log(1.0 - rng.Uniform()) / event_rate_per_s;
    const bool burst = rng.Uniform() < o.burst_probability;
    const int64_t n = burst ? o.burst_sessions : 1;
    for (int64_t i = 0; i < n && static_cast<int64_t>(starts.size()) < o.sessions; ++i) {
      const double offset_s = i == 0 ? 0 : rng.Uniform(0, o.burst_window_s);
      starts.push_back((t_s + offset_s) * 1000.0);
    }
  }
  return starts;
}

// The turns of session `s`, starting at start_ms.
void DraftSession(const AgenticTraceOptions& o, int64_t s, double start_ms,
                  std::vector<Draft>* out) {
  core::Rng rng = core::Rng(o.seed).Keyed({kSessionStream, static_cast<uint64_t>(s)});
  // 1 + Geometric(q) extra turns with mean mean_turns - 1: q = (m - 1) / m.
  int64_t turns = 1;
  if (o.mean_turns > 1) {
    const double q = (o.mean_turns - 1) / o.mean_turns;
    turns += static_cast<int64_t>(std::floor(std::log(1.0 - rng.Uniform()) / std::log(q)));
  }
  const int64_t shared_blocks = o.shared_prefix_tokens / kTraceBlockTokens;
  double t_ms = start_ms;
  int64_t prev_input = 0, prev_output = 0;
  for (int64_t k = 1; k <= turns; ++k) {
    Draft d;
    d.step.session = s;
    d.step.turn = k;
    if (k == 1) {
      d.input = std::max(Tokens(LogNormal(rng, static_cast<double>(o.initial_context_median_tokens),
                                          o.initial_context_sigma)),
                         o.shared_prefix_tokens + 1);
      d.input = std::min(d.input, o.max_context_tokens);
      d.shared_blocks = shared_blocks;
      d.step.append_tokens = d.input;
    } else {
      const int64_t append =
          Tokens(LogNormal(rng, static_cast<double>(o.append_median_tokens), o.append_sigma));
      const double gap_s =
          std::min(LogNormal(rng, o.tool_gap_median_s, o.tool_gap_sigma), kMaxToolGapS);
      d.step.prefix_tokens = prev_input + prev_output;
      d.step.append_tokens = append;
      d.input = d.step.prefix_tokens + append;
      if (d.input > o.max_context_tokens) break;
      d.kept_blocks = prev_input / kTraceBlockTokens;
      t_ms += static_cast<double>(prev_output) * o.decode_ms_per_token + gap_s * 1000.0;
    }
    d.output = Tokens(LogNormal(rng, static_cast<double>(o.output_median_tokens), o.output_sigma));
    d.arrival_ms = t_ms;
    prev_input = d.input;
    prev_output = d.output;
    out->push_back(d);
  }
}

}  // namespace

Status ValidateAgenticTrace(const AgenticTraceOptions& o) {
  RETURN_IF_ERROR(CheckCount(o.sessions, 1, 100000, "sessions"));
  RETURN_IF_ERROR(CheckReal(o.duration_s, 1e-3, 1e7, "duration_s", " seconds"));
  RETURN_IF_ERROR(CheckReal(o.burst_probability, 0, 1, "burst_probability"));
  RETURN_IF_ERROR(CheckCount(o.burst_sessions, 1, 10000, "burst_sessions"));
  RETURN_IF_ERROR(CheckReal(o.burst_window_s, 0, 3600, "burst_window_s", " seconds"));
  RETURN_IF_ERROR(CheckReal(o.mean_turns, 1, 10000, "mean_turns"));
  RETURN_IF_ERROR(CheckCount(o.max_context_tokens, 2, kMaxTraceTokens, "max_context_tokens"));
  RETURN_IF_ERROR(CheckCount(o.initial_context_median_tokens, 1, o.max_context_tokens,
                             "initial_context_median_tokens"));
  if (o.shared_prefix_tokens < 0 || o.shared_prefix_tokens >= o.max_context_tokens) {
    return InvalidArgument(fmt::format(
        "shared_prefix_tokens: got {}, must be in [0, max_context_tokens {}) (0: no prefix "
        "common to every session)",
        o.shared_prefix_tokens, o.max_context_tokens));
  }
  RETURN_IF_ERROR(CheckCount(o.append_median_tokens, 1, kMaxTraceTokens, "append_median_tokens"));
  RETURN_IF_ERROR(CheckCount(o.output_median_tokens, 1, kMaxTraceTokens, "output_median_tokens"));
  RETURN_IF_ERROR(CheckReal(o.tool_gap_median_s, 1e-6, 86400, "tool_gap_median_s", " seconds"));
  RETURN_IF_ERROR(CheckReal(o.decode_ms_per_token, 0, 10000, "decode_ms_per_token"));
  for (auto [v, field] : {std::pair{o.initial_context_sigma, "initial_context_sigma"},
                          {o.append_sigma, "append_sigma"},
                          {o.output_sigma, "output_sigma"},
                          {o.tool_gap_sigma, "tool_gap_sigma"}}) {
    RETURN_IF_ERROR(CheckReal(v, 0, 4, field, " (the log-normal's sigma)"));
  }
  return Status::Ok();
}

core::StatusOr<AgenticTrace> MakeAgenticTrace(const AgenticTraceOptions& o) {
  RETURN_IF_ERROR(ValidateAgenticTrace(o));
  const std::vector<double> starts = SessionStartsMs(o);
  std::vector<Draft> drafts;
  int64_t ids = 0;
  for (int64_t s = 0; s < o.sessions; ++s) {
    const size_t first = drafts.size();
    DraftSession(o, s, starts[static_cast<size_t>(s)], &drafts);
    for (size_t i = first; i < drafts.size(); ++i) ids += TraceBlocks(drafts[i].input);
    if (ids > kMaxGeneratedIds) {
      return InvalidArgument(fmt::format(
          "sessions {} x mean_turns {}: the trace would hold more than {} hash ids; ask for "
          "fewer sessions or turns",
          o.sessions, o.mean_turns, kMaxGeneratedIds));
    }
  }
  // File order: arrival time (in whole ms), then session and turn, so a session's turns keep
  // their order when two land on the same millisecond.
  std::vector<size_t> order(drafts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto key = [&](size_t i) {
    return std::make_tuple(std::llround(drafts[i].arrival_ms), drafts[i].step.session,
                           drafts[i].step.turn);
  };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });

  AgenticTrace trace;
  trace.requests.reserve(drafts.size());
  trace.steps.reserve(drafts.size());
  int64_t next_id = 0;
  std::vector<int64_t> shared;  // the common prefix's ids, handed out on first use
  std::vector<std::vector<int64_t>> last_ids(static_cast<size_t>(o.sessions));
  for (size_t i : order) {
    const Draft& d = drafts[i];
    TraceRequest r;
    r.timestamp_ms = std::llround(d.arrival_ms);
    r.input_length = d.input;
    r.output_length = d.output;
    const int64_t blocks = TraceBlocks(d.input);
    std::vector<int64_t>& previous = last_ids[static_cast<size_t>(d.step.session)];
    if (d.step.turn == 1) {
      while (static_cast<int64_t>(shared.size()) < d.shared_blocks) shared.push_back(next_id++);
      r.hash_ids.assign(shared.begin(), shared.begin() + std::min(d.shared_blocks, blocks));
    } else {
      r.hash_ids.assign(previous.begin(), previous.begin() + d.kept_blocks);
    }
    while (static_cast<int64_t>(r.hash_ids.size()) < blocks) r.hash_ids.push_back(next_id++);
    previous = r.hash_ids;
    trace.requests.push_back(std::move(r));
    trace.steps.push_back(d.step);
  }
  return trace;
}

AgenticMedians AgenticStepMedians(const AgenticTrace& trace) {
  std::vector<double> prefix, append, output;
  for (size_t i = 0; i < trace.steps.size(); ++i) {
    output.push_back(static_cast<double>(trace.requests[i].output_length));
    if (trace.steps[i].turn == 1) continue;
    prefix.push_back(static_cast<double>(trace.steps[i].prefix_tokens));
    append.push_back(static_cast<double>(trace.steps[i].append_tokens));
  }
  AgenticMedians m;
  m.steps = static_cast<int64_t>(prefix.size());
  m.prefix_tokens = core::Median(prefix);
  m.append_tokens = core::Median(append);
  m.output_tokens = core::Median(output);
  return m;
}

}  // namespace tessera::workload
