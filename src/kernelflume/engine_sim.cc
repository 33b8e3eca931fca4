#include "kernelflume/engine_sim.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>

#include "core/rng.h"
#include "models/generate.h"
#include "sim/event_queue.h"

namespace tessera::kernelflume {

namespace {

struct SimRunning {
  int request = 0;
  int64_t prefilled = 0, generated = 0;
};

class EngineSim {
 public:
  EngineSim(const std::vector<EngineSimRequest>& requests, const EngineSimOptions& o,
            const EngineProfile& profile)
      : reqs_(requests), o_(o), profile_(profile), rng_(o.seed) {
    result_.token_s.resize(requests.size());
  }

  EngineSimResult Run() {
    for (size_t i = 0; i < reqs_.size(); ++i) {
      q_.Schedule(reqs_[i].arrival_s, 1, [this, i] {
        queue_.push_back(static_cast<int>(i));
        if (!busy_) {  // the engine wakes after every arrival of this instant is queued
          busy_ = true;
          q_.Schedule(q_.now_s(), 2, [this] { Iterate(); });
        }
      });
    }
    q_.Run();
    return std::move(result_);
  }

 private:
  void Iterate() {
    busy_ = true;
    ++result_.iterations;
    // (1) admit
    while (static_cast<int>(running_.size()) < o_.max_active && !queue_.empty() &&
           reqs_[queue_.front()].reserve_tokens <= o_.capacity_tokens - reserved_) {
      reserved_ += reqs_[queue_.front()].reserve_tokens;
      running_.push_back({queue_.front(), 0, 0});
      queue_.pop_front();
    }
    // (2) prefill
    int64_t budget = std::max<int64_t>(1, o_.prefill_tokens_per_step), tokens = 0;
    double pairs = 0;
    for (SimRunning& r : running_) {
      const int64_t n = reqs_[r.request].prompt_tokens;
      while (budget > 0 && r.prefilled < n) {
        const int64_t len = std::min({models::kPrefillChunkTokens, n - r.prefilled, budget});
        tokens += len;
        pairs += static_cast<double>(len) * (static_cast<double>(r.prefilled) + (len + 1) / 2.0);
        r.prefilled += len;
        budget -= len;
      }
      if (budget <= 0) break;
    }
    const double noise = profile_.ResidualFactor(rng_.Uniform());
    const double token_time = q_.now_s() + noise * profile_.PrefillSeconds(tokens, pairs);
    // (3) a token for every prefilled request; (4) the forward of those still running
    int64_t batch = 0, kv = 0;
    std::vector<SimRunning> still;
    for (SimRunning& r : running_) {
      const EngineSimRequest& q = reqs_[r.request];
      if (r.prefilled >= q.prompt_tokens) {
        result_.token_s[r.request].push_back(token_time);
        if (++r.generated >= q.max_tokens) {
          reserved_ -= q.reserve_tokens;
          continue;
        }
        ++batch;
        kv += q.prompt_tokens + r.generated;
      }
      still.push_back(r);
    }
    running_ = std::move(still);
    const double end = token_time + noise * profile_.DecodeSeconds(batch, kv);
    q_.Schedule(end, 0, [this] {
      if (!running_.empty() || !queue_.empty()) {
        Iterate();
      } else {
        busy_ = false;
      }
    });
  }

  const std::vector<EngineSimRequest>& reqs_;
  EngineSimOptions o_;
  const EngineProfile& profile_;
  core::Rng rng_;
  sim::EventQueue q_;
  std::deque<int> queue_;
  std::vector<SimRunning> running_;
  int64_t reserved_ = 0;
  bool busy_ = false;
  EngineSimResult result_;
};

}  // namespace

core::StatusOr<EngineSimResult> SimulateEngine(const std::vector<EngineSimRequest>& requests,
                                               const EngineSimOptions& options,
                                               const EngineProfile& profile) {
  if (options.max_active < 1 || options.prefill_tokens_per_step < 1 ||
      options.capacity_tokens < 1) {
    return core::InvalidArgument(fmt::format(
        "max_active {}, prefill_tokens_per_step {} and capacity_tokens {}: must be >= 1",
        options.max_active, options.prefill_tokens_per_step, options.capacity_tokens));
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    const EngineSimRequest& r = requests[i];
    if (r.prompt_tokens < 1 || r.max_tokens < 1 || !(r.arrival_s >= 0) ||
        (i > 0 && r.arrival_s < requests[i - 1].arrival_s)) {
      return core::InvalidArgument(fmt::format(
          "request {}: needs prompt_tokens >= 1, max_tokens >= 1 and arrivals in order (got "
          "{}, {}, {} s)",
          i, r.prompt_tokens, r.max_tokens, r.arrival_s));
    }
    if (r.reserve_tokens > options.capacity_tokens ||
        r.reserve_tokens < r.prompt_tokens + r.max_tokens) {
      return core::InvalidArgument(fmt::format(
          "request {}: reserve_tokens {} must be in [prompt + max_tokens = {}, capacity {}]", i,
          r.reserve_tokens, r.prompt_tokens + r.max_tokens, options.capacity_tokens));
    }
  }
  EngineSim sim(requests, options, profile);
  return sim.Run();
}

}  // namespace tessera::kernelflume
