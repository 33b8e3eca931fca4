#include "xema/serve/request_json.h"

#include <gtest/gtest.h>

#include <string>

#include "core/json_util.h"

namespace tessera::xema {
namespace {

// The message of an image request body that must be refused, or "" when it was accepted.
std::string ImageError(const std::string& body) {
  auto r = ParseGenerationRequest(body, GenerationKind::kImage);
  return r.ok() ? "" : r.status().message();
}
std::string VideoError(const std::string& body) {
  auto r = ParseGenerationRequest(body, GenerationKind::kVideo);
  return r.ok() ? "" : r.status().message();
}

#define EXPECT_REFUSED(error, needle) EXPECT_NE((error).find(needle), std::string::npos) << (error)

TEST(RequestJsonTest, ValidImageRequest) {
  auto r = ParseGenerationRequest(
      R"({"model": "tiny-t2i", "prompt": "a cat", "size": "32x16", "num_inference_steps": 2,
          "guidance_scale": 1.0, "seed": 7, "response_format": "none", "deadline_s": 2})",
      GenerationKind::kImage);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->request.width, 32);
  EXPECT_EQ(r->request.height, 16);
  EXPECT_EQ(r->request.steps, 2);
  EXPECT_FALSE(r->request.cfg);  // guidance 1: no classifier-free guidance
  EXPECT_EQ(r->request.seed, 7u);
  EXPECT_FALSE(r->return_images);
  EXPECT_EQ(r->deadline_s, 2);
  auto d =
      ParseGenerationRequest(R"({"model": "tiny-t2i", "prompt": "x"})", GenerationKind::kImage);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->request.width, 64);
  EXPECT_TRUE(d->request.cfg);
  EXPECT_TRUE(d->return_images);
}

TEST(RequestJsonTest, ValidVideoRequest) {
  auto r = ParseGenerationRequest(
      R"({"model": "tiny-t2v", "prompt": "waves", "size": "16x16", "frames": 9})",
      GenerationKind::kVideo);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->request.frames, 9);
}

TEST(RequestJsonTest, EveryBadFieldIsNamed) {
  const std::string ok = R"("model": "tiny-t2i", "prompt": "p")";
  EXPECT_REFUSED(ImageError("{"), "body");
  EXPECT_REFUSED(ImageError("[1]"), "must be an object");
  EXPECT_REFUSED(ImageError("{" + ok + R"(, "n": 2})"), "unknown key 'n'");
  EXPECT_REFUSED(ImageError("{" + ok + R"(, "frames": 5})"), "unknown key 'frames'");
  EXPECT_REFUSED(ImageError(R"({"prompt": "p"})"), "model");
  EXPECT_REFUSED(ImageError(R"({"model": "sdxl", "prompt": "p"})"), "model: got 'sdxl'");
  EXPECT_REFUSED(ImageError(R"({"model": "tiny-t2v", "prompt": "p"})"), "needs an image model");
  EXPECT_REFUSED(VideoError(R"({"model": "tiny-t2i", "prompt": "p"})"), "needs a video model");
  EXPECT_REFUSED(ImageError(R"({"model": "tiny-t2i"})"), "prompt");
  EXPECT_REFUSED(ImageError(R"({"model": "tiny-t2i", "prompt": ""})"), "prompt: got 0 bytes");
  EXPECT_REFUSED(ImageError(R"({"model": "tiny-t2i", "prompt": 3})"), "prompt: got 3");
  EXPECT_REFUSED(ImageError("{" + ok + R"(, "size": "64"})"), "size: got '64'");
  EXPECT_REFUSED(ImageError("{" + ok + R"(, "size": "0x64"})"), "size: got '0x64'");
  EXPECT_REFUSED(ImageError("{" + ok + R"(, "size": "70x64"})"), "size: request.width: got 70");
  EXPECT_REFUSED(ImageError("{" + ok + R"(, "size": "4096x64"})"), "size: got '4096x64'");
  EXPECT_REFUSED(ImageError("{" + ok + R"(, "size": "+64x+64"})"), "size: got '+64x+64'");
  EXPECT_REFUSED(ImageError("{" + ok + R"(, "size": " 64x64"})"), "size: got ' 64x64'");
  EXPECT_REFUSED(ImageError("{" + ok + R"(, "num_inference_steps": 0})"),
                 "num_inference_steps: got 0, must be in [1, 200]");
  EXPECT_REFUSED(ImageError("{" + ok + R"(, "num_inference_steps": 2.5})"), "num_inference_steps");
  EXPECT_REFUSED(ImageError("{" + ok + R"(, "guidance_scale": -1})"), "guidance_scale: got -1");
  EXPECT_REFUSED(ImageError("{" + ok + R"(, "seed": -1})"), "seed: got -1");
  EXPECT_REFUSED(ImageError("{" + ok + R"(, "response_format": "url"})"),
                 "response_format: got 'url', must be b64_json or none");
  EXPECT_REFUSED(ImageError("{" + ok + R"(, "deadline_s": 0})"), "deadline_s: got 0");
  EXPECT_REFUSED(VideoError(R"({"model": "tiny-t2v", "prompt": "p", "frames": 6})"),
                 "frames: request.frames: got 6");
  EXPECT_REFUSED(VideoError(R"({"model": "tiny-t2v", "prompt": "p", "frames": 1000})"),
                 "frames: got 1000");
  EXPECT_REFUSED(
      ImageError(R"({"model": "tiny-t2i", "prompt": ")" + std::string(5000, 'a') + R"("})"),
      "prompt: got 5000 bytes");
}

// A value echoed in a message is cut between UTF-8 characters, so the message can be a JSON
// reply (the server once answered 500 for it: the reply could not be dumped).
TEST(RequestJsonTest, EchoedMultibyteValuesStayValidUtf8) {
  std::string text = "x";
  for (int i = 0; i < 30; ++i) text += "\xC3\xA9";
  for (const std::string& body :
       {R"({"model": ")" + text + R"(", "prompt": "p"})",
        R"({"model": "tiny-t2i", "prompt": "p", "size": ")" + text + R"("})",
        R"({"model": "tiny-t2i", "prompt": "p", "response_format": ")" + text + R"("})",
        R"({"model": "tiny-t2i", "prompt": ["ab", ")" + text + R"("]})"}) {
    const auto g = ParseGenerationRequest(body, GenerationKind::kImage);
    ASSERT_FALSE(g.ok()) << body;
    EXPECT_NO_THROW((void)core::Json(g.status().message()).dump()) << g.status().message();
  }
}

}  // namespace
}  // namespace tessera::xema

namespace tessera::xema {
namespace {

TEST(WarmUpFromJsonTest, ParsesImageAndVideoBodiesAndNamesTheBadOne) {
  const core::Json list = core::Json::parse(R"([
    {"model": "tiny-t2i", "prompt": "a cat", "size": "128x128", "num_inference_steps": 3},
    {"model": "tiny-t2v", "prompt": "waves", "size": "64x64", "frames": 5}])");
  auto r = WarmUpFromJson(list, "warm.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].model, "tiny-t2i");
  EXPECT_EQ((*r)[0].width, 128);
  EXPECT_EQ((*r)[0].steps, 3);
  EXPECT_EQ((*r)[1].model, "tiny-t2v");
  EXPECT_EQ((*r)[1].frames, 5);

  const core::Json bad = core::Json::parse(R"([
    {"model": "tiny-t2i", "prompt": "a cat", "size": "64x64"},
    {"model": "tiny-t2v", "prompt": "waves", "size": "64x64"}])");
  auto e = WarmUpFromJson(bad, "warm.json");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("warm.json: warm_up[1]: model"), std::string::npos)
      << e.status().message();
  auto not_list = WarmUpFromJson(core::Json::parse(R"({"model": "tiny-t2i"})"), "warm.json");
  EXPECT_NE(not_list.status().message().find("must be an array"), std::string::npos);
}

}  // namespace
}  // namespace tessera::xema
