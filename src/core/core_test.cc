#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "core/json_util.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/table.h"
#include "core/trace.h"

namespace tessera::core {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgument("x: got " + std::to_string(x) + ", must be even");
  return x / 2;
}

Status UseHalf(int x, int* out) {
  ASSIGN_OR_RETURN(*out, Half(x));
  return Status::Ok();
}

TEST(StatusTest, OkAndErrorPropagate) {
  int v = 0;
  EXPECT_TRUE(UseHalf(4, &v).ok());
  EXPECT_EQ(v, 2);
  Status s = UseHalf(3, &v);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.ToString(), "InvalidArgument: x: got 3, must be even");
  EXPECT_EQ(s.WithPrefix("f.json").message(), "f.json: x: got 3, must be even");
}

TEST(JsonTest, TypedGettersNameFieldValueAndRange) {
  Json j = {{"a", -1}, {"b", "s"}, {"c", 0.5}, {"d", 3}};
  auto a = GetPositiveDouble(j, "dev", "a");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(), "dev.a: got -1, must be > 0");
  EXPECT_FALSE(GetPositiveInt(j, "", "b").ok());
  EXPECT_EQ(GetPositiveInt(j, "", "zz").status().message(), "zz: missing required field");
  EXPECT_DOUBLE_EQ(*GetFraction(j, "", "c"), 0.5);
  EXPECT_EQ(*GetPositiveInt(j, "", "d"), 3);
  EXPECT_FALSE(GetPositiveInt(j, "", "c").ok());  // 0.5 is not an integer
}

TEST(JsonTest, MalformedAndTruncatedInputIsAnError) {
  EXPECT_FALSE(ParseJson("{\"a\": [1, 2", "t.json").ok());
  EXPECT_FALSE(ParseJson("", "t.json").ok());
  EXPECT_NE(ParseJson("{,}", "t.json").status().message().find("t.json"), std::string::npos);
  EXPECT_EQ(ReadJsonFile("/nonexistent/x.json").status().code(), StatusCode::kNotFound);
}

TEST(JsonTest, WriteIsAtomicAndRoundTrips) {
  std::string path = ::testing::TempDir() + "/rt.json";
  Json j = {{"x", 1.5}, {"y", {1, 2, 3}}};
  ASSERT_TRUE(WriteJsonFile(path, j).ok());
  auto back = ReadJsonFile(path);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, j);
  std::ifstream tmp(path + ".tmp");
  EXPECT_FALSE(tmp.good());
}

TEST(RngTest, DeterministicAndUniform) {
  Rng a(42), b(42), c(43);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.NextU64(), b.NextU64());
  EXPECT_NE(Rng(42).NextU64(), c.NextU64());
  Rng r(7);
  double sum = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    double u = r.Uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.01);
  EXPECT_NE(Rng(1).Fork(0).NextU64(), Rng(1).Fork(1).NextU64());
}

// Random access reproduces the sequential stream; keyed streams depend on every word and its
// position; the stream of a fixed seed is pinned (checkpoints and dropout masks rely on it).
TEST(RngTest, RandomAccessAndKeyedStreams) {
  Rng seq(99);
  const Rng at(99);
  for (uint64_t i = 0; i < 50; ++i) EXPECT_EQ(at.BitsAt(i), seq.NextU64()) << i;
  Rng u(99);
  for (uint64_t i = 0; i < 50; ++i) EXPECT_EQ(at.UniformAt(i), u.Uniform()) << i;
  EXPECT_EQ(Rng(5).NextU64(), 0x63033b0ca389c35aULL);
  EXPECT_EQ(Rng(5).Keyed({1, 2}).BitsAt(0), Rng(5).Fork(1).Fork(2).BitsAt(0));
  EXPECT_NE(Rng(5).Keyed({1, 2}).BitsAt(0), Rng(5).Keyed({2, 1}).BitsAt(0));
  EXPECT_NE(Rng(5).Keyed({1, 2}).BitsAt(0), Rng(5).Keyed({1, 3}).BitsAt(0));
  EXPECT_NE(Rng(5).Keyed({1, 2}).BitsAt(0), Rng(6).Keyed({1, 2}).BitsAt(0));
  EXPECT_EQ(Rng(5).Keyed({}).BitsAt(3), Rng(5).BitsAt(3));
}

TEST(TableTest, AlignsColumns) {
  Table t({"name", "value"});
  t.AddRow({"a", "1.00"});
  t.AddRow({"longer", "12.50"});
  EXPECT_EQ(t.Render(), "name    value\n-------------\na        1.00\nlonger  12.50\n");
  EXPECT_EQ(Fixed(3.14159, 2), "3.14");
}

TEST(TraceTest, WritesChromeTraceEvents) {
  TraceWriter w;
  w.NameTrack(0, "rank 0");
  w.Span(0, "seq 1", "attn", 0.5, 0.25);
  Json j = w.ToJson();
  ASSERT_EQ(j["traceEvents"].size(), 2u);
  EXPECT_EQ(j["traceEvents"][1]["ph"], "X");
  EXPECT_DOUBLE_EQ(j["traceEvents"][1]["ts"].get<double>(), 500000.0);
  EXPECT_DOUBLE_EQ(j["traceEvents"][1]["dur"].get<double>(), 250000.0);
}

}  // namespace
}  // namespace tessera::core
