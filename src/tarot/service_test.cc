// The services behind `tessera tarot`: scene sets written and read back, one query or box prompt
// on an image file, box parsing, and the mask and overlay PNGs.
#include "tarot/service.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/input_file.h"
#include "core/output_file.h"
#include "tarot/test_scenes.h"

namespace tessera::tarot {
namespace {

std::string TempDir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string dir = ::testing::TempDir() + "/tarot_service_" + info->name() + "_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(TarotService, WritesASceneSetThatLoadsBack) {
  const std::string dir = TempDir("set");
  auto s = WriteSceneSet(9, 2, dir);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->files.size(), 5u);
  int expressions = 0;
  for (const auto& [tier, n] : s->per_tier) expressions += n;
  EXPECT_EQ(expressions,
            static_cast<int>(s->scenes[0].expressions.size() + s->scenes[1].expressions.size()));
  auto loaded = LoadScene(dir + "/scene_0001.json");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->image.pixels, s->scenes[1].image.pixels);
  auto png = core::ReadInputFile(dir + "/scene_0001.png");
  ASSERT_TRUE(png.ok());
  auto image = ImageFromPng(*png);
  ASSERT_TRUE(image.ok());
  EXPECT_EQ(image->pixels, s->scenes[1].image.pixels);
  // Into an existing file: refused, naming the field.
  EXPECT_NE(WriteSceneSet(9, 1, dir + "/scene_0000.png").status().message().find("tarot.out: '"),
            std::string::npos);
  EXPECT_NE(WriteSceneSet(9, 1, dir + "/no/such/parent").status().message().find("parent folder"),
            std::string::npos);
  EXPECT_EQ(WriteSceneSet(9, 0, dir).status().code(), core::StatusCode::kInvalidArgument);
  // A new folder named with a trailing slash, as the README writes it ("--out scenes/").
  const std::string slash = TempDir("slash") + "/";
  auto made = WriteSceneSet(9, 1, slash);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_TRUE(std::filesystem::exists(slash + "scene_0000.png"));
}

TEST(TarotService, ParsesBoxes) {
  auto b = ParseBox("1,2.5,30,40");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (Box{1, 2.5, 30, 40}));
  for (const char* bad : {"", "1,2,3", "1,2,3,4,5", "a,b,c,d", "1,,3,4", "nan,1,2,3"}) {
    EXPECT_EQ(ParseBox(bad).status().code(), core::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(TarotService, MaskAndOverlayPngs) {
  Image img(4, 3, Rgb{200, 200, 200});
  Mask m(4, 3);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 3; ++x) m.set(x, y);
  auto mask_png = MaskPng(m);
  ASSERT_TRUE(mask_png.ok());
  auto mask_back = ImageFromPng(*mask_png);
  ASSERT_TRUE(mask_back.ok());
  EXPECT_EQ(mask_back->at(1, 1), (Rgb{255, 255, 255}));
  EXPECT_EQ(mask_back->at(3, 1), (Rgb{0, 0, 0}));
  auto over = OverlayPng(img, m);
  ASSERT_TRUE(over.ok());
  auto back = ImageFromPng(*over);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->at(1, 1), (Rgb{228, 100, 228}));  // half magenta: the interior pixel
  EXPECT_EQ(back->at(0, 0), (Rgb{0, 0, 0}));        // the boundary
  EXPECT_EQ(back->at(3, 2), (Rgb{200, 200, 200}));  // outside: untouched
  EXPECT_FALSE(OverlayPng(img, Mask(2, 2)).ok());
}

TEST(TarotService, RunsAQueryAndABoxPromptOnAnImageFile) {
  const std::string dir = TempDir("run");
  auto set = WriteSceneSet(11, 1, dir);
  ASSERT_TRUE(set.ok());
  const Scene& scene = set->scenes[0];
  RunRequest r;
  r.image_path = dir + "/scene_0000.png";
  r.scene_path = dir + "/scene_0000.json";
  r.query = scene.expressions[3].text;  // E3
  r.system = System::kEri;
  r.backends.reasoner = "oracle";
  auto res = RunImageQuery(r);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  ASSERT_TRUE(res->iou.has_value());
  EXPECT_EQ(res->tier, "E3");
  EXPECT_DOUBLE_EQ(*res->iou, SampleIou(res->mask, TargetMask(scene, scene.expressions[3].target)));
  EXPECT_GT(res->trace.Calls("reasoner"), 0);
  ASSERT_TRUE(res->result.has_value());
  EXPECT_TRUE(res->result->eri.has_value());

  RunRequest box;
  box.image_path = r.image_path;
  box.backends.segmenter = "classical";
  box.box = BoxOf(scene.objects[0].mask);
  auto b = RunImageQuery(box);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_FALSE(b->instances.empty());
  EXPECT_EQ(b->trace.Calls("segmenter"), 2);  // SetImage and Box
  box.box = Box{-1, 0, 10, 10};
  EXPECT_NE(RunImageQuery(box).status().message().find("tarot.box: got -1,0,10,10"),
            std::string::npos);
  box.query = "the star";
  box.box = Box{0, 0, 10, 10};
  EXPECT_NE(RunImageQuery(box).status().message().find("not both"), std::string::npos);
}

TEST(TarotService, NamesBadImagesQueriesAndScenes) {
  const std::string dir = TempDir("bad");
  auto set = WriteSceneSet(12, 1, dir);
  ASSERT_TRUE(set.ok());
  RunRequest r;
  r.backends.segmenter = "classical";
  r.query = "the star";
  r.image_path = dir + "/missing.png";
  EXPECT_EQ(RunImageQuery(r).status().code(), core::StatusCode::kNotFound);
  ASSERT_TRUE(core::WriteFileAtomically(dir + "/text.png", "hello").ok());
  r.image_path = dir + "/text.png";
  EXPECT_NE(RunImageQuery(r).status().message().find("is not a readable PNG"), std::string::npos);
  r.image_path = dir + "/scene_0000.png";
  r.query = " \t";
  EXPECT_NE(RunImageQuery(r).status().message().find("tarot.query: got an empty query"),
            std::string::npos);
  r.query = "the star";
  r.backends.segmenter = "synthetic";
  auto no_scene = RunImageQuery(r);
  EXPECT_EQ(no_scene.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_EQ(no_scene.status().message().rfind("tarot.scene: none given", 0), 0u);
  auto other = WriteSceneSet(13, 1, dir + "_other");
  ASSERT_TRUE(other.ok());
  r.scene_path = dir + "_other/scene_0000.json";
  EXPECT_NE(RunImageQuery(r).status().message().find("is not the"), std::string::npos);
}

}  // namespace
}  // namespace tessera::tarot
