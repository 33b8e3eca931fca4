#include "xema/serve/abuse_cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/json_util.h"
#include "core/rng.h"
#include "serve/abuse_requests.h"
#include "serve/base64.h"
#include "serve/png.h"
#include "xema/pipeline/tiny_pipeline.h"
#include "xema/serve/request_json.h"
#include "xema/serve/serve_device.h"

namespace tessera::xema {
namespace {

using Fields = serve::AbuseFields;

// Kind indexes, in the order of the table below.
enum Kind {
  kValidImage,
  kValidImageCfg,
  kValidImageNone,
  kValidVideo,
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
  kAbsurdSize,
  kAbsurdSteps,
  kAbsurdSeed,
  kAbsurdGuidance,
  kAbsurdFrames,
  kAbsurdDeadline,
  kUnknownModel,
  kPromptLength,
  kOverBudget,
  kBodyTooLarge,
  kChunkedTooLarge,
  kUnknownRoute,
  kRouteBadBytes,
  kUriTooLong,
  kWrongMethod,
  kUnknownMethod,
  kBadRequestLine,
  kBadContentLength,
  kContentLengthHuge,
  kGzipBomb,
  kGzipGarbage,
  kUnknownEncoding,
  kConnectClose,
  kHeadersOnlyClose,
  kHalfBodyClose,
  kCloseBeforeReply,
  kKindCount
};

const std::vector<AbuseKind> kKinds = {
    {"valid_image", AbuseGroup::kValid, 200, 7, "16x16, 1 step, CFG off, seeds 1..3"},
    {"valid_image_cfg", AbuseGroup::kValid, 200, 6, "32x16, 1 step, CFG on, seeds 1..3"},
    {"valid_image_none", AbuseGroup::kValid, 200, 3, "16x16, response_format none"},
    {"valid_video", AbuseGroup::kValid, 200, 3, "tiny-t2v 16x16, 5 frames, 1 step"},
    {"json_truncated", AbuseGroup::kMalformedJson, 400, 4, "a valid body cut anywhere"},
    {"json_garbage", AbuseGroup::kMalformedJson, 400, 4, "1..256 random bytes"},
    {"json_deep_nesting", AbuseGroup::kMalformedJson, 400, 3, "300.. levels up to the limit"},
    {"json_huge_number", AbuseGroup::kMalformedJson, 400, 3, "1e400, 400 digits, 2^64"},
    {"json_nan_text", AbuseGroup::kMalformedJson, 400, 3, "NaN, Infinity, 0x10, 01, .5"},
    {"json_not_object", AbuseGroup::kMalformedJson, 400, 2, "[], \"s\", 42, null, true"},
    {"json_duplicate_key", AbuseGroup::kMalformedJson, 400, 2, "model or prompt twice"},
    {"json_bad_utf8", AbuseGroup::kMalformedJson, 400, 2, "invalid UTF-8, lone surrogates"},
    {"wrong_type", AbuseGroup::kWrongType, 400, 8, "string steps, array size, null model..."},
    {"unknown_key", AbuseGroup::kWrongType, 400, 2, "n, Model, a 1000-byte key"},
    {"absurd_size", AbuseGroup::kAbsurdValue, 400, 4, "100000x100000, 0x0, 17x16, 16x"},
    {"absurd_steps", AbuseGroup::kAbsurdValue, 400, 3, "1e9, 0, -1, 201"},
    {"absurd_seed", AbuseGroup::kAbsurdValue, 400, 2, "-1, 2^64, -2^63 - 1"},
    {"absurd_guidance", AbuseGroup::kAbsurdValue, 400, 2, "-1, 101, 1e308"},
    {"absurd_frames", AbuseGroup::kAbsurdValue, 400, 3, "video frames 4k + 2, 0, 1e6"},
    {"absurd_deadline", AbuseGroup::kAbsurdValue, 400, 1, "deadline_s 0, -1, 1e9"},
    {"unknown_model", AbuseGroup::kAbsurdValue, 400, 3, "tiny-t2x, paths, the other kind"},
    {"prompt_length", AbuseGroup::kAbsurdValue, 400, 3, "empty, or 4097.. bytes"},
    {"over_budget", AbuseGroup::kAbsurdValue, 507, 2, "2048x2048 x 129 frames video"},
    {"body_too_large", AbuseGroup::kTooLarge, 413, 4, "body limit + 1 .. 3x the limit"},
    {"chunked_too_large", AbuseGroup::kTooLarge, 413, 1, "chunked, over the body limit"},
    {"unknown_route", AbuseGroup::kRoute, 404, 4, "/, /v1/models, typos, /../"},
    {"route_bad_bytes", AbuseGroup::kRoute, 404, 2, "%FF, raw 0x80.., long multibyte"},
    {"uri_too_long", AbuseGroup::kRoute, 414, 1, "a request line over 8 KiB"},
    {"wrong_method", AbuseGroup::kMethod, 404, 4, "GET/PUT/DELETE generations, POST /healthz"},
    {"unknown_method", AbuseGroup::kMethod, 400, 1, "BREW, get"},
    {"bad_request_line", AbuseGroup::kMethod, 400, 2, "garbage, no version, HTTP/0.9"},
    {"bad_content_length", AbuseGroup::kMethod, 400, 1, "Content-Length abc, 1e3, -5"},
    {"content_length_huge", AbuseGroup::kTooLarge, 413, 1, "Content-Length 2^64 - 1, 10^23"},
    {"gzip_bomb", AbuseGroup::kTooLarge, 413, 2, "32 KiB of gzip that decode to 32 MiB"},
    {"gzip_garbage", AbuseGroup::kMalformedJson, 400, 1, "Content-Encoding gzip, not gzip"},
    {"unknown_encoding", AbuseGroup::kMethod, 415, 1, "Content-Encoding zstd"},
    {"connect_close", AbuseGroup::kDisconnect, 0, 2, "connect, then close"},
    {"headers_only_close", AbuseGroup::kDisconnect, 0, 3, "headers, then close"},
    {"half_body_close", AbuseGroup::kDisconnect, 0, 3, "headers and half the body, close"},
    {"close_before_reply", AbuseGroup::kDisconnect, 0, 3, "a valid request, close at once"},
};

Fields BaseImage(int64_t seed = 1) {
  return {{"model", "\"tiny-t2i\""},    {"prompt", "\"abuse\""}, {"size", "\"16x16\""},
          {"num_inference_steps", "1"}, {"guidance_scale", "1"}, {"seed", std::to_string(seed)}};
}

Fields BaseVideo(int64_t seed = 1) {
  Fields f = BaseImage(seed);
  f[0].second = "\"tiny-t2v\"";
  f.push_back({"frames", "5"});
  return f;
}

using serve::AbuseObjectText;
using serve::BadUtf8Strings;
using serve::NonJsonNumbers;
using serve::PickVariant;
using serve::RepeatText;
using serve::WithAbuseField;

struct Builder : serve::AbuseRequestBuilder {
  std::string Post(GenerationKind kind, const std::string& body) const {
    return Request("POST", GenerationRoute(kind), body);
  }
};

// A valid request of kind `k`; sets the case's body and route.
void Valid(Kind k, core::Rng& rng, const Builder& b, AbuseCase* c) {
  const int64_t seed = 1 + static_cast<int64_t>(rng.Below(3));
  Fields f = k == kValidVideo ? BaseVideo(seed) : BaseImage(seed);
  if (k == kValidImageCfg)
    f = WithAbuseField(WithAbuseField(f, "size", "\"32x16\""), "guidance_scale", "4");
  if (k == kValidImageNone) f = WithAbuseField(f, "response_format", "\"none\"");
  c->body = AbuseObjectText(f);
  const GenerationKind route = k == kValidVideo ? GenerationKind::kVideo : GenerationKind::kImage;
  c->path = GenerationRoute(route);
  c->request = b.Post(route, c->body);
}

// The video request whose MinimumPeakBytes decides kOverBudget.
DiffusionRequest OverBudgetRequest() {
  DiffusionRequest r;
  r.model = "tiny-t2v";
  r.width = r.height = kMaxRequestPixels;
  r.frames = kMaxRequestFrames;
  r.steps = 1;
  r.cfg = false;
  r.guidance = 1;
  r.prompt = "abuse";
  return r;
}

// The malformed-JSON kinds' bodies (kJsonTruncated .. kJsonBadUtf8); `valid` otherwise.
// `valid` is the base image request's body, `limit` the server's body limit in bytes.
std::string MalformedJsonBody(Kind k, core::Rng& rng, const std::string& valid, int64_t limit) {
  switch (k) {
    case kJsonTruncated:
      return serve::TruncatedBody(rng, valid);
    case kJsonGarbage:
      return serve::GarbageBody(rng);
    case kJsonDeepNesting:
      // Deeper than ParseJson's 256 levels when the body limit allows it; a non-object or an
      // unknown key "a" otherwise.
      return serve::DeepNestingBody(rng, limit);
    case kJsonHugeNumber: {
      const std::vector<std::pair<std::string, std::string>> v = {
          {"num_inference_steps", "1e400"},
          {"num_inference_steps", "1" + std::string(400, '0')},
          {"guidance_scale", "-1e309"},
          {"seed", "18446744073709551616"},
          {"seed", "1e19"},
          {"seed", "123456789012345678901234567890"}};
      const auto& [key, value] = PickVariant(rng, v);
      return AbuseObjectText(WithAbuseField(BaseImage(), key, value));
    }
    case kJsonNanText: {
      const std::vector<std::string>& v = NonJsonNumbers();
      const std::vector<std::string> keys = {"num_inference_steps", "guidance_scale", "seed"};
      return AbuseObjectText(
          WithAbuseField(BaseImage(), PickVariant(rng, keys), PickVariant(rng, v)));
    }
    case kJsonNotObject:
      return PickVariant(rng, std::vector<std::string>{"[]", "[1, 2]", "\"tiny-t2i\"", "42", "null",
                                                       "true", "\"\"", "[" + valid + "]"});
    case kJsonDuplicateKey: {
      Fields f = BaseImage();
      f.push_back(rng.Below(2) == 0 ? std::pair<std::string, std::string>{"model", "\"tiny-t2i\""}
                                    : std::pair<std::string, std::string>{"prompt", "\"again\""});
      return AbuseObjectText(f);
    }
    case kJsonBadUtf8: {
      const std::vector<std::string>& v = BadUtf8Strings();
      return AbuseObjectText(
          WithAbuseField(BaseImage(), rng.Below(2) == 0 ? "prompt" : "model", PickVariant(rng, v)));
    }
    default:
      return valid;
  }
}

// The wrong-type kinds' bodies (kWrongType, kUnknownKey); `valid` otherwise.
std::string WrongTypeBody(Kind k, core::Rng& rng, const std::string& valid) {
  switch (k) {
    case kWrongType: {
      const std::vector<std::pair<std::string, std::vector<std::string>>> v = {
          {"num_inference_steps", {"\"4\"", "true", "2.5", "[1]", "{}", "null"}},
          {"size", {"[16, 16]", "16", "null", "{\"w\": 16}", "true"}},
          {"model", {"null", "7", "[\"tiny-t2i\"]", "true", "{}"}},
          {"prompt", {"null", "5", "{}", "[\"a\"]", "false"}},
          {"guidance_scale", {"\"high\"", "[]", "true", "null"}},
          {"seed", {"\"1\"", "1.5", "{}", "[1]"}},
          {"response_format", {"1", "null", "[\"none\"]"}},
          {"deadline_s", {"\"soon\"", "[]", "{}"}}};
      const auto& [key, values] = PickVariant(rng, v);
      return AbuseObjectText(WithAbuseField(BaseImage(), key, PickVariant(rng, values)));
    }
    case kUnknownKey:
      return AbuseObjectText(WithAbuseField(
          BaseImage(),
          PickVariant(rng, std::vector<std::string>{"n", "Model", "", "quality",
                                                    std::string(1000, 'k'), "\xC3\xA9t\xC3\xA9"}),
          "1"));
    default:
      return valid;
  }
}

// The absurd-value kinds' bodies (kAbsurdSize .. kOverBudget); `valid` otherwise. `limit`:
// the server's body limit in bytes.
std::string AbsurdValueBody(Kind k, core::Rng& rng, const std::string& valid, int64_t limit) {
  switch (k) {
    case kAbsurdSize: {
      const std::vector<std::string> v = {"100000x100000",
                                          "0x0",
                                          "17x16",
                                          "-16x16",
                                          "16x",
                                          "x",
                                          "16x16x16",
                                          "\xEF\xBC\x91\xEF\xBC\x96x16",
                                          "99999999999999999999x16",
                                          "16 x 16",
                                          "",
                                          "x" + RepeatText("\xC3\xA9", 30)};
      return AbuseObjectText(
          WithAbuseField(BaseImage(), "size", core::Json(PickVariant(rng, v)).dump()));
    }
    case kAbsurdSteps:
      return AbuseObjectText(WithAbuseField(
          BaseImage(), "num_inference_steps",
          PickVariant(rng,
                      std::vector<std::string>{"1000000000", "0", "-1", "201", "1000000000000"})));
    case kAbsurdSeed:
      return AbuseObjectText(
          WithAbuseField(BaseImage(), "seed",
                         PickVariant(rng, std::vector<std::string>{"-1", "18446744073709551615",
                                                                   "-9223372036854775809"})));
    case kAbsurdGuidance:
      return AbuseObjectText(
          WithAbuseField(BaseImage(), "guidance_scale",
                         PickVariant(rng, std::vector<std::string>{"-1", "101", "1e308", "-0.5"})));
    case kAbsurdFrames: {
      const int64_t k4 = static_cast<int64_t>(rng.Below(32));
      return AbuseObjectText(
          WithAbuseField(BaseVideo(), "frames",
                         PickVariant(rng, std::vector<std::string>{std::to_string(4 * k4 + 2), "0",
                                                                   "130", "1000000", "-5"})));
    }
    case kAbsurdDeadline:
      return AbuseObjectText(WithAbuseField(
          BaseImage(), "deadline_s", PickVariant(rng, std::vector<std::string>{"0", "-1", "1e9"})));
    case kUnknownModel: {
      const std::vector<std::string> v = {
          "tiny-t2x", "../../../../etc/passwd",        "/dev/zero", "", "tiny-t2v",
          "TINY-T2I", "x" + RepeatText("\xC3\xA9", 30)};
      return AbuseObjectText(
          WithAbuseField(BaseImage(), "model", core::Json(PickVariant(rng, v)).dump()));
    }
    case kPromptLength: {
      // Empty, or over kMaxPromptBytes while the body stays under its limit.
      const int64_t most = std::min(limit - 256, 8 * kMaxPromptBytes);
      const int64_t n =
          most <= kMaxPromptBytes || rng.Below(4) == 0
              ? 0
              : kMaxPromptBytes + 1 +
                    static_cast<int64_t>(rng.Below(static_cast<uint64_t>(most - kMaxPromptBytes)));
      return AbuseObjectText(
          WithAbuseField(BaseImage(), "prompt", "\"" + std::string(n, 'p') + "\""));
    }
    case kOverBudget: {
      Fields f = BaseVideo();
      f = WithAbuseField(f, "size", fmt::format("\"{}x{}\"", kMaxRequestPixels, kMaxRequestPixels));
      return AbuseObjectText(WithAbuseField(f, "frames", std::to_string(kMaxRequestFrames)));
    }
    default:
      return valid;
  }
}

// The body of a request of kind `k` (one of the kinds that send a body), drawn from `rng`; the
// valid base image request's body for the others.
std::string MakeBody(Kind k, core::Rng& rng, const AbusePlanContext& ctx) {
  const std::string valid = AbuseObjectText(BaseImage());
  const int64_t limit = ctx.max_body_bytes;
  if (k >= kJsonTruncated && k <= kJsonBadUtf8) return MalformedJsonBody(k, rng, valid, limit);
  if (k == kWrongType || k == kUnknownKey) return WrongTypeBody(k, rng, valid);
  if (k >= kAbsurdSize && k <= kOverBudget) return AbsurdValueBody(k, rng, valid, limit);
  if (k == kBodyTooLarge) {
    const int64_t n = limit + 1 + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(2 * limit)));
    std::string body = AbuseObjectText(WithAbuseField(BaseImage(), "prompt", "\"\""));
    body.insert(body.find("\"prompt\": \"") + 11, std::string(n - body.size(), 'p'));
    return body;
  }
  return valid;
}

std::string MakeRequest(Kind k, core::Rng& rng, const Builder& b, AbuseCase* c) {
  const std::string valid = AbuseObjectText(BaseImage());
  const std::string image = GenerationRoute(GenerationKind::kImage);
  switch (k) {
    case kValidImage:
    case kValidImageCfg:
    case kValidImageNone:
    case kValidVideo:
      Valid(k, rng, b, c);
      return c->request;
    case kAbsurdFrames:
    case kOverBudget:
      return b.Post(GenerationKind::kVideo, MakeBody(k, rng, b.c));
    case kUnknownModel: {
      const std::string body = MakeBody(k, rng, b.c);
      // Also the image model on the video route.
      return rng.Below(4) == 0 ? b.Post(GenerationKind::kVideo, valid)
                               : b.Post(GenerationKind::kImage, body);
    }
    case kChunkedTooLarge:
      return serve::ChunkedOverLimit(b, image);
    case kUnknownRoute:
      return PickVariant(
          rng, std::vector<std::string>{b.Get("/"), b.Get("/v1/models"), b.Get("/../../etc/passwd"),
                                        b.Get("/healthz/"), b.Get("//healthz"),
                                        b.Get("/v1/metrics/../healthz"),
                                        b.Request("POST", "/v1/images/generation", valid),
                                        b.Request("POST", "/v1/images/generations/x", valid),
                                        b.Request("POST", "/V1/IMAGES/GENERATIONS", valid)});
    case kRouteBadBytes:
      return PickVariant(rng, std::vector<std::string>{b.Get("/%FF"), b.Get("/%C3"), b.Get("/%00"),
                                                       b.Get("/\xC3\x28"), b.Get("/\xFF\xFE"),
                                                       b.Request("POST", image + "%FF", valid),
                                                       b.Get("/" + RepeatText("\xC3\xA9", 150)),
                                                       b.Get("/a" + RepeatText("%C3%A9", 150))});
    case kUriTooLong:
      return serve::UriTooLong(b, rng);
    case kWrongMethod:
      return PickVariant(
          rng,
          std::vector<std::string>{
              b.Get(image), b.Request("PUT", image, valid), b.Request("DELETE", image, ""),
              b.Request("PATCH", image, valid), b.Request("OPTIONS", image, ""),
              b.Get(GenerationRoute(GenerationKind::kVideo)), b.Request("POST", "/healthz", valid),
              b.Request("POST", "/v1/metrics", ""), b.Request("DELETE", "/v1/metrics", "")});
    case kUnknownMethod:
      return PickVariant(rng, std::vector<std::string>{b.Get("/healthz").replace(0, 3, "BREW"),
                                                       b.Get("/healthz").replace(0, 3, "get"),
                                                       b.Request("POSTX", image, valid)});
    case kBadRequestLine:
      return serve::BadRequestLine(rng);
    case kBadContentLength:  // read as 0 and 1 (strtoull): an empty or one-byte body
      return serve::BadContentLength(b, rng, image, valid);
    case kContentLengthHuge:  // the server reads (and drops) until its read timeout
      return serve::HugeContentLength(b, rng, image, valid);
    case kGzipBomb:
      return serve::Encoded(b, image, "gzip", serve::GzipBomb());
    case kGzipGarbage:
      return serve::Encoded(b, image, "gzip", valid);
    case kUnknownEncoding:
      return serve::Encoded(b, image, "zstd", valid);
    case kConnectClose:
      return "";
    case kHeadersOnlyClose:
      return serve::HeadersOnly(b, image, valid);
    case kHalfBodyClose:
      return serve::HalfBody(b, image, valid);
    case kCloseBeforeReply:
      return b.Post(GenerationKind::kImage, AbuseObjectText(BaseImage(7)));
    default:
      return b.Post(GenerationKind::kImage, MakeBody(k, rng, b.c));
  }
}

}  // namespace

const std::vector<AbuseKind>& AbuseKinds() { return kKinds; }

bool AbuseKindEnabled(int kind, const AbusePlanContext& context) {
  if (kind != kOverBudget) return true;
  if (context.budget_bytes <= 0) return false;
  const DiffusionRequest r = OverBudgetRequest();
  return MinimumPeakBytes(*TinyModel(r.model), r) > context.budget_bytes;
}

namespace {

// The valid case's route, from its path.
GenerationKind RouteOf(const AbuseCase& c) {
  return c.path == GenerationRoute(GenerationKind::kVideo) ? GenerationKind::kVideo
                                                           : GenerationKind::kImage;
}

class DiffusionSuite : public serve::AbuseSuite {
 public:
  const std::vector<AbuseKind>& Kinds() const override { return kKinds; }
  bool KindEnabled(int kind, const AbusePlanContext& context) const override {
    return AbuseKindEnabled(kind, context);
  }
  void MakeCase(int kind, core::Rng& rng, const AbusePlanContext& context,
                AbuseCase* c) const override {
    const Builder b{{context}};
    c->request = MakeRequest(static_cast<Kind>(kind), rng, b, c);
  }
  std::string CheckValid(const AbuseCase& c, const serve::HttpReply& reply,
                         std::string* fingerprint) const override {
    auto g = ParseGenerationRequest(c.body, RouteOf(c));
    if (!g.ok()) return "the case itself is invalid: " + g.status().message();
    auto j = core::ParseJson(reply.body, "reply");
    if (!j.ok()) return "reply is not JSON: " + j.status().message();
    if (!j->is_object() || !j->contains("data") || !(*j)["data"].is_array()) {
      return "reply has no data array";
    }
    const DiffusionRequest& r = g->request;
    const core::Json& data = (*j)["data"];
    const size_t frames = g->return_images ? static_cast<size_t>(r.frames) : 0;
    if (data.size() != frames) return fmt::format("{} frames, expected {}", data.size(), frames);
    for (const core::Json& d : data) {
      if (!d.is_object() || !d.contains("b64_json") || !d["b64_json"].is_string()) {
        return "a frame without b64_json";
      }
      auto png = serve::DecodeBase64(d["b64_json"].get<std::string>());
      if (!png.ok()) return png.status().message();
      auto img = serve::DecodePng(*png);
      if (!img.ok()) return img.status().message();
      if (img->width != r.width || img->height != r.height) {
        return fmt::format("a {}x{} frame, expected {}x{}", img->width, img->height, r.width,
                           r.height);
      }
    }
    if (!j->contains("template") || (*j)["template"] != TemplateKeyString(r)) {
      return "template is not '" + TemplateKeyString(r) + "'";
    }
    *fingerprint = data.dump();
    return "";
  }
};

}  // namespace

const serve::AbuseSuite& DiffusionAbuseSuite() {
  static const DiffusionSuite suite;
  return suite;
}

core::StatusOr<std::vector<AbuseCase>> PlanAbuse(int64_t n, uint64_t seed,
                                                 const AbusePlanContext& context) {
  return serve::PlanAbuse(DiffusionAbuseSuite(), n, seed, context);
}

}  // namespace tessera::xema
