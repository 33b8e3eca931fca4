#include "xema/pipeline/model_file.h"

#include <gtest/gtest.h>

#include "xema/pipeline/template_check.h"

namespace tessera::xema {
namespace {

std::string Testdata(const std::string& name) {
  return std::string(TESSERA_XEMA_PIPELINE_TESTDATA) + "/" + name;
}

core::Json Base() {
  return core::Json{{"format", kModelFormat}, {"name", "mine"}, {"base", "tiny-t2i"}};
}

TEST(ModelFileTest, AFileChangesSizesOfItsBase) {
  auto spec = ResolveTinyModel(Testdata("wide_t2v.json"));
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->name, "wide-t2v");
  EXPECT_TRUE(spec->video);
  EXPECT_EQ(spec->temporal_factor, 4);
  EXPECT_EQ(spec->seed, 7u);
  EXPECT_EQ(spec->dit.hidden, 128);
  EXPECT_EQ(spec->dit.num_layers, 2);
  EXPECT_EQ(spec->text.num_layers, 2);
  EXPECT_EQ(spec->text.hidden, 256);  // the base's
  EXPECT_EQ(spec->text.tokens, 32);
  EXPECT_EQ(spec->vae.channels, (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(spec->spatial_factor, 2);
  // It runs, and its trace is keyed by its name.
  DiffusionRequest r;
  r.model = spec->name;
  r.width = 16;
  r.height = 16;
  r.frames = 5;
  r.steps = 1;
  auto rec = RecordRequest(*spec, r);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(rec->trace.key.model, "wide-t2v");
  auto x = Expand(rec->trace);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(LowerBoundBytes(*x), rec->measured_peak_bytes);
}

TEST(ModelFileTest, BadFilesNameTheField) {
  struct Case {
    core::Json j;
    std::string message;
  };
  std::vector<Case> cases;
  auto with = [](const char* key, core::Json v) {
    core::Json j = Base();
    j[key] = std::move(v);
    return j;
  };
  cases.push_back({with("format", "x/1"), "format: got 'x/1'"});
  cases.push_back({with("base", "sdxl"), "base: got 'sdxl', must be one of tiny-t2i, tiny-t2v"});
  cases.push_back({with("name", "tiny-t2i"), "name: got 'tiny-t2i', must be a new"});
  cases.push_back({with("colour", 1), "model: unknown key 'colour'"});
  cases.push_back({with("dit", core::Json{{"hidden", 0}}), "dit.hidden: got 0"});
  cases.push_back({with("dit", core::Json{{"heads", 2}}), "dit: unknown key 'heads'"});
  cases.push_back({with("dit", core::Json{{"num_heads", 3}}), "num_heads"});
  cases.push_back({with("text", core::Json{{"vocab", 1}}), "text.vocab: got 1"});
  cases.push_back({with("vae", core::Json{{"channels", core::Json::array()}}),
                   "vae.channels: got [], must be a list of 1 to 8"});
  cases.push_back({with("vae", core::Json{{"channels", {64, -1}}}), "vae.channels[1]: got -1"});
  cases.push_back(
      {with("dit", core::Json{{"hidden", 4096}, {"ffn_hidden", 32768}}), "must be <= 1e9"});
  cases.push_back({with("seed", -1), "seed: got -1"});
  for (const Case& c : cases) {
    auto spec = TinyModelFromJson(c.j, "m.json");
    ASSERT_FALSE(spec.ok()) << c.j.dump();
    EXPECT_EQ(spec.status().code(), core::StatusCode::kInvalidArgument);
    EXPECT_NE(spec.status().message().find(c.message), std::string::npos)
        << spec.status().message();
    EXPECT_EQ(spec.status().message().rfind("m.json: ", 0), 0u) << spec.status().message();
    EXPECT_EQ(spec.status().message().find('\n'), std::string::npos);
  }
  auto missing = ResolveTinyModel("/nonexistent/model.json");
  EXPECT_EQ(missing.status().code(), core::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("must be one of tiny-t2i, tiny-t2v or a model JSON"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::xema
