#include "kernelflume/abuse_cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>

#include "core/json_util.h"
#include "core/rng.h"
#include "serve/abuse_requests.h"

namespace tessera::kernelflume {
namespace {

using serve::AbuseCase;
using serve::AbuseFields;
using serve::AbuseGroup;
using serve::AbuseKind;
using serve::AbuseObjectText;
using serve::AbusePlanContext;
using serve::BadUtf8Strings;
using serve::NonJsonNumbers;
using serve::PickVariant;
using serve::WithAbuseField;

constexpr const char* kCompletionsPath = "/v1/completions";

// Kind indexes, in the order of the table below.
enum CompletionAbuseKind {
  kValidText,
  kValidIds,
  kValidEos,
  kValidStream,
  kJsonTruncated,
  kJsonGarbage,
  kJsonDeepNesting,
  kJsonHugeNumber,
  kJsonNanText,
  kJsonNotObject,
  kJsonDuplicateKey,
  kJsonBadUtf8,
  kWrongType,
  kUnknownKey,
  kAbsurdMaxTokens,
  kPromptOverContext,
  kPromptEmpty,
  kAbsurdTemperature,
  kTokenOutOfVocab,
  kAbsurdSeed,
  kUnknownModel,
  kBodyTooLarge,
  kChunkedTooLarge,
  kContentLengthHuge,
  kGzipBomb,
  kUnknownRoute,
  kRouteBadBytes,
  kUriTooLong,
  kWrongMethod,
  kUnknownMethod,
  kBadRequestLine,
  kBadContentLength,
  kGzipGarbage,
  kUnknownEncoding,
  kConnectClose,
  kHeadersOnlyClose,
  kHalfBodyClose,
  kCloseBeforeReply,
};

const std::vector<AbuseKind> kCompletionKinds = {
    {"valid_text", AbuseGroup::kValid, 200, 8, "text prompt, 1..8 tokens, greedy, no EOS stop"},
    {"valid_ids", AbuseGroup::kValid, 200, 6, "token-id prompt, 1..8 tokens, greedy"},
    {"valid_eos", AbuseGroup::kValid, 200, 4, "text prompt, 1..8 tokens, stop_at_eos"},
    {"valid_stream", AbuseGroup::kValid, 200, 4, "text prompt, 1..8 tokens, server-sent events"},
    {"json_truncated", AbuseGroup::kMalformedJson, 400, 4, "a valid body cut anywhere"},
    {"json_garbage", AbuseGroup::kMalformedJson, 400, 4, "1..256 random bytes"},
    {"json_deep_nesting", AbuseGroup::kMalformedJson, 400, 3, "300.. levels up to the limit"},
    {"json_huge_number", AbuseGroup::kMalformedJson, 400, 3, "1e400, 400 digits, -1e309"},
    {"json_nan_text", AbuseGroup::kMalformedJson, 400, 3, "NaN, Infinity, 0x10, 01, .5"},
    {"json_not_object", AbuseGroup::kMalformedJson, 400, 2, "[], \"s\", 42, null, true"},
    {"json_duplicate_key", AbuseGroup::kMalformedJson, 400, 2, "prompt or max_tokens twice"},
    {"json_bad_utf8", AbuseGroup::kMalformedJson, 400, 2, "invalid UTF-8, lone surrogates"},
    {"wrong_type", AbuseGroup::kWrongType, 400, 8, "string max_tokens, object prompt, ..."},
    {"unknown_key", AbuseGroup::kWrongType, 400, 2, "n, Prompt, a 1000-byte key"},
    {"absurd_max_tokens", AbuseGroup::kAbsurdValue, 400, 4, "0, -1, 2^31, 2^63 - 1"},
    {"prompt_over_context", AbuseGroup::kAbsurdValue, 400, 3, "ids or text over the context"},
    {"prompt_empty", AbuseGroup::kAbsurdValue, 400, 2, "\"\", [], no prompt"},
    {"absurd_temperature", AbuseGroup::kAbsurdValue, 400, 2, "-1, -0.5, 101, 1e308"},
    {"token_out_of_vocab", AbuseGroup::kAbsurdValue, 400, 3, "-1, 259, 2^31, 2^40"},
    {"absurd_seed", AbuseGroup::kAbsurdValue, 400, 2, "-1, -2^63, 2^64"},
    {"unknown_model", AbuseGroup::kAbsurdValue, 400, 2, "gpt-4, paths, empty"},
    {"body_too_large", AbuseGroup::kTooLarge, 413, 4, "body limit + 1 .. 3x the limit"},
    {"chunked_too_large", AbuseGroup::kTooLarge, 413, 1, "chunked, over the body limit"},
    {"content_length_huge", AbuseGroup::kTooLarge, 413, 1, "Content-Length 2^64 - 1, 10^23"},
    {"gzip_bomb", AbuseGroup::kTooLarge, 413, 1, "32 KiB of gzip that decode to 32 MiB"},
    {"unknown_route", AbuseGroup::kRoute, 404, 4, "/, /v1/completion, typos, /../"},
    {"route_bad_bytes", AbuseGroup::kRoute, 404, 2, "%FF, raw 0x80.., long multibyte"},
    {"uri_too_long", AbuseGroup::kRoute, 414, 1, "a request line over 8 KiB"},
    {"wrong_method", AbuseGroup::kMethod, 404, 4, "GET/PUT/DELETE completions, POST /healthz"},
    {"unknown_method", AbuseGroup::kMethod, 400, 1, "BREW, get"},
    {"bad_request_line", AbuseGroup::kMethod, 400, 2, "garbage, no version, HTTP/0.9"},
    {"bad_content_length", AbuseGroup::kMethod, 400, 1, "Content-Length abc, 1e3, -5"},
    {"gzip_garbage", AbuseGroup::kMalformedJson, 400, 1, "Content-Encoding gzip, not gzip"},
    {"unknown_encoding", AbuseGroup::kMethod, 415, 1, "Content-Encoding zstd"},
    {"connect_close", AbuseGroup::kDisconnect, 0, 2, "connect, then close"},
    {"headers_only_close", AbuseGroup::kDisconnect, 0, 3, "headers, then close"},
    {"half_body_close", AbuseGroup::kDisconnect, 0, 3, "headers and half the body, close"},
    {"close_before_reply", AbuseGroup::kDisconnect, 0, 3, "a valid request, close at once"},
};

AbuseFields BaseCompletion() {
  return {{"prompt", "\"abuse\""}, {"max_tokens", "2"}, {"stop_at_eos", "false"}};
}

const std::string& BaseCompletionBody() {
  static const std::string body = AbuseObjectText(BaseCompletion());
  return body;
}

// A valid request of kind `k`; sets the case's body and path.
void ValidCompletion(CompletionAbuseKind k, core::Rng& rng, const serve::AbuseRequestBuilder& b,
                     AbuseCase* c) {
  const std::string max_tokens = std::to_string(1 + rng.Below(8));
  std::string prompt;
  if (k == kValidIds) {
    prompt =
        PickVariant(rng, std::vector<std::string>{"[72, 105]", "[1, 2, 3]", "[84, 104, 101, 32]",
                                                  "[0]", "[255, 128, 64]"});
  } else {
    prompt = core::Json(PickVariant(rng, std::vector<std::string>{"Hello", "The fortune", "abc",
                                                                  "a", "Tomorrow you will"}))
                 .dump();
  }
  AbuseFields f = {{"prompt", prompt},
                   {"max_tokens", max_tokens},
                   {"stop_at_eos", k == kValidEos ? "true" : "false"}};
  if (k == kValidStream) f.push_back({"stream", "true"});
  c->body = AbuseObjectText(f);
  c->path = kCompletionsPath;
  c->request = b.Request("POST", kCompletionsPath, c->body);
}

std::string MalformedCompletionBody(CompletionAbuseKind k, core::Rng& rng, int64_t limit) {
  const std::string& valid = BaseCompletionBody();
  switch (k) {
    case kJsonTruncated:
      return serve::TruncatedBody(rng, valid);
    case kJsonGarbage:
      return serve::GarbageBody(rng);
    case kJsonDeepNesting:
      return serve::DeepNestingBody(rng, limit);
    case kJsonHugeNumber: {
      const std::vector<std::pair<std::string, std::string>> v = {
          {"max_tokens", "1e400"},
          {"max_tokens", "1" + std::string(400, '0')},
          {"temperature", "-1e309"},
          {"seed", "1" + std::string(320, '0') + ".5"}};
      const auto& [key, value] = PickVariant(rng, v);
      return AbuseObjectText(WithAbuseField(BaseCompletion(), key, value));
    }
    case kJsonNanText: {
      const std::vector<std::string>& v = NonJsonNumbers();
      const std::vector<std::string> keys = {"max_tokens", "temperature", "seed"};
      return AbuseObjectText(
          WithAbuseField(BaseCompletion(), PickVariant(rng, keys), PickVariant(rng, v)));
    }
    case kJsonNotObject:
      return PickVariant(rng, std::vector<std::string>{"[]", "[1, 2]", "\"abuse\"", "42", "null",
                                                       "true", "\"\"", "[" + valid + "]"});
    case kJsonDuplicateKey: {
      AbuseFields f = BaseCompletion();
      f.push_back(rng.Below(2) == 0 ? std::pair<std::string, std::string>{"prompt", "[1, 2]"}
                                    : std::pair<std::string, std::string>{"max_tokens", "3"});
      return AbuseObjectText(f);
    }
    case kJsonBadUtf8: {
      const std::vector<std::string>& v = BadUtf8Strings();
      return AbuseObjectText(WithAbuseField(
          BaseCompletion(), rng.Below(2) == 0 ? "prompt" : "model", PickVariant(rng, v)));
    }
    default:
      return valid;
  }
}

std::string WrongTypeCompletionBody(CompletionAbuseKind k, core::Rng& rng) {
  if (k == kUnknownKey) {
    return AbuseObjectText(WithAbuseField(
        BaseCompletion(),
        PickVariant(rng, std::vector<std::string>{"n", "Prompt", "", "max_token", "logprobs",
                                                  std::string(1000, 'k'), "\xC3\xA9t\xC3\xA9"}),
        "1"));
  }
  const std::vector<std::pair<std::string, std::vector<std::string>>> v = {
      {"prompt", {"null", "5", "{}", "true", "[\"a\"]", "[1.5]", "[[1]]", "[null]"}},
      {"max_tokens", {"\"4\"", "true", "2.5", "[1]", "{}", "null"}},
      {"temperature", {"\"hot\"", "[]", "true", "null", "{}"}},
      {"seed", {"\"1\"", "1.5", "{}", "[1]", "null"}},
      {"stream", {"1", "\"yes\"", "null", "[]"}},
      {"stop_at_eos", {"0", "\"false\"", "null", "{}"}},
      {"model", {"null", "7", "[\"x\"]", "true", "{}"}}};
  const auto& [key, values] = PickVariant(rng, v);
  return AbuseObjectText(WithAbuseField(BaseCompletion(), key, PickVariant(rng, values)));
}

// `n` token ids (1) as a JSON array.
std::string IdArray(int64_t n) { return "[" + serve::RepeatText("1, ", n - 1) + "1]"; }

std::string AbsurdCompletionBody(CompletionAbuseKind k, core::Rng& rng, int64_t limit) {
  switch (k) {
    case kAbsurdMaxTokens:
      return AbuseObjectText(WithAbuseField(
          BaseCompletion(), "max_tokens",
          PickVariant(rng, std::vector<std::string>{"0", "-1", "2147483648", "9223372036854775807",
                                                    "-9223372036854775808", "100000"})));
    case kPromptOverContext: {
      // (limit - 64) / 6 .. (limit - 64) / 3 ids ("1, ") or twice as many text bytes: under
      // the body limit (the suite assumes a context under (limit - 64) / 6 tokens).
      const int64_t most = std::min<int64_t>((limit - 64) / 3, 30000);
      const int64_t n = most / 2 + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(most / 2)));
      const std::string prompt =
          rng.Below(2) == 0 ? IdArray(n) : "\"" + std::string(2 * n, 'p') + "\"";
      return AbuseObjectText(WithAbuseField(BaseCompletion(), "prompt", prompt));
    }
    case kPromptEmpty: {
      if (rng.Below(3) == 0) return AbuseObjectText({{"max_tokens", "2"}});
      return AbuseObjectText(
          WithAbuseField(BaseCompletion(), "prompt", rng.Below(2) ? "\"\"" : "[]"));
    }
    case kAbsurdTemperature:
      return AbuseObjectText(
          WithAbuseField(BaseCompletion(), "temperature",
                         PickVariant(rng, std::vector<std::string>{"-1", "-0.5", "101", "1e308"})));
    case kTokenOutOfVocab:
      return AbuseObjectText(WithAbuseField(
          BaseCompletion(), "prompt",
          PickVariant(rng, std::vector<std::string>{
                               "[-1]", "[1, 259]", "[2147483648]", "[1099511627776, 1]",
                               "[1, 2, -9223372036854775808]", "[18446744073709551615]"})));
    case kAbsurdSeed:
      return AbuseObjectText(
          WithAbuseField(BaseCompletion(), "seed",
                         PickVariant(rng, std::vector<std::string>{"-1", "-9223372036854775808",
                                                                   "18446744073709551616"})));
    case kUnknownModel: {
      const std::vector<std::string> v = {"gpt-4",         "../../../../etc/passwd",
                                          "/dev/zero",     "",
                                          "TINY-FORTUNES", "x" + serve::RepeatText("\xC3\xA9", 30)};
      return AbuseObjectText(
          WithAbuseField(BaseCompletion(), "model", core::Json(PickVariant(rng, v)).dump()));
    }
    default:
      return BaseCompletionBody();
  }
}

std::string CompletionAbuseBody(CompletionAbuseKind k, core::Rng& rng, int64_t limit) {
  if (k >= kJsonTruncated && k <= kJsonBadUtf8) return MalformedCompletionBody(k, rng, limit);
  if (k == kWrongType || k == kUnknownKey) return WrongTypeCompletionBody(k, rng);
  if (k >= kAbsurdMaxTokens && k <= kUnknownModel) return AbsurdCompletionBody(k, rng, limit);
  if (k == kBodyTooLarge) {
    const int64_t n = limit + 1 + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(2 * limit)));
    std::string body = AbuseObjectText(WithAbuseField(BaseCompletion(), "prompt", "\"\""));
    body.insert(body.find("\"prompt\": \"") + 11, std::string(n - body.size(), 'p'));
    return body;
  }
  return BaseCompletionBody();
}

std::string CompletionAbuseRequest(CompletionAbuseKind k, core::Rng& rng,
                                   const serve::AbuseRequestBuilder& b, AbuseCase* c) {
  const std::string& valid = BaseCompletionBody();
  const std::string path = kCompletionsPath;
  switch (k) {
    case kValidText:
    case kValidIds:
    case kValidEos:
    case kValidStream:
      ValidCompletion(k, rng, b, c);
      return c->request;
    case kChunkedTooLarge:
      return serve::ChunkedOverLimit(b, path);
    case kContentLengthHuge:
      return serve::HugeContentLength(b, rng, path, valid);
    case kGzipBomb:
      return serve::Encoded(b, path, "gzip", serve::GzipBomb());
    case kUnknownRoute:
      return PickVariant(rng,
                         std::vector<std::string>{b.Get("/"), b.Get("/v1/completion"),
                                                  b.Get("/../../etc/passwd"), b.Get("/healthz/"),
                                                  b.Get("//healthz"), b.Get("/v1/chat/completions"),
                                                  b.Request("POST", "/v1/completion", valid),
                                                  b.Request("POST", "/v1/completions/x", valid),
                                                  b.Request("POST", "/V1/COMPLETIONS", valid)});
    case kRouteBadBytes:
      return PickVariant(rng, std::vector<std::string>{
                                  b.Get("/%FF"), b.Get("/%C3"), b.Get("/%00"), b.Get("/\xC3\x28"),
                                  b.Get("/\xFF\xFE"), b.Request("POST", path + "%FF", valid),
                                  b.Get("/" + serve::RepeatText("\xC3\xA9", 150)),
                                  b.Get("/a" + serve::RepeatText("%C3%A9", 150))});
    case kUriTooLong:
      return serve::UriTooLong(b, rng);
    case kWrongMethod:
      return PickVariant(
          rng, std::vector<std::string>{
                   b.Get(path), b.Request("PUT", path, valid), b.Request("DELETE", path, ""),
                   b.Request("PATCH", path, valid), b.Request("OPTIONS", path, ""),
                   b.Request("POST", "/healthz", valid), b.Request("POST", "/v1/models", ""),
                   b.Request("DELETE", "/v1/metrics", ""), b.Get("/admin/nodes")});
    case kUnknownMethod:
      return PickVariant(rng, std::vector<std::string>{b.Get("/healthz").replace(0, 3, "BREW"),
                                                       b.Get("/healthz").replace(0, 3, "get"),
                                                       b.Request("POSTX", path, valid)});
    case kBadRequestLine:
      return serve::BadRequestLine(rng);
    case kBadContentLength:  // read as 0 or 1 bytes: no JSON
      return serve::BadContentLength(b, rng, path, valid);
    case kGzipGarbage:
      return serve::Encoded(b, path, "gzip", valid);
    case kUnknownEncoding:
      return serve::Encoded(b, path, "zstd", valid);
    case kConnectClose:
      return "";
    case kHeadersOnlyClose:
      return serve::HeadersOnly(b, path, valid);
    case kHalfBodyClose:
      return serve::HalfBody(b, path, valid);
    case kCloseBeforeReply: {
      // A plain reply (decoded to its end) or a long stream (cancelled when the server
      // notices the closed connection).
      AbuseFields f = WithAbuseField(BaseCompletion(), "max_tokens", "8");
      if (rng.Below(2) == 0)
        f = WithAbuseField(WithAbuseField(f, "max_tokens", "64"), "stream", "true");
      return b.Request("POST", path, AbuseObjectText(f));
    }
    default:
      return b.Request("POST", path, CompletionAbuseBody(k, rng, b.c.max_body_bytes));
  }
}

// Whether `v` is a JSON array of integers.
bool IntArray(const core::Json& v) {
  if (!v.is_array()) return false;
  for (const core::Json& x : v) {
    if (!x.is_number_integer()) return false;
  }
  return true;
}

// A reply of server-sent events (completion_server.h) as the JSON reply it streams: token ids
// from the token events, finish_reason and usage from the last event; empty with *why set
// when the stream is malformed, carries an error or does not end with [DONE].
core::Json StreamAsReply(const std::string& body, std::string* why) {
  core::Json ids = core::Json::array();
  core::Json last;
  bool done = false;
  for (size_t at = body.find("data: "); at != std::string::npos; at = body.find("data: ", at)) {
    const size_t end = body.find("\n\n", at);
    if (end == std::string::npos) break;
    const std::string data = body.substr(at + 6, end - at - 6);
    at = end;
    if (done) {
      *why = "an event after [DONE]";
      return {};
    }
    if (data == "[DONE]") {
      done = true;
      continue;
    }
    auto ev = core::ParseJson(data, "event");
    if (!ev.ok() || !ev->is_object() || ev->contains("error") || !ev->contains("choices") ||
        !(*ev)["choices"].is_array() || (*ev)["choices"].empty() ||
        !(*ev)["choices"][0].is_object()) {
      *why = "a bad event: " + data.substr(0, 120);
      return {};
    }
    const core::Json& choice = (*ev)["choices"][0];
    if (choice.contains("token_id")) {
      ids.push_back(choice["token_id"]);
    } else {
      last = *ev;
    }
  }
  if (!done || last.is_null()) {
    *why = done ? "no final event with finish_reason" : "the stream does not end with [DONE]";
    return {};
  }
  last["choices"][0]["token_ids"] = ids;
  return last;
}

class CompletionSuite : public serve::AbuseSuite {
 public:
  const std::vector<AbuseKind>& Kinds() const override { return kCompletionKinds; }
  bool KindEnabled(int, const AbusePlanContext&) const override { return true; }
  void MakeCase(int kind, core::Rng& rng, const AbusePlanContext& context,
                AbuseCase* c) const override {
    const serve::AbuseRequestBuilder b{context};
    c->request = CompletionAbuseRequest(static_cast<CompletionAbuseKind>(kind), rng, b, c);
  }
  std::string CheckValid(const AbuseCase& c, const serve::HttpReply& reply,
                         std::string* fingerprint) const override {
    auto asked = core::ParseJson(c.body, "case");
    if (!asked.ok()) return "the case itself is invalid: " + asked.status().message();
    const int64_t max_tokens = asked->value("max_tokens", int64_t{16});
    const bool stop_at_eos = asked->value("stop_at_eos", true);
    core::Json j;
    if (asked->value("stream", false)) {
      std::string why;
      j = StreamAsReply(reply.body, &why);
      if (!why.empty()) return why;
    } else {
      auto parsed = core::ParseJson(reply.body, "reply");
      if (!parsed.ok()) return "reply is not JSON: " + parsed.status().message();
      j = std::move(*parsed);
    }
    if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() ||
        j["choices"].size() != 1 || !j["choices"][0].is_object()) {
      return "reply has no choices[0]";
    }
    const core::Json& choice = j["choices"][0];
    if (!choice.contains("token_ids") || !IntArray(choice["token_ids"])) {
      return "choices[0].token_ids is not an array of ids";
    }
    const core::Json& ids = choice["token_ids"];
    const int64_t n = static_cast<int64_t>(ids.size());
    const std::string finish = choice.value("finish_reason", std::string());
    if (finish == "length" && n != max_tokens) {
      return fmt::format("{} token ids with finish_reason length, asked for {}", n, max_tokens);
    }
    if (finish == "stop" && (!stop_at_eos || n < 1 || n > max_tokens)) {
      return fmt::format("{} token ids with finish_reason stop (max_tokens {}, stop_at_eos {})", n,
                         max_tokens, stop_at_eos);
    }
    if (finish != "length" && finish != "stop") return "finish_reason '" + finish + "'";
    if (!j.contains("usage") || !j["usage"].is_object()) return "reply has no usage";
    const core::Json& u = j["usage"];
    const int64_t prompt = u.value("prompt_tokens", int64_t{-1});
    if (u.value("completion_tokens", int64_t{-1}) != n || prompt < 1 ||
        u.value("total_tokens", int64_t{-1}) != prompt + n) {
      return "usage does not add up: " + u.dump();
    }
    *fingerprint = ids.dump();
    return "";
  }
};

}  // namespace

const serve::AbuseSuite& CompletionAbuseSuite() {
  static const CompletionSuite suite;
  return suite;
}

}  // namespace tessera::kernelflume
