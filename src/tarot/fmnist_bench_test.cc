// The fmnist set through the benchmark and the backends: a small seeded RunBench runs every
// system over every backend pairing without a backend error (scene-reading and pixels-only),
// the pixels-only backends find the items, and the reasoners read the fashion grammar. Needs
// dataset-fashion-mnist (scripts/install-deps.sh).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tarot/backends.h"
#include "tarot/bench.h"
#include "tarot/classical_segmenter.h"
#include "tarot/rule_reasoner.h"
#include "tarot/scene_generator.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

BenchOptions Small(const std::string& segmenter, const std::string& reasoner) {
  BenchOptions o;
  o.set = kSetFmnist;
  o.n = 3;
  o.seed = 4;
  o.backends.segmenter = segmenter;
  o.backends.reasoner = reasoner;
  o.metrics.bootstrap_resamples = 20;
  o.boundary_split = segmenter == "synthetic";
  return o;
}

TEST(FmnistBench, EverySystemRunsWithoutErrorsOnEveryBackendPairing) {
  const std::pair<const char*, const char*> pairs[] = {{"synthetic", "rule"},
                                                       {"classical", "rule"},
                                                       {"synthetic", "oracle"},
                                                       {"classical", "noisy"}};
  for (const auto& [seg, rsn] : pairs) {
    auto r = RunBench(Small(seg, rsn));
    ASSERT_TRUE(r.ok()) << seg << "/" << rsn << ": " << r.status().ToString();
    EXPECT_EQ(r->scenes, 3);
    EXPECT_EQ(r->samples_per_tier.size(), 7u);
    ASSERT_EQ(r->systems.size(), AllSystems().size());
    for (const SystemSummary& s : r->systems) {
      EXPECT_EQ(s.errors, 0) << seg << "/" << rsn << " " << SystemName(s.system) << ": "
                             << s.first_error;
      std::printf("%s/%s %-15s gIoU %.3f\n", seg, rsn, SystemName(s.system),
                  s.by_tier.at("all").giou);
    }
  }
}

TEST(FmnistBench, ARunIsRepeatedBitForBit) {
  auto a = RunBench(Small("classical", "rule"));
  auto b = RunBench(Small("classical", "rule"));
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t k = 0; k < a->systems.size(); ++k) {
    EXPECT_EQ(a->systems[k].by_tier.at("all").giou, b->systems[k].by_tier.at("all").giou);
  }
}

TEST(FmnistBench, ThePixelsOnlyBackendsFindTheItems) {
  SceneGeneratorOptions o;
  o.set = kSetFmnist;
  auto scenes = GenerateScenes(8, 10, o);
  ASSERT_TRUE(scenes.ok()) << scenes.status().ToString();
  BackendContext fmnist;
  fmnist.set = kSetFmnist;
  int objects = 0, found = 0, named = 0;
  for (const Scene& s : *scenes) {
    auto seg = MakeSegmenter("classical", fmnist);
    ASSERT_TRUE(seg.ok());
    ASSERT_TRUE((*seg)->SetImage(s.image).ok());
    const auto& analysis = static_cast<ClassicalSegmenter&>(**seg).analysis();
    for (const SceneObject& obj : s.objects) {
      ++objects;
      for (const ClassicalObject& c : analysis.objects) {
        if (MaskIou(c.mask, obj.mask) < 0.8) continue;
        ++found;
        named += Categories()[c.category].name == obj.category;
      }
    }
    // The rule reasoner reads the same image.
    RuleReasoner rule(kSetFmnist);
    ASSERT_TRUE(rule.SetImage(s.image).ok());
    EXPECT_FALSE(rule.detections().empty());
  }
  std::printf("classical on fmnist: %d of %d objects found (IoU >= 0.8), %d of them named right\n",
              found, objects, named);
  EXPECT_GE(found, objects * 7 / 10);
  EXPECT_GE(named, found * 7 / 10);
}

TEST(FmnistBench, AnUnknownSetIsNamed) {
  BenchOptions o = Small("synthetic", "rule");
  o.set = "mnist";
  const core::Status s = RunBench(o).status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tarot.bench.set: got 'mnist', must be refscenes or fmnist"),
            std::string::npos)
      << s.ToString();
}

}  // namespace
}  // namespace tessera::tarot
