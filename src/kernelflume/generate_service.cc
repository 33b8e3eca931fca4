#include "kernelflume/generate_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "core/rng.h"
#include "core/tensor_error.h"
#include "kernelflume/disaggregated_attention.h"
#include "models/byte_tokenizer.h"
#include "models/kv_cache.h"
#include "models/sampler.h"

namespace tessera::kernelflume {

using core::Status;
using Clock = std::chrono::steady_clock;

AttentionShape AttentionShapeOf(const models::LlamaConfig& c) {
  AttentionShape s;
  s.num_layers = static_cast<int32_t>(c.num_layers);
  s.num_heads = static_cast<int32_t>(c.num_heads);
  s.num_kv_heads = static_cast<int32_t>(c.num_kv_heads);
  s.head_dim = static_cast<int32_t>(c.head_dim);
  s.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  return s;
}

namespace {

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

Status CheckPrompt(const models::LlamaConfig& c, size_t index, const std::vector<int32_t>& prompt,
                   int64_t max_tokens) {
  if (prompt.empty()) {
    return core::InvalidArgument(fmt::format("prompt {}: empty (give at least one token)", index));
  }
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= c.vocab) {
      return core::InvalidArgument(
          fmt::format("prompt {}: token {} at position {} is outside the vocabulary [0, {})", index,
                      prompt[i], i, c.vocab));
    }
  }
  const int64_t need = static_cast<int64_t>(prompt.size()) + max_tokens;
  if (need > c.max_context) {
    return core::InvalidArgument(fmt::format(
        "prompt {}: {} tokens + max_tokens {} = {} exceed the model's context of {} tokens", index,
        prompt.size(), max_tokens, need, c.max_context));
  }
  return Status::Ok();
}

// One forward of all[pos0, pos0 + n) on both paths (the disaggregated one recovering from a
// lost node); compares logits when `mono` is set.
Status Step(const models::LlamaModel& model, std::span<const int32_t> all, int64_t pos0, int64_t n,
            DisaggregatedAttention& dis, std::vector<float>& logits, models::LocalKvCache* mono,
            std::vector<float>& mono_logits, PromptResult& r, double* dis_ms, double* mono_ms) {
  const std::span<const int32_t> tokens = all.subspan(pos0, n);
  const auto t0 = Clock::now();
  if (Status st = ForwardWithRecovery(model, dis, all, pos0, n, logits.data(), true); !st.ok()) {
    return st;
  }
  const auto t1 = Clock::now();
  if (dis_ms) *dis_ms = Ms(t0, t1);
  if (mono != nullptr) {
    if (Status st = model.Forward(tokens, pos0, *mono, mono_logits.data(), true); !st.ok()) {
      return st;
    }
    if (mono_ms) *mono_ms = Ms(t1, Clock::now());
    r.max_rel_err = std::max(r.max_rel_err, core::CompareTensors(logits, mono_logits).max_rel);
  }
  return Status::Ok();
}

}  // namespace

core::StatusOr<GenerateReport> RunGenerate(const models::LlamaModel& model,
                                           AttentionCluster& cluster,
                                           const std::vector<std::vector<int32_t>>& prompts,
                                           const GenerateOptions& options, core::TraceWriter* trace,
                                           const GenerateProgress& progress) {
  const models::LlamaConfig& c = model.config();
  if (options.max_tokens < 1) {
    return core::InvalidArgument(
        fmt::format("max_tokens: got {}, must be >= 1", options.max_tokens));
  }
  if (prompts.empty()) return core::InvalidArgument("prompts: none given");
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (Status st = CheckPrompt(c, i, prompts[i], options.max_tokens); !st.ok()) return st;
  }
  if (!(options.sampling.temperature >= 0) || !std::isfinite(options.sampling.temperature)) {
    return core::InvalidArgument(
        fmt::format("temperature: got {}, must be a number >= 0", options.sampling.temperature));
  }
  GenerateReport report;
  report.num_nodes = cluster.num_nodes();
  const auto start = Clock::now();
  std::vector<float> logits(c.vocab), mono_logits(c.vocab);
  for (size_t p = 0; p < prompts.size(); ++p) {
    PromptResult r;
    r.prompt = prompts[p];
    auto dis = cluster.weight_node().OpenRequest(p + 1);
    if (!dis.ok()) return dis.status();
    std::unique_ptr<models::LocalKvCache> mono;
    if (options.check) {
      mono = std::make_unique<models::LocalKvCache>(
          c, static_cast<int64_t>(r.prompt.size()) + options.max_tokens);
    }
    core::Rng rng(options.sampling.seed + p);
    // Prefill in chunks.
    const auto p0 = Clock::now();
    int64_t pos = 0;
    const int64_t n = static_cast<int64_t>(r.prompt.size());
    while (pos < n) {
      const int64_t len = std::min<int64_t>(models::kPrefillChunkTokens, n - pos);
      Status st = Step(model, r.prompt, pos, len, **dis, logits, mono.get(), mono_logits, r,
                       nullptr, nullptr);
      if (!st.ok()) return st.WithPrefix(fmt::format("prompt {}: prefill at position {}", p, pos));
      pos += len;
    }
    r.prefill_ms = Ms(p0, Clock::now());
    std::vector<int32_t> all = r.prompt;  // every token so far (a recovery re-prefills from it)
    if (trace) {
      trace->Span(0, "prefill", "kernelflume", std::chrono::duration<double>(p0 - start).count(),
                  r.prefill_ms / 1e3, {{"prompt", p}, {"tokens", n}});
    }
    for (int64_t i = 0; i < options.max_tokens; ++i) {
      const int32_t tok = options.sampling.temperature > 0
                              ? models::SampleTemperature(logits, options.sampling.temperature, rng)
                              : models::Greedy(logits);
      if (mono && options.sampling.temperature == 0 && r.first_mismatch < 0 &&
          models::Greedy(mono_logits) != tok) {
        r.first_mismatch = i;
      }
      r.tokens.push_back(tok);
      if (i + 1 == options.max_tokens || (options.sampling.stop_at_eos && tok == c.eos_id)) break;
      all.push_back(tok);
      double dis_ms = 0, mono_ms = 0;
      const auto s0 = Clock::now();
      Status st =
          Step(model, all, pos, 1, **dis, logits, mono.get(), mono_logits, r, &dis_ms, &mono_ms);
      if (!st.ok()) return st.WithPrefix(fmt::format("prompt {}: decode step {}", p, i + 1));
      r.step_ms.push_back(dis_ms);
      if (mono) r.mono_step_ms.push_back(mono_ms);
      if (trace) {
        trace->Span(0, "decode step", "kernelflume",
                    std::chrono::duration<double>(s0 - start).count(), dis_ms / 1e3,
                    {{"prompt", p}, {"position", pos}, {"routing_version", (*dis)->version()}});
      }
      ++pos;
    }
    report.generated_tokens += static_cast<int64_t>(r.tokens.size());
    report.max_rel_err = std::max(report.max_rel_err, r.max_rel_err);
    if (r.first_mismatch >= 0) ++report.mismatched_prompts;
    dis->reset();  // frees the request's ranges on the nodes
    if (progress) progress(p, r);
    report.prompts.push_back(std::move(r));
  }
  report.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  report.routing_version = cluster.weight_node().routes()->version();
  report.reroutes = cluster.weight_node().reroutes();
  for (const ElasticEvent& e : cluster.weight_node().events()) {
    report.nodes_lost += e.kind == "lost";
    report.ranges_refilled += e.kind == "refill";
  }
  return report;
}

core::Status CheckVerdict(const GenerateReport& r, const GenerateOptions& o) {
  if (!o.check) return Status::Ok();
  const bool greedy = o.sampling.temperature == 0;
  if (r.max_rel_err <= kCheckRelErrBar && (!greedy || r.mismatched_prompts == 0)) {
    return Status::Ok();
  }
  std::string tokens;
  if (greedy) {
    tokens = fmt::format(", {} of {} prompts took a greedy token the monolithic model would not",
                         r.mismatched_prompts, r.prompts.size());
  }
  return core::Internal(fmt::format("check failed: logits rel. error {:.2e} (bar {:.0e}){}",
                                    r.max_rel_err, kCheckRelErrBar, tokens));
}

core::StatusOr<std::vector<std::vector<int32_t>>> EncodePromptLines(std::string_view text,
                                                                    const std::string& source) {
  std::vector<std::vector<int32_t>> out;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) out.push_back(models::ByteTokenizer::Encode(line));
  }
  if (out.empty())
    return core::InvalidArgument(source + ": holds no non-empty line (one prompt per line)");
  return out;
}

}  // namespace tessera::kernelflume
