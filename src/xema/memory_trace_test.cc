#include "xema/memory_trace.h"

#include <gtest/gtest.h>

#include <functional>

#include "core/units.h"
#include "xema/trace_generator.h"

namespace tessera::xema {
namespace {

std::string TestData(const std::string& name) {
  return std::string(TESSERA_XEMA_TESTDATA) + "/" + name;
}

MemoryTrace Tiny() {
  auto t = ReadTraceFile(TestData("tiny_t2i.json"));
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return *t;
}

TEST(MemoryTraceTest, ExpandsTheHandMadeTrace) {
  MemoryTrace t = Tiny();
  auto x = Expand(t);
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  // 2 prologue + 2 steps x 3 body + 2 epilogue ops.
  ASSERT_EQ(x->ops.size(), 10u);
  EXPECT_EQ(FlatOpName(t, x->ops[5]), "dit.attn@step1");
  EXPECT_EQ(FlatOpName(t, x->ops[8]), "vae.up1");
  // 3 weights + 6 once-only + 4 body tensors x 2 steps.
  EXPECT_EQ(x->tensors.size(), 16u);
  // latent.next (tensor 9): step 0 lives 4..5 (freed by the next step's attn), step 1 lives
  // 7..8 (freed at last_free_op, vae.up1).
  int seen = 0;
  for (const FlatTensor& f : x->tensors) {
    if (f.tensor == 9 && f.step == 0) {
      EXPECT_EQ(std::make_pair(f.alloc_op, f.free_op), std::make_pair(4, 5));
    }
    if (f.tensor == 9 && f.step == 1) {
      EXPECT_EQ(std::make_pair(f.alloc_op, f.free_op), std::make_pair(7, 8));
    }
    // text.emb: prologue alloc, body free -> the last step's sched.step (flat 7).
    if (f.tensor == 4) {
      EXPECT_EQ(std::make_pair(f.alloc_op, f.free_op), std::make_pair(0, 7));
    }
    if (f.kind == TensorKind::kWeight) {
      EXPECT_EQ(std::make_pair(f.alloc_op, f.free_op), std::make_pair(0, 9));
    }
    seen += f.tensor == 9;
  }
  EXPECT_EQ(seen, 2);
  // Live activations per op, worked by hand in MiB (see testdata/tiny_t2i.json).
  const std::vector<int64_t> want = {3, 2, 12, 6, 3, 13, 5, 2, 13, 36};
  std::vector<int64_t> live = LiveBytes(*x, false);
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(live[i], want[i] * core::kMiBInt64) << "op " << i;
  EXPECT_EQ(WeightBytes(*x), 28 * core::kMiBInt64);
  EXPECT_EQ(LowerBoundBytes(*x), 64 * core::kMiBInt64);
}

TEST(MemoryTraceTest, FreeStepPicksTheStepOfAPrologueTensor) {
  // noise (tensor 5) is allocated in the prologue (op 1) and freed at dit.attn (body op 2):
  // by default in the last step (flat 5), with free_step 0 in the first (flat 2).
  core::Json j = ToJson(Tiny());
  for (int step : {-1, 0, 1}) {
    j["tensors"][5]["free_step"] = step;
    auto t = TraceFromJson(j, "<t>");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    auto x = Expand(*t);
    ASSERT_TRUE(x.ok());
    for (const FlatTensor& f : x->tensors) {
      if (f.tensor == 5) {
        EXPECT_EQ(f.free_op, step == 0 ? 2 : 5) << step;
      }
    }
  }
}

TEST(MemoryTraceTest, JsonRoundTrip) {
  for (uint64_t seed = 0; seed < 50; ++seed) {
    MemoryTrace t = RandomTrace(seed);
    core::Json j = ToJson(t);
    auto back = TraceFromJson(core::Json::parse(j.dump()), "<rt>");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(ToJson(*back), j) << seed;
  }
  MemoryTrace tiny = Tiny();
  auto back = TraceFromJson(ToJson(tiny), "<rt>");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(ToJson(*back), ToJson(tiny));
}

// key.batch is written only when > 1 (files of one request are unchanged) and read as
// optional (default 1).
TEST(MemoryTraceTest, KeyBatchIsOptionalAndRoundTrips) {
  MemoryTrace tiny = Tiny();
  EXPECT_EQ(tiny.key.batch, 1);
  EXPECT_FALSE(ToJson(tiny)["key"].contains("batch"));
  EXPECT_EQ(Describe(tiny).find("batch"), std::string::npos);
  tiny.key.batch = 3;
  const core::Json j = ToJson(tiny);
  EXPECT_EQ(j["key"]["batch"], 3);
  auto back = TraceFromJson(core::Json::parse(j.dump()), "<rt>");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->key.batch, 3);
  EXPECT_EQ(ToJson(*back), j);
  EXPECT_NE(Describe(*back).find(" sp 1 batch 3 "), std::string::npos) << Describe(*back);
  for (int64_t bad : {0, 65}) {
    core::Json b = j;
    b["key"]["batch"] = bad;
    auto t = TraceFromJson(b, "t.json");
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.status().message().find("key.batch: got " + std::to_string(bad)), std::string::npos)
        << t.status().ToString();
  }
  tiny.key.batch = 0;
  EXPECT_NE(Validate(tiny).message().find("key.batch: got 0, must be in [1, 64]"),
            std::string::npos);
}

TEST(MemoryTraceTest, SizesAreRoundedTo512) {
  core::Json j = ToJson(Tiny());
  j["tensors"][3]["bytes"] = 1000;
  auto t = TraceFromJson(j, "<t>");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->tensors[3].bytes, 1024);
}

// Each mutation of the tiny trace and the message it must produce.
TEST(MemoryTraceTest, BadInputIsOneLineNamingTheField) {
  const core::Json good = ToJson(Tiny());
  struct Case {
    std::function<void(core::Json&)> mutate;
    std::string needle;
  };
  std::vector<Case> cases = {
      {[](core::Json& j) { j["tensors"][8]["free_op"] = 2; },
       "tensors[8].free_op: got 2, before alloc_op 3 (free before alloc)"},
      {[](core::Json& j) { j["tensors"][6]["bytes"] = -4096; },
       "tensors[6].bytes: got -4096, must be in [1, 1099511627776]"},
      {[](core::Json& j) { j["tensors"][6]["bytes"] = 0; }, "tensors[6].bytes: got 0"},
      {[](core::Json& j) { j["tensors"][6]["phase"] = "decode"; },
       "tensors[6].phase: got 'decode', must be text, denoise or vae"},
      {[](core::Json& j) { j["tensors"][6]["kind"] = "param"; },
       "tensors[6].kind: got 'param', must be weight, act or workspace"},
      {[](core::Json& j) { j["tensors"][6]["alloc_op"] = 40; },
       "tensors[6].alloc_op: got 40, must be in [0, 7)"},
      {[](core::Json& j) { j["tensors"][6]["free_op"] = -1; }, "tensors[6].free_op: got -1"},
      {[](core::Json& j) { j["tensors"][6]["id"] = 9; }, "tensors[6].id: got 9, must be 6"},
      {[](core::Json& j) { j["tensors"][0]["alloc_op"] = 0; },
       "tensors[0].alloc_op: not allowed on a weight"},
      {[](core::Json& j) { j["tensors"][9].erase("last_free_op"); },
       "tensors[9].last_free_op: missing"},
      {[](core::Json& j) { j["tensors"][9]["last_free_op"] = 3; },
       "tensors[9].last_free_op: got 3, must be an epilogue op in [5, 7)"},
      {[](core::Json& j) {
         j["tensors"][3]["free_next_step"] = true;
         j["tensors"][3]["last_free_op"] = 5;
       },
       "tensors[3].free_next_step: true needs alloc_op and free_op in the body"},
      {[](core::Json& j) { j["tensors"][5]["free_step"] = 2; },
       "tensors[5].free_step: got 2, must be in [0, 2) (key.steps) or -1"},
      {[](core::Json& j) { j["tensors"][6]["free_step"] = 0; },
       "tensors[6].free_step: got 0, only allowed for a prologue tensor freed at a body op"},
      {[](core::Json& j) { j["tensors"][6]["fre_op"] = 2; }, "tensors[6]: unknown key 'fre_op'"},
      {[](core::Json& j) { j["body"][0]["phase"] = "vae"; },
       "body[0].phase: got 'vae', must be denoise"},
      {[](core::Json& j) { j["body"][0]["flops"] = -1; }, "body[0].flops: got -1, must be >= 0"},
      {[](core::Json& j) { j["key"]["steps"] = 0; }, "key.steps: got 0, must be in [1, 10000]"},
      {[](core::Json& j) {
         j["key"]["steps"] = 5000;
         j["body"] = core::Json::array();
         for (int i = 0; i < 1000; ++i) j["body"].push_back({{"name", "b"}, {"phase", "denoise"}});
       },
       "key.steps: got 5000, expands to"},
      {[](core::Json& j) { j["format"] = "other/1"; }, "format: got 'other/1'"},
      {[](core::Json& j) { j["provenance"] = "guessed"; }, "provenance: got 'guessed'"},
      {[](core::Json& j) { j.erase("tensors"); }, "tensors: missing required field"},
  };
  for (const Case& c : cases) {
    core::Json j = good;
    c.mutate(j);
    auto t = TraceFromJson(j, "t.json");
    ASSERT_FALSE(t.ok()) << c.needle;
    const std::string& m = t.status().message();
    EXPECT_NE(m.find(c.needle), std::string::npos) << m;
    EXPECT_EQ(m.rfind("t.json: ", 0), 0u) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST(MemoryTraceTest, TestdataFilesFailAsDocumented) {
  auto t = ReadTraceFile(TestData("free_before_alloc.json"));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("free before alloc"), std::string::npos);
  t = ReadTraceFile(TestData("negative_size.json"));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("bytes: got -4096"), std::string::npos);
}

TEST(MemoryTraceTest, RandomTracesAreValidAndDeterministic) {
  for (uint64_t seed = 0; seed < 200; ++seed) {
    MemoryTrace t = RandomTrace(seed);
    EXPECT_TRUE(Validate(t).ok());
    EXPECT_EQ(ToJson(t), ToJson(RandomTrace(seed)));
    auto x = Expand(t);
    ASSERT_TRUE(x.ok());
    for (const FlatTensor& f : x->tensors) {
      EXPECT_LE(f.alloc_op, f.free_op);
      EXPECT_EQ(f.bytes % kAlignmentBytes, 0);
    }
  }
}

}  // namespace
}  // namespace tessera::xema
