// Helpers shared by the server tests (server_test.cc, planned_server_test.cc): start a
// server, post a request, run the same request directly on the pipeline, compare frames.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/units.h"
#include "runtime/device_allocator.h"
#include "serve/base64.h"
#include "serve/png.h"
#include "xema/serve/request_json.h"
#include "xema/serve/server.h"

namespace tessera::xema::serve_test {

inline std::unique_ptr<DiffusionServer> StartServer(ServerOptions o) {
  auto s = DiffusionServer::Start(o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

inline ServerOptions Options(MemoryPolicy policy = MemoryPolicy::kNone,
                             int64_t budget = core::kGiBInt64) {
  ServerOptions o;
  o.policy = policy;
  o.budget_bytes = budget;
  o.http_threads = 8;
  return o;
}

struct Reply {
  int status = 0;
  core::Json body;
};

inline Reply Post(const DiffusionServer& s, const std::string& route, const std::string& body) {
  httplib::Client c("127.0.0.1", s.port());
  c.set_read_timeout(30, 0);
  auto res = c.Post(route.c_str(), body, "application/json");
  Reply r;
  if (!res) return r;
  r.status = res->status;
  auto j = core::ParseJson(res->body, "reply");
  if (j.ok()) r.body = *j;
  return r;
}
inline Reply PostImage(const DiffusionServer& s, const std::string& body) {
  return Post(s, "/v1/images/generations", body);
}

// The frames of a request run directly on the pipeline, as 8-bit RGB.
inline std::vector<serve::Rgb8Image> DirectRun(const std::string& body, GenerationKind kind) {
  auto g = ParseGenerationRequest(body, kind);
  EXPECT_TRUE(g.ok());
  const DiffusionRequest& r = g->request;
  runtime::HeapDeviceAllocator heap;
  auto spec = TinyModel(r.model);
  auto p = DiffusionPipeline::Load(*spec, heap);
  EXPECT_TRUE(p.ok());
  std::vector<float> out(static_cast<size_t>(OutputFloats(r)));
  EXPECT_TRUE((*p)->Run(r, out).ok());
  std::vector<serve::Rgb8Image> frames;
  const size_t n = static_cast<size_t>(3 * r.width * r.height);
  for (int64_t f = 0; f < r.frames; ++f) {
    frames.push_back(
        *serve::FrameToRgb8(std::span<const float>(out).subspan(f * n, n), r.width, r.height));
  }
  return frames;
}

inline std::vector<serve::Rgb8Image> Frames(const Reply& r) {
  std::vector<serve::Rgb8Image> frames;
  for (const core::Json& d : r.body["data"]) {
    auto png = serve::DecodeBase64(d["b64_json"].get<std::string>());
    EXPECT_TRUE(png.ok());
    auto img = serve::DecodePng(*png);
    EXPECT_TRUE(img.ok());
    if (img.ok()) frames.push_back(*img);
  }
  return frames;
}

inline bool SameFrames(const std::vector<serve::Rgb8Image>& a,
                       const std::vector<serve::Rgb8Image>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].width != b[i].width || a[i].height != b[i].height || a[i].rgb != b[i].rgb) {
      return false;
    }
  }
  return true;
}

// Polls until `pred` holds (at most 10 s).
template <typename Pred>
bool Eventually(Pred pred) {
  for (int i = 0; i < 1000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace tessera::xema::serve_test
