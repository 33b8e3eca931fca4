#include "kernelflume/trace_replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/rng.h"
#include "core/stats.h"
#include "kernelflume/completion_engine.h"
#include "kernelflume/tpot_windows.h"

namespace tessera::kernelflume {

core::StatusOr<ScaledTrace> ScaleTraceForReplay(const std::vector<workload::TraceRequest>& trace,
                                                const ReplayScaling& s,
                                                const models::LlamaConfig& config) {
  const double out_scale = s.output_scale > 0 ? s.output_scale : s.token_scale;
  for (auto [name, v] :
       {std::pair{"token_scale", s.token_scale}, std::pair{"output_scale", out_scale},
        std::pair{"time_scale", s.time_scale}}) {
    if (!(v > 0) || !std::isfinite(v)) {
      return core::InvalidArgument(fmt::format("{}: got {}, must be > 0", name, v));
    }
  }
  if (!(s.start_s >= 0) || s.max_requests < 0) {
    return core::InvalidArgument(
        fmt::format("start_s {} and max_requests {}: must be >= 0", s.start_s, s.max_requests));
  }
  if (config.max_context < 2) {
    return core::InvalidArgument("model: its context holds fewer than 2 tokens");
  }
  ScaledTrace out;
  core::Rng rng(s.seed);
  const int64_t vocab = std::min<int64_t>(config.vocab, 256);
  const double start_ms = s.start_s * 1e3;
  for (const workload::TraceRequest& r : trace) {
    if (static_cast<double>(r.timestamp_ms) < start_ms) continue;
    if (s.max_requests > 0 && static_cast<int64_t>(out.requests.size()) >= s.max_requests) break;
    int64_t prompt =
        std::max<int64_t>(1, std::llround(static_cast<double>(r.input_length) * s.token_scale));
    int64_t output =
        std::max<int64_t>(1, std::llround(static_cast<double>(r.output_length) * out_scale));
    if (prompt + output > config.max_context) {
      ++out.clamped;
      output = std::min(output, config.max_context / 2);
      prompt = std::min(prompt, config.max_context - output);
    }
    TraceRequest q;
    q.arrival_s = (static_cast<double>(r.timestamp_ms) - start_ms) / 1e3 * s.time_scale;
    q.max_tokens = output;
    q.prompt.resize(static_cast<size_t>(prompt));
    for (int32_t& t : q.prompt) t = static_cast<int32_t>(rng.Below(static_cast<uint64_t>(vocab)));
    out.requests.push_back(std::move(q));
  }
  if (out.requests.empty()) {
    return core::InvalidArgument(
        fmt::format("trace: no request at or after start_s {} s", s.start_s));
  }
  return out;
}

std::vector<EngineSimRequest> EngineSimRequestsOf(const std::vector<TraceRequest>& requests,
                                                  int64_t page_tokens, int64_t range_tokens) {
  std::vector<EngineSimRequest> out;
  for (const TraceRequest& r : requests) {
    const int64_t prompt = static_cast<int64_t>(r.prompt.size());
    out.push_back({r.arrival_s, prompt, r.max_tokens,
                   ReserveTokens(prompt + r.max_tokens, page_tokens, range_tokens)});
  }
  return out;
}

ReplayComparison CompareReplay(const std::vector<std::vector<double>>& real_token_s,
                               const std::vector<std::vector<double>>& predicted_token_s) {
  ReplayComparison c;
  const std::vector<double> real = TpotGapsMs(real_token_s);
  const std::vector<double> predicted = TpotGapsMs(predicted_token_s);
  c.real_samples = static_cast<int64_t>(real.size());
  c.predicted_samples = static_cast<int64_t>(predicted.size());
  c.real_p50_ms = core::Percentile(real, 50);
  c.real_p99_ms = core::Percentile(real, 99);
  c.predicted_p50_ms = core::Percentile(predicted, 50);
  c.predicted_p99_ms = core::Percentile(predicted, 99);
  c.p50_error =
      c.real_p50_ms > 0 ? std::abs(c.predicted_p50_ms - c.real_p50_ms) / c.real_p50_ms : 0;
  c.p99_error =
      c.real_p99_ms > 0 ? std::abs(c.predicted_p99_ms - c.real_p99_ms) / c.real_p99_ms : 0;
  return c;
}

}  // namespace tessera::kernelflume
