// `tessera tarot scenes|run|bench` end to end: files written and read back, the IoU against a
// scene's own target, repeatable masks, a small benchmark with its JSON, and every bad input the
// issue lists refused with exit 1 and one line naming it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/cli_test_util.h"
#include "core/json_util.h"

namespace tessera::cli {
namespace {

using testing::ExpectUserError;
using testing::ReadWhole;
using testing::Result;
using testing::RunTessera;
using testing::TempPath;
using testing::Write;

// One seeded scene written by `tarot scenes`; returns its folder.
std::string Scenes(int n = 1) {
  const std::string dir = TempPath("scenes");
  std::filesystem::remove_all(dir);
  Result r = RunTessera("tarot scenes --seed 5 --n " + std::to_string(n) + " --out " + dir);
  EXPECT_EQ(r.code, 0) << r.out;
  return dir;
}

// The text of the first expression of scene 0 of tier `tier`, from expressions.tsv.
std::string Expression(const std::string& dir, const std::string& tier) {
  std::istringstream lines(ReadWhole(dir + "/expressions.tsv"));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("0000\t" + tier + "\t", 0) == 0) return line.substr(6 + tier.size());
  }
  ADD_FAILURE() << "no " << tier << " expression";
  return "";
}

TEST(TarotCli, ScenesWritesImagesProgramsAndExpressions) {
  const std::string dir = Scenes(2);
  for (const char* f : {"scene_0000.png", "scene_0000.json", "scene_0001.png", "scene_0001.json",
                        "expressions.tsv"}) {
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + f)) << f;
  }
  const std::string tsv = ReadWhole(dir + "/expressions.tsv");
  EXPECT_EQ(testing::Lines(tsv), 1 + 2 * 7);  // header + every tier of both scenes
  auto scene = core::ReadJsonFile(dir + "/scene_0000.json");
  ASSERT_TRUE(scene.ok()) << scene.status().ToString();
  EXPECT_EQ((*scene)["kind"], "tarot-scene");
  // The same seed writes the same bytes.
  const std::string again = TempPath("again");
  std::filesystem::remove_all(again);
  ASSERT_EQ(RunTessera("tarot scenes --seed 5 --n 2 --out " + again).code, 0);
  EXPECT_EQ(ReadWhole(dir + "/scene_0001.png"), ReadWhole(again + "/scene_0001.png"));
}

TEST(TarotCli, RunSegmentsASceneExpressionAndScoresItAgainstTheTarget) {
  const std::string dir = Scenes();
  const std::string query = Expression(dir, "E4");
  const std::string args = "tarot run --image " + dir + "/scene_0000.png --scene " + dir +
                           "/scene_0000.json --query '" + query + "' --segmenter synthetic " +
                           "--reasoner oracle --out ";
  Result r = RunTessera(args + TempPath("m.png") + " --overlay " + TempPath("o.png") + " --trace " +
                        TempPath("t.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("1.000 (E4)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("calls:"), std::string::npos) << r.out;
  auto trace = core::ReadJsonFile(TempPath("t.json"));
  ASSERT_TRUE(trace.ok());
  EXPECT_GT((*trace)["calls"]["segmenter"].get<int>(), 0);
  EXPECT_GT(ReadWhole(TempPath("o.png")).size(), 100u);
  // A second run writes the same mask.
  ASSERT_EQ(RunTessera(args + TempPath("m2.png")).code, 0);
  EXPECT_EQ(ReadWhole(TempPath("m.png")), ReadWhole(TempPath("m2.png")));
}

TEST(TarotCli, RunWithPixelsOnlyBackendsAndABoxPrompt) {
  const std::string dir = Scenes();
  Result q =
      RunTessera("tarot run --image " + dir + "/scene_0000.png --query '" + Expression(dir, "E1") +
                 "' --segmenter classical --reasoner rule --system eri --out " + TempPath("q.png"));
  ASSERT_EQ(q.code, 0) << q.out;
  EXPECT_NE(q.out.find("classical / rule"), std::string::npos) << q.out;
  Result b = RunTessera("tarot run --image " + dir +
                        "/scene_0000.png --box 0,0,120,120 --segmenter classical --out " +
                        TempPath("b.png"));
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_NE(b.out.find("box prompt:"), std::string::npos) << b.out;
  EXPECT_TRUE(std::filesystem::exists(TempPath("b.png")));
}

TEST(TarotCli, BenchPrintsTheTablesAndWritesJson) {
  const std::string json = TempPath("bench.json"), png = TempPath("bench.png");
  std::filesystem::remove(png);
  Result r = RunTessera(
      "tarot bench --n 2 --seed 4 --systems naive,eri,full,msr-yes-judge --resamples 20 "
      "--sweep-reasoner-error --quiet --json " +
      json + " --plot " + png);
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* needle :
       {"gIoU per tier", "naive-coupling gIoU", "MSR on boundary errors", "msr-yes-judge (all)",
        "eri-gain-E3", "reasoner-error", "not the paper's RefCOCO"}) {
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
  }
  auto j = core::ReadJsonFile(json);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ((*j)["systems"].size(), 4u);
  // The plot is a PNG (the embedded script, Debian's matplotlib).
  std::ifstream in(png, std::ios::binary);
  std::string magic(8, '\0');
  in.read(magic.data(), 8);
  EXPECT_EQ(magic, std::string("\x89PNG\r\n\x1a\n", 8)) << r.out;
  EXPECT_EQ((*j)["samples"], 14);
}

// The fmnist set (needs dataset-fashion-mnist): scenes written, an expression segmented through
// the scene-reading and the pixels-only backends, a small benchmark, and a set that does not fit.
TEST(TarotCli, FmnistScenesRunAndBench) {
  const std::string dir = TempPath("fmnist");
  std::filesystem::remove_all(dir);
  Result s = RunTessera("tarot scenes --set fmnist --seed 5 --n 1 --out " + dir);
  ASSERT_EQ(s.code, 0) << s.out;
  auto scene = core::ReadJsonFile(dir + "/scene_0000.json");
  ASSERT_TRUE(scene.ok()) << scene.status().ToString();
  EXPECT_EQ((*scene)["set"], "fmnist");
  const std::string png = dir + "/scene_0000.png", json = dir + "/scene_0000.json";
  const std::string query = Expression(dir, "E1");
  Result oracle =
      RunTessera("tarot run --image " + png + " --scene " + json + " --query '" + query +
                 "' --segmenter synthetic --reasoner oracle --out " + TempPath("f.png"));
  ASSERT_EQ(oracle.code, 0) << oracle.out;
  EXPECT_NE(oracle.out.find("1.000 (E1)"), std::string::npos) << oracle.out;
  Result pixels = RunTessera("tarot run --image " + png + " --set fmnist --query '" + query +
                             "' --segmenter classical --reasoner rule --out " + TempPath("g.png"));
  ASSERT_EQ(pixels.code, 0) << pixels.out;
  Result bench = RunTessera(
      "tarot bench --set fmnist --n 1 --systems naive,eri --resamples 10 "
      "--segmenter classical --quiet");
  ASSERT_EQ(bench.code, 0) << bench.out;
  EXPECT_NE(bench.out.find("tarot bench: fmnist"), std::string::npos) << bench.out;
  ExpectUserError("tarot scenes --set coco --n 1 --out " + TempPath("coco"), "--set: got 'coco'");
  ExpectUserError("tarot run --image " + png + " --scene " + json + " --set refscenes --query '" +
                      query + "' --segmenter synthetic --out " + TempPath("h.png"),
                  "--set: got 'refscenes', but the scene");
}

TEST(TarotCli, BadInputIsOneLineNamingIt) {
  const std::string dir = Scenes();
  const std::string png = dir + "/scene_0000.png", json = dir + "/scene_0000.json";
  const std::string out = " --out " + TempPath("m.png");
  const std::string ok = " --segmenter classical --reasoner rule" + out;
  ExpectUserError("tarot run --image " + TempPath("missing.png") + " --query 'the star'" + ok,
                  "no such file");
  ExpectUserError("tarot run --image " + Write("empty.png", "") + " --query 'the star'" + ok,
                  "--image");
  ExpectUserError("tarot run --image " + Write("text.png", "not a png") + " --query 'x'" + ok,
                  "is not a readable PNG");
  ExpectUserError("tarot run --image " + png + " --query '  '" + ok, "--query: got an empty query");
  ExpectUserError("tarot run --image " + png + ok, "--query: got an empty query");
  ExpectUserError("tarot run --image " + png + " --query 'the star' --segmenter sam3" + out,
                  "--segmenter: got 'sam3', must be one of synthetic, classical");
  ExpectUserError("tarot run --image " + png + " --query 'the star' --segmenter classical " +
                      "--reasoner gpt" + out,
                  "--reasoner: got 'gpt'");
  ExpectUserError("tarot run --image " + png + " --query 'the star' --system best" + ok,
                  "--system: got 'best'");
  ExpectUserError("tarot run --image " + png + " --box 10,10,5000,40" + ok,
                  "--box: got 10,10,5000,40, must lie inside the");
  ExpectUserError("tarot run --image " + png + " --box 1,2,3" + ok, "--box: got '1,2,3'");
  ExpectUserError("tarot run --image " + png + " --query 'the star' --segmenter synthetic" + out,
                  "--scene: none given, and tarot.segmenter 'synthetic' reads the scene's");
  ExpectUserError("tarot run --image " + png + " --query 'the star' --segmenter-option x" + ok,
                  "--segmenter-option: got 'x', must be KEY=VALUE");
  ExpectUserError("tarot bench --n 1 --systems naive,best --quiet", "--systems: got 'best'");
  ExpectUserError("tarot bench --n 1 --set coco --quiet", "--set: got 'coco'");
  ExpectUserError("tarot bench --n 1 --segmenter sam3 --quiet", "--segmenter: got 'sam3'");
  ExpectUserError("tarot bench --n 1 --sweep-skill spelling --quiet",
                  "--sweep-skill: got 'spelling'");
  ExpectUserError("tarot scenes --n 1 --out " + png, "--out: '" + png + "' exists and is not");
  ExpectUserError("tarot scenes --n 0 --out " + TempPath("x"), "--n");
  // A scene program that does not draw the image.
  const std::string other = TempPath("other");
  std::filesystem::remove_all(other);
  ASSERT_EQ(RunTessera("tarot scenes --seed 6 --n 1 --out " + other).code, 0);
  ExpectUserError("tarot run --image " + png + " --scene " + other +
                      "/scene_0000.json --query 'the star' --segmenter synthetic" + out,
                  "--scene: ");
}

}  // namespace
}  // namespace tessera::cli
