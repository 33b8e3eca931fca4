// RunGenerate: KernelFlume's `generate` as a library service -- prompts decoded by a Llama
// model whose core attention runs on attention nodes (an AttentionCluster), optionally checked
// step by step against the same model run in one process (models::LocalKvCache).
//
// Per prompt: the prompt is prefilled in chunks of at most 512 tokens (each chunk one forward,
// its KV appended to the tail's node), then one token per step up to max_tokens (or EOS when
// stop_at_eos), sampled greedily or at a temperature with a seed. With `check`, the monolithic
// model is fed the SAME tokens (teacher forcing) and at every step the two logit vectors are
// compared (norm-wise relative error, core/tensor_error.h); for greedy decoding the monolithic
// argmax is compared with the token taken, which is exactly "free-running greedy tokens are
// equal". Each request is opened on the weight node and closed (ranges freed) when done.
// Errors: an empty prompt, a token outside the vocabulary, max_tokens < 1, or a prompt plus
// max_tokens over the model's context are InvalidArgument naming the prompt and the numbers; a
// lost attention node's ranges are re-prefilled on the survivors and the step retried
// (ForwardWithRecovery); when no node survives the run ends with the loss named (never a hang).
// Thread-safety: one call at a time per cluster.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/trace.h"
#include "kernelflume/attention_cluster.h"
#include "models/generate.h"
#include "models/llama.h"

namespace tessera::kernelflume {

// The --check bar: teacher-forced logits within this norm-wise relative error of the monolithic
// model's at every step.
inline constexpr double kCheckRelErrBar = 1e-5;

struct GenerateOptions {
  int64_t max_tokens = 64;
  models::SamplingOptions sampling;
  bool check = false;
};

struct PromptResult {
  std::vector<int32_t> prompt;
  std::vector<int32_t> tokens;       // generated
  double max_rel_err = 0;            // teacher-forced logits vs monolithic (check only)
  int64_t first_mismatch = -1;       // first step whose monolithic greedy token differs (-1: none)
  std::vector<double> step_ms;       // decode steps (after the prefill), disaggregated
  std::vector<double> mono_step_ms;  // the same steps on the monolithic model (check only)
  double prefill_ms = 0;
};

struct GenerateReport {
  std::vector<PromptResult> prompts;
  uint64_t routing_version = 0;
  int64_t reroutes = 0;
  int num_nodes = 0;
  int64_t nodes_lost = 0;       // attention nodes that died (or were fenced) during the run
  int64_t ranges_refilled = 0;  // ranges re-prefilled after such a loss
  double max_rel_err = 0;       // worst over prompts
  int64_t mismatched_prompts = 0;
  int64_t generated_tokens = 0;
  double wall_s = 0;
};

// Called after each prompt (index, result) for progress.
using GenerateProgress = std::function<void(size_t, const PromptResult&)>;

core::StatusOr<GenerateReport> RunGenerate(const models::LlamaModel& model,
                                           AttentionCluster& cluster,
                                           const std::vector<std::vector<int32_t>>& prompts,
                                           const GenerateOptions& options,
                                           core::TraceWriter* trace = nullptr,
                                           const GenerateProgress& progress = nullptr);

// The attention shape of a Llama config (what attention nodes are told at join).
AttentionShape AttentionShapeOf(const models::LlamaConfig& config);

// The run's verdict when options.check is set: OK, or Internal stating the logits error against
// the 1e-5 bar and how many prompts took a token the monolithic model would not have (greedy
// only). OK when check is off.
core::Status CheckVerdict(const GenerateReport& report, const GenerateOptions& options);

// Prompts from text, one per non-empty line, byte-tokenized; InvalidArgument naming `source` if
// no line holds text.
core::StatusOr<std::vector<std::vector<int32_t>>> EncodePromptLines(std::string_view text,
                                                                    const std::string& source);

}  // namespace tessera::kernelflume
