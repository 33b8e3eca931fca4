#include "kernelflume/burst_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/rng.h"

namespace tessera::kernelflume {

using core::Status;

Status ValidateBurstTrace(const BurstTraceOptions& o, const models::LlamaConfig& config) {
  if (!(o.duration_s > 0) || !std::isfinite(o.duration_s)) {
    return core::InvalidArgument(fmt::format("duration_s: got {}, must be > 0", o.duration_s));
  }
  if (!(o.base_rate_per_s >= 0) || !(o.burst_rate_per_s >= 0) ||
      o.base_rate_per_s + o.burst_rate_per_s <= 0 || !std::isfinite(o.burst_rate_per_s) ||
      !std::isfinite(o.base_rate_per_s)) {
    return core::InvalidArgument(
        fmt::format("base_rate_per_s {} and burst_rate_per_s {}: must be >= 0, not both 0",
                    o.base_rate_per_s, o.burst_rate_per_s));
  }
  if (!(o.burst_start_s >= 0 && o.burst_start_s < o.burst_end_s && o.burst_end_s <= o.duration_s)) {
    return core::InvalidArgument(
        fmt::format("burst_start_s {} and burst_end_s {}: need 0 <= start < end <= duration_s {}",
                    o.burst_start_s, o.burst_end_s, o.duration_s));
  }
  if (o.prompt_tokens_min < 1 || o.prompt_tokens_min > o.prompt_tokens_max) {
    return core::InvalidArgument(
        fmt::format("prompt_tokens_min {} and max {}: need 1 <= min <= max", o.prompt_tokens_min,
                    o.prompt_tokens_max));
  }
  if (o.output_tokens_min < 1 || o.output_tokens_min > o.output_tokens_max) {
    return core::InvalidArgument(
        fmt::format("output_tokens_min {} and max {}: need 1 <= min <= max", o.output_tokens_min,
                    o.output_tokens_max));
  }
  if (o.prompt_tokens_max + o.output_tokens_max > config.max_context) {
    return core::InvalidArgument(fmt::format(
        "prompt_tokens_max {} + output_tokens_max {} exceed the model's context of {} tokens",
        o.prompt_tokens_max, o.output_tokens_max, config.max_context));
  }
  return Status::Ok();
}

core::StatusOr<std::vector<TraceRequest>> MakeBurstTrace(const BurstTraceOptions& o,
                                                         const models::LlamaConfig& config) {
  RETURN_IF_ERROR(ValidateBurstTrace(o, config));
  core::Rng rng(o.seed);
  const double top = std::max(o.base_rate_per_s, o.burst_rate_per_s);
  const uint64_t vocab = static_cast<uint64_t>(std::min<int64_t>(config.vocab, 256));
  auto uniform = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(hi - lo + 1)));
  };
  std::vector<TraceRequest> out;
  for (double t = 0;;) {
    t += -std::log(1.0 - rng.Uniform()) / top;
    if (t >= o.duration_s) break;
    const bool burst = t >= o.burst_start_s && t < o.burst_end_s;
    const double rate = burst ? o.burst_rate_per_s : o.base_rate_per_s;
    if (rng.Uniform() * top >= rate) continue;
    TraceRequest r;
    r.arrival_s = t;
    r.prompt.resize(static_cast<size_t>(uniform(o.prompt_tokens_min, o.prompt_tokens_max)));
    for (int32_t& tok : r.prompt) tok = static_cast<int32_t>(rng.Below(vocab));
    r.max_tokens = uniform(o.output_tokens_min, o.output_tokens_max);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace tessera::kernelflume
