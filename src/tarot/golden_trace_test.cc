// Golden traces: the full system (ERI then MSR) over the first 20 expressions of refscenes seed 1,
// with the synthetic segmenter's boundary errors on (30% over- and under-segmentation, seed 1),
// the rule reasoner and handcrafted features. Every backend call, every vote and every MSR
// decision of each query, as the deterministic trace (no times), and the mask's area and box,
// must equal testdata/golden_traces.json. A change that alters any of them fails here with the
// first sample and trace entry that differ; after an intended change, rerun with
// TESSERA_BLESS=1 (make bless) to rewrite the file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "core/json_util.h"
#include "tarot/backends.h"
#include "tarot/call_trace.h"
#include "tarot/pipeline.h"
#include "tarot/scene_generator.h"

namespace tessera::tarot {
namespace {

constexpr int kSamples = 20;

core::Json RunSamples() {
  auto scenes = GenerateScenes(1, 4);
  EXPECT_TRUE(scenes.ok()) << scenes.status().ToString();
  core::Json out = core::Json::array();
  if (!scenes.ok()) return out;
  for (size_t s = 0; s < scenes->size() && static_cast<int>(out.size()) < kSamples; ++s) {
    auto scene = std::make_shared<const Scene>((*scenes)[s]);
    BackendContext plain;
    plain.scene = scene;
    BackendContext with_errors = plain;
    with_errors.options = {
        {"synthetic.seed", "1"}, {"synthetic.over_seg", "0.3"}, {"synthetic.under_seg", "0.3"}};
    auto seg = MakeSegmenter("synthetic", with_errors);
    auto rsn = MakeReasoner("rule", plain);
    auto feat = MakeFeatureExtractor("handcrafted", plain);
    EXPECT_TRUE(seg.ok()) << seg.status().ToString();
    EXPECT_TRUE(rsn.ok()) << rsn.status().ToString();
    EXPECT_TRUE(feat.ok()) << feat.status().ToString();
    if (!seg.ok() || !rsn.ok() || !feat.ok()) return out;
    for (const Expression& e : scene->expressions) {
      if (static_cast<int>(out.size()) == kSamples) break;
      CallTrace trace;
      auto r = RunQuery(scene->image, e.text, **seg, **rsn, feat->get(), PipelineOptions{}, &trace);
      EXPECT_TRUE(r.ok()) << e.text << ": " << r.status().ToString();
      if (!r.ok()) continue;
      const Box box = BoxOf(r->mask);
      out.push_back({{"scene", s},
                     {"query", e.text},
                     {"mask_pixels", r->mask.count()},
                     {"mask_box", {box.x0, box.y0, box.x1, box.y1}},
                     {"trace", trace.ToJson(/*deterministic=*/true)}});
    }
  }
  return out;
}

TEST(TarotGoldenTraces, TwentyQueriesMatchTheStoredTraces) {
  const std::string path = std::string(TESSERA_TAROT_TESTDATA) + "/golden_traces.json";
  const core::Json got = RunSamples();
  ASSERT_EQ(got.size(), static_cast<size_t>(kSamples));
  if (const char* bless = std::getenv("TESSERA_BLESS"); bless != nullptr && *bless == '1') {
    std::ofstream(path) << got.dump(1) << "\n";
    GTEST_SKIP() << "blessed " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path << " is missing; create it with TESSERA_BLESS=1";
  std::stringstream text;
  text << in.rdbuf();
  const core::Json want = core::Json::parse(text.str());
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (want[i] == got[i]) continue;
    const core::Json& wt = want[i]["trace"];
    const core::Json& gt = got[i]["trace"];
    std::string where = "the mask";
    const core::Json& we = wt.is_object() && wt.contains("entries") ? wt["entries"] : wt;
    const core::Json& ge = gt.is_object() && gt.contains("entries") ? gt["entries"] : gt;
    for (size_t k = 0; k < std::max(we.size(), ge.size()); ++k) {
      if (k >= we.size() || k >= ge.size() || we[k] != ge[k]) {
        where = "trace entry " + std::to_string(k) + ": want " +
                (k < we.size() ? we[k].dump() : "(none)") + ", got " +
                (k < ge.size() ? ge[k].dump() : "(none)");
        break;
      }
    }
    ADD_FAILURE() << "sample " << i << " (\"" << got[i]["query"].get<std::string>()
                  << "\") differs at " << where;
  }
}

}  // namespace
}  // namespace tessera::tarot
