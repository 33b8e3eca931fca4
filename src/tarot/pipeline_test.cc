// TarotPipeline end to end over the scripted cup scene: every system runs, the full system is
// bitwise reproducible, calls are counted per backend, and bad input is refused with a named
// field.
#include "tarot/pipeline.h"

#include <gtest/gtest.h>

#include "tarot/tarot_test_util.h"

namespace tessera::tarot {
namespace {

using fakes::CupScene;
using fakes::FixedFeatures;

PipelineOptions Options(System s) {
  PipelineOptions o;
  o.system = s;
  return o;
}

TEST(TarotPipeline, EverySystemRuns) {
  for (System system : AllSystems()) {
    SCOPED_TRACE(SystemName(system));
    CupScene s;
    FixedFeatures features(s.grid());
    CallTrace trace;
    auto r = RunQuery(s.image(), "the cup above the plate", s.seg, s.rsn, &features,
                      Options(system), &trace);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->system, system);
    EXPECT_EQ(r->eri.has_value(), UsesEri(system));
    EXPECT_EQ(r->msr.has_value(), UsesMsr(system));
    // The naive text system asks SegmentText for the whole query, which this segmenter does
    // not understand; every other system finds cup B.
    EXPECT_EQ(r->mask, system == System::kNaive ? Mask(CupScene::kW, CupScene::kH) : s.b);
    // Counts are the query's calls: the fakes' own records (SetImage aside).
    const int seg_calls = static_cast<int>(s.seg.text_calls.size() + s.seg.box_calls.size() +
                                           s.seg.point_calls.size());
    EXPECT_EQ(r->calls.segmenter, seg_calls);
    EXPECT_EQ(r->calls.reasoner, static_cast<int>(s.rsn.calls.size()));
    EXPECT_EQ(r->calls.features > 0, UsesMsr(system));
    // The caller's trace also has SetImage (and Extract for `full`).
    EXPECT_EQ(trace.Calls("segmenter"), r->calls.segmenter + 1);
  }
}

TEST(TarotPipeline, TwoRunsAreBitwiseEqual) {
  auto run = [](CallTrace* trace) {
    CupScene s;
    FixedFeatures features(s.grid());
    auto r = RunQuery(s.image(), "the cup above the plate", s.seg, s.rsn, &features,
                      Options(System::kFull), trace);
    EXPECT_TRUE(r.ok());
    return std::move(r).value();
  };
  CallTrace ta, tb;
  const QueryResult a = run(&ta), b = run(&tb);
  EXPECT_EQ(a.mask, b.mask);
  EXPECT_EQ(a.mask.words(), b.mask.words());
  EXPECT_EQ(a.msr->prompt.samples, b.msr->prompt.samples);
  EXPECT_EQ(a.msr->points, b.msr->points);
  EXPECT_EQ(a.eri->final_vote.weights.weight, b.eri->final_vote.weights.weight);
  EXPECT_EQ(a.eri->box_vote.votes, b.eri->box_vote.votes);
  EXPECT_EQ(ta.ToJson(true).dump(), tb.ToJson(true).dump());
  EXPECT_EQ(a.calls.segmenter, b.calls.segmenter);
  EXPECT_EQ(a.calls.reasoner, b.calls.reasoner);
  EXPECT_EQ(a.calls.features, b.calls.features);
}

TEST(TarotPipeline, SetImageOnceManyQueries) {
  CupScene s;
  FixedFeatures features(s.grid());
  TarotPipeline p(s.seg, s.rsn, &features, Options(System::kEri));
  auto before = p.Run("the cup above the plate", nullptr);
  ASSERT_FALSE(before.ok());
  EXPECT_EQ(before.status().code(), core::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(p.SetImage(s.image(), nullptr).ok());
  auto first = p.Run("the cup above the plate", nullptr);
  auto second = p.Run("the cup above the plate", nullptr);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->mask, second->mask);
  EXPECT_EQ(first->calls.reasoner, second->calls.reasoner);
}

TEST(TarotPipeline, BadInputIsNamed) {
  CupScene s;
  auto empty = RunQuery(s.image(), "  ", s.seg, s.rsn, nullptr, Options(System::kEri), nullptr);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("tarot.query"), std::string::npos);
  auto no_features =
      RunQuery(s.image(), "cup", s.seg, s.rsn, nullptr, Options(System::kFull), nullptr);
  ASSERT_FALSE(no_features.ok());
  EXPECT_NE(no_features.status().message().find("tarot.features"), std::string::npos);
  auto no_image = RunQuery(Image(), "cup", s.seg, s.rsn, nullptr, Options(System::kEri), nullptr);
  ASSERT_FALSE(no_image.ok());
  EXPECT_NE(no_image.status().message().find("tarot.image"), std::string::npos);
  for (System system : AllSystems()) {
    auto parsed = ParseSystem(SystemName(system));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, system);
  }
  auto unknown = ParseSystem("fancy");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("naive-coupling"), std::string::npos);
}

TEST(TarotPipeline, WrongSizeMaskFromABackendIsAnError) {
  CupScene s;
  s.seg.text["cup over plate"] = {fakes::Inst(Mask(3, 3), 0.9)};
  auto r = RunQuery(s.image(), "the cup above the plate", s.seg, s.rsn, nullptr,
                    Options(System::kEri), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), core::StatusCode::kInternal);
  EXPECT_NE(r.status().message().find("3x3 instance mask"), std::string::npos);
}

}  // namespace
}  // namespace tessera::tarot
