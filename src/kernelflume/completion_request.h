// The body of POST /v1/completions (completion_server.h), parsed and checked: every key known,
// every value of the right type and range, the prompt as token ids (text through the byte
// tokenizer, which needs a model with its vocabulary of 259; otherwise ids).
// Errors: InvalidArgument for a body that is not strict JSON (core::ParseJson: a key given twice,
// nesting past 256 levels, a number over a double, bad UTF-8), and naming the field and the
// value, e.g. "max_tokens: got 0, must be >= 1", "unknown key 'max_token', must be one of
// ...", "prompt: text needs the byte tokenizer (vocab 259); this model has vocab 128256: give
// token ids". The context check (prompt + max_tokens) is the engine's
// (CompletionEngine::Submit).
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "core/json_util.h"
#include "core/status.h"
#include "kernelflume/completion_engine.h"
#include "models/llama_config.h"

namespace tessera::kernelflume {

struct CompletionRequest {
  CompletionParams params;
  bool stream = false;
  bool prompt_was_text = false;
};

core::StatusOr<CompletionRequest> ParseCompletionRequest(const std::string& body,
                                                         const models::LlamaConfig& config);

// The text of generated token ids for a reply (byte-tokenizer models: their bytes with
// ill-formed UTF-8 escaped as \xNN; others: "").
std::string CompletionText(std::span<const int32_t> ids, const models::LlamaConfig& config);

}  // namespace tessera::kernelflume
