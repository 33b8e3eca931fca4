#include "kernelflume/completion_request.h"

#include <fmt/format.h>

#include <utility>

#include "models/byte_tokenizer.h"

namespace tessera::kernelflume {

using core::Json;
using core::Status;

namespace {

bool IsByteModel(const models::LlamaConfig& c) { return c.vocab == models::ByteTokenizer::kVocab; }

}  // namespace

core::StatusOr<CompletionRequest> ParseCompletionRequest(const std::string& body,
                                                         const models::LlamaConfig& config) {
  // core::ParseJson, not Json::parse: a key given twice, nesting deeper than 256 levels and a
  // number that fits no double are refused (Json::parse keeps the last of two keys).
  auto parsed = core::ParseJson(body, "body");
  if (!parsed.ok())
    return core::InvalidArgument("body: not JSON (" + parsed.status().message() + ")");
  Json j = std::move(*parsed);
  RETURN_IF_ERROR(core::CheckKnownKeys(
      j, "", {"prompt", "max_tokens", "temperature", "seed", "stream", "model", "stop_at_eos"}));
  CompletionRequest r;
  if (!j.contains("prompt")) return core::InvalidArgument("prompt: missing");
  const Json& p = j["prompt"];
  if (p.is_string()) {
    if (!IsByteModel(config)) {
      return core::InvalidArgument(fmt::format(
          "prompt: text needs the byte tokenizer (vocab {}); this model has vocab {}: give "
          "token ids",
          models::ByteTokenizer::kVocab, config.vocab));
    }
    const std::string text = p.get<std::string>();
    if (text.empty()) return core::InvalidArgument("prompt: empty");
    r.params.prompt = models::ByteTokenizer::Encode(text);
    r.prompt_was_text = true;
  } else if (p.is_array()) {
    if (p.empty()) return core::InvalidArgument("prompt: empty");
    if (static_cast<int64_t>(p.size()) > config.max_context) {
      return core::InvalidArgument(
          fmt::format("prompt: {} token ids exceed the model's context of {} tokens", p.size(),
                      config.max_context));
    }
    for (size_t i = 0; i < p.size(); ++i) {
      if (!p[i].is_number_integer()) {
        return core::InvalidArgument(
            fmt::format("prompt[{}]: got {}, must be a token id", i, core::ShowJson(p[i])));
      }
      const int64_t id = p[i].get<int64_t>();
      if (id < 0 || id >= config.vocab) {
        return core::InvalidArgument(fmt::format(
            "prompt[{}]: token {} is outside the vocabulary [0, {})", i, id, config.vocab));
      }
      r.params.prompt.push_back(static_cast<int32_t>(id));
    }
  } else {
    return core::InvalidArgument(
        fmt::format("prompt: got {}, must be text or an array of ids", core::ShowJson(p)));
  }
  if (j.contains("max_tokens")) {
    const Json& v = j["max_tokens"];
    if (!v.is_number_integer()) {
      return core::InvalidArgument(
          fmt::format("max_tokens: got {}, must be an integer >= 1", core::ShowJson(v)));
    }
    const int64_t n = v.get<int64_t>();
    if (n < 1) return core::InvalidArgument(fmt::format("max_tokens: got {}, must be >= 1", n));
    if (n > config.max_context) {
      return core::InvalidArgument(fmt::format(
          "max_tokens: got {}, over the model's context of {} tokens", n, config.max_context));
    }
    r.params.max_tokens = n;
  }
  if (j.contains("temperature")) {
    const Json& v = j["temperature"];
    if (!v.is_number() || !(v.get<double>() >= 0) || v.get<double>() > 100) {
      return core::InvalidArgument(
          fmt::format("temperature: got {}, must be a number in [0, 100]", core::ShowJson(v)));
    }
    r.params.temperature = v.get<double>();
  }
  if (j.contains("seed")) {
    const Json& v = j["seed"];
    if (!v.is_number_unsigned()) {
      return core::InvalidArgument(
          fmt::format("seed: got {}, must be an integer >= 0", core::ShowJson(v)));
    }
    r.params.seed = v.get<uint64_t>();
  }
  for (const char* key : {"stream", "stop_at_eos"}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_boolean()) {
      return core::InvalidArgument(
          fmt::format("{}: got {}, must be true or false", key, core::ShowJson(j[key])));
    }
  }
  r.stream = j.value("stream", false);
  r.params.stop_at_eos = j.value("stop_at_eos", true);
  if (j.contains("model")) {
    if (!j["model"].is_string() || j["model"].get<std::string>() != config.name) {
      return core::InvalidArgument(fmt::format("model: got {}, this server serves '{}'",
                                               core::ShowJson(j["model"]), config.name));
    }
  }
  return r;
}

std::string CompletionText(std::span<const int32_t> ids, const models::LlamaConfig& config) {
  if (!IsByteModel(config)) return "";
  return core::Utf8Escaped(models::ByteTokenizer::Decode(ids));
}

}  // namespace tessera::kernelflume
