// End-to-end tests of the tessera binary: bad input exits 1 with one line naming the
// field, the value and what is allowed; good input writes the promised files.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "cli/cli_test_util.h"
#include "core/json_util.h"
#include "serve/arrivals.h"
#include "xema/serve/loadgen.h"

namespace {

using tessera::cli::testing::ExpectUserError;
using tessera::cli::testing::Lines;
using tessera::cli::testing::Result;
using tessera::cli::testing::RunTessera;
using tessera::cli::testing::TempPath;
using tessera::cli::testing::Write;

TEST(CliTest, HelpWorks) {
  Result r = RunTessera("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("zellige"), std::string::npos);
  r = RunTessera("zellige --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("plan"), std::string::npos);
  EXPECT_NE(r.out.find("tokens"), std::string::npos);
}

TEST(CliTest, TokensCommand) {
  Result r = RunTessera("zellige tokens --kind video --res 1080p --seconds 15");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "497760\n");
  EXPECT_EQ(RunTessera("zellige tokens --kind image --res 720p").out, "3600\n");
  ExpectUserError("zellige tokens --kind audio", "--kind: got 'audio'");
  ExpectUserError("zellige tokens --res 10x", "res: got '10x'");
  ExpectUserError("zellige tokens --seconds -1", "--seconds: got '-1'");
}

TEST(CliTest, BadPresetsAndOptions) {
  ExpectUserError("zellige plan --cluster b200x8", "cluster: got 'b200x8', must be one of");
  ExpectUserError("zellige plan --workload v200", "workload: got 'v200'");
  ExpectUserError("zellige plan --load 0", "load: got '0'");
  ExpectUserError("zellige plan --load -3", "load: got '-3'");
  ExpectUserError("zellige plan --planner fastest", "planner: got 'fastest'");
  ExpectUserError("zellige plan --video-seconds 0", "--video-seconds: got '0'");
  ExpectUserError("zellige plan --time-limit 0", "--time-limit: got '0'");
  ExpectUserError("zellige bench-planner --time-limit -1", "--time-limit: got '-1'");
  ExpectUserError("zellige plan --planner zellige --option zellige.cell_ranks=12",
                  "zellige.cell_ranks: got '12', must be a power of two");
  ExpectUserError("zellige plan --planner knapformer --option knapformer.bags=g3n1",
                  "knapformer.bags: got 'g3n1'");
  ExpectUserError("zellige plan --model nothing", "model: got 'nothing'");
  EXPECT_EQ(RunTessera("zellige plan --no-such-flag").code, 1);
}

TEST(CliTest, UnknownPlannerOptionListsTheKnownKeys) {
  ExpectUserError("zellige plan --planner usp --option zellige.gapp=1",
                  "got 'zellige.gapp', must be one of");
  ExpectUserError("zellige plan --option zellige.gapp=1", "knapformer.bags");
  ExpectUserError("zellige bench-planner --batches 1 --mixes v50 --option zellige.gapp=1",
                  "got 'zellige.gapp', must be one of");
}

TEST(CliTest, MalformedAndTruncatedFiles) {
  std::string trunc = Write("trunc.json", "{\"name\": \"c\", \"device\": {\"name\": \"x\"");
  ExpectUserError("zellige plan --cluster " + trunc, "malformed JSON");
  std::string batch_trunc = Write("batch_trunc.json", "{\"sequences\": [{\"tokens\": 5},");
  ExpectUserError("zellige plan --workload " + batch_trunc, "malformed JSON");
  std::string neg = Write("neg.json", R"({"sequences": [{"tokens": -5}]})");
  ExpectUserError("zellige plan --workload " + neg, "sequences[0].tokens: got -5, must be >= 1");
  std::string cl = Write("cl.json", R"({"name": "c", "device": {"name": "d", "peak_flops": 1e14,
    "mem_bw_bytes_per_s": 1e12, "memory_bytes": 0, "memory_usable_fraction": 0.9,
    "compute_efficiency": 0.5}, "nodes": 1, "ranks_per_node": 8,
    "intra": {"name": "nv", "bw_bytes_per_s": 1e11, "latency_s": 1e-5},
    "inter": {"name": "ib", "bw_bytes_per_s": 1e10, "latency_s": 1e-5}})");
  ExpectUserError("zellige plan --cluster " + cl, "device.memory_bytes: got 0, must be > 0");
  std::string model = Write("model.json", R"({"name": "m", "hidden": 1000, "heads": 12,
    "layers": 2, "ffn": 4000, "text_tokens": 0, "bytes_per_elem": 2})");
  ExpectUserError("zellige plan --model " + model, "heads: got 12, must divide hidden (1000)");
  std::string plan = Write("plan.json", R"({"planner": "x", "num_ranks": 16, "placements": [)");
  std::string batch = Write("batch.json", R"({"sequences": [{"tokens": 5000}]})");
  ExpectUserError("zellige simulate --batch " + batch + " --plan " + plan, "malformed JSON");
  std::string plan2 = Write("plan2.json",
                            R"({"planner": "x", "num_ranks": 16, "placements": [{"seq": 0,
    "q": 1, "h": 5, "k": 1, "ranks": [0, 1, 2, 3, 4]}]})");
  ExpectUserError("zellige simulate --batch " + batch + " --plan " + plan2,
                  "must divide the head count 12");
  ExpectUserError("zellige plan --workload /nonexistent.json", "workload: got '/nonexistent.json'");
}

TEST(CliTest, BatchThatFitsNoRankIsRejected) {
  // 20M tokens cannot fit 8 A800s' memory however it is split.
  std::string huge = Write("huge.json", R"({"sequences": [{"tokens": 20000000}]})");
  ExpectUserError("zellige plan --cluster a800x8 --workload " + huge,
                  "sequences[0]: 20000000 tokens need");
}

TEST(CliTest, PlanWritesJsonTraceAndPlan) {
  std::string json = TempPath("out.json");
  Result r = RunTessera("zellige plan --cluster a800x8 --workload v40 --load low --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("usp"), std::string::npos);
  auto j = tessera::core::ReadJsonFile(json);
  ASSERT_TRUE(j.ok());
  ASSERT_EQ((*j)["results"].size(), 6u);  // zellige + 5 baselines (joint runs only by name)
  for (const auto& e : (*j)["results"]) {
    for (const char* k : {"planner", "feasible", "makespan_s", "max_over_mean", "attn_comm_bytes",
                          "peak_mem_bytes", "solve_ms"}) {
      EXPECT_TRUE(e.contains(k)) << k;
    }
  }
  EXPECT_TRUE((*j).contains("cluster"));
  EXPECT_TRUE((*j).contains("batch"));

  std::string trace = TempPath("trace.json");
  std::string plan = TempPath("plan.json");
  std::string batch = TempPath("batch.json");
  r = RunTessera(
      "zellige plan --cluster a800x8 --workload v40 --load low --planner knapformer --trace " +
      trace + " --save-plan " + plan + " --save-batch " + batch);
  ASSERT_EQ(r.code, 0) << r.out;
  auto t = tessera::core::ReadJsonFile(trace);
  ASSERT_TRUE(t.ok());
  EXPECT_GT((*t)["traceEvents"].size(), 8u);
  // The saved plan simulates to the same makespan through `simulate`.
  r = RunTessera("zellige simulate --cluster a800x8 --batch " + batch + " --plan " + plan);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("makespan"), std::string::npos);
}

// --plot draws a PNG (the embedded script, Debian's matplotlib); a failing interpreter is a
// one-line user error that leaves the target untouched.
TEST(CliTest, PlanPlotDrawsAPngOrSaysWhyNot) {
  const std::string png = TempPath("plan.png");
  Result r = RunTessera("zellige plan --cluster a800x8 --workload v40 --load low --plot " + png);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("wrote " + png), std::string::npos) << r.out;
  std::ifstream f(png, std::ios::binary);
  std::string head(8, '\0');
  f.read(head.data(), 8);
  EXPECT_EQ(head, std::string("\x89PNG\r\n\x1a\n", 8));
  const std::string kept = Write("kept.png", "old");
  setenv("TESSERA_PYTHON", "/bin/false", 1);
  r = RunTessera("zellige plan --cluster a800x8 --load low --planner usp --plot " + kept);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--plot: drawing with /bin/false failed"), std::string::npos) << r.out;
  std::ifstream k(kept);
  std::string body((std::istreambuf_iterator<char>(k)), std::istreambuf_iterator<char>());
  EXPECT_EQ(body, "old");
  setenv("TESSERA_PYTHON", "/no/such/python", 1);
  r = RunTessera("zellige plan --cluster a800x8 --load low --planner usp --plot " + kept);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--plot: cannot run '/no/such/python'"), std::string::npos) << r.out;
  unsetenv("TESSERA_PYTHON");
}

// A hand-made 2-rank profile (src/zellige/testdata; numbers made up, not measured).
std::string TestProfile() { return std::string(TESSERA_ZELLIGE_TESTDATA) + "/profile_2rank.json"; }

TEST(CliTest, PlanAndSimulateWithProfile) {
  std::string json = TempPath("out.json");
  std::string plan = TempPath("plan.json");
  std::string batch = TempPath("batch.json");
  Result r = RunTessera("zellige plan --profile " + TestProfile() +
                        " --workload v50 --load 2000 --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("profile:test-machine (2 ranks"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("profile-priced cost model"), std::string::npos) << r.out;
  auto j = tessera::core::ReadJsonFile(json);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["cost_model"], "profile");
  EXPECT_EQ((*j)["cluster"]["ranks_per_node"], 2);
  for (const auto& e : (*j)["results"]) EXPECT_TRUE(e["feasible"].get<bool>()) << e.dump();

  r = RunTessera("zellige plan --profile " + TestProfile() +
                 " --workload v50 --load 2000 --planner zellige --save-plan " + plan +
                 " --save-batch " + batch);
  ASSERT_EQ(r.code, 0) << r.out;
  r = RunTessera("zellige simulate --profile " + TestProfile() + " --batch " + batch + " --plan " +
                 plan);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("per-step overhead of 0.010 s"), std::string::npos) << r.out;

  r = RunTessera("zellige bench-planner --profile " + TestProfile() +
                 " --load 2000 --mixes v50 --batches 1 --skip-joint");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("profile-priced cost model"), std::string::npos) << r.out;
}

TEST(CliTest, BadProfileIsOneLine) {
  auto good = tessera::core::ReadJsonFile(TestProfile());
  ASSERT_TRUE(good.ok());
  tessera::core::Json j = *good;
  j["configs"][0]["points"][1]["fwd_s"] = -1;
  std::string neg = Write("neg_profile.json", j.dump());
  ExpectUserError("zellige plan --profile " + neg + " --workload v50 --load 2000",
                  "configs[0].points[1].fwd_s: got -1, must be >= 0");
  j = *good;
  j["configs"].erase(3);
  std::string missing = Write("missing_profile.json", j.dump());
  ExpectUserError("zellige plan --profile " + missing + " --load 2000", "configs: missing (1,1,2)");
  ExpectUserError("zellige simulate --profile " + missing + " --batch x --plan y",
                  "configs: missing (1,1,2)");
  ExpectUserError("zellige bench-planner --profile " + missing + " --load 2000",
                  "configs: missing (1,1,2)");
  ExpectUserError("zellige plan --profile " + TestProfile() + " --cluster a800x8",
                  "--cluster: got 'a800x8', cannot be combined with --profile");
  ExpectUserError("zellige plan --profile " + TestProfile() + " --model wan2.1-1.3b",
                  "--model: got 'wan2.1-1.3b', cannot be combined with --profile");
  ExpectUserError("zellige plan --profile /nonexistent_profile.json",
                  "/nonexistent_profile.json: no such file");
}

TEST(CliTest, ProfilerCommandsRejectBadInputBeforeMpi) {
  auto good = tessera::core::ReadJsonFile(TestProfile());
  ASSERT_TRUE(good.ok());
  tessera::core::Json j = *good;
  j["base_bytes"] = "lots";
  std::string bad = Write("bad_base_profile.json", j.dump());
  ExpectUserError("zellige validate --profile " + bad, "base_bytes");
  ExpectUserError("zellige compare --profile " + bad, "base_bytes");
  std::string trunc = Write("trunc_profile.json", good->dump().substr(0, 200));
  ExpectUserError("zellige validate --profile " + trunc, "malformed JSON");
  // Measured for head dim 64 (4 heads of hidden 256), asked for 8 heads of 32.
  ExpectUserError("zellige validate --profile " + TestProfile() + " --heads 8",
                  "model.heads: measured for 4, asked for 8");
  ExpectUserError("zellige compare --profile " + TestProfile() + " --hidden 512 --heads 4",
                  "model.hidden: measured for 256, asked for 512");
  ExpectUserError("zellige validate --profile " + TestProfile() + " --ranks 4",
                  "ranks: measured with 2, asked for 4");
  ExpectUserError("zellige profile --out x.json --buckets 8,0,16", "--buckets: got '0'");
  ExpectUserError("zellige profile --out x.json --hidden 30 --heads 4", "heads must divide hidden");
  ExpectUserError("zellige profile --out x.json --repeats 0", "--repeats");
}

}  // namespace

namespace {

// Xema's memory-trace commands on the hand-made trace of src/xema/testdata (weights 28 MiB,
// activations peak at 36 MiB during vae.up2; lower bound 64 MiB).
std::string XemaTrace(const std::string& name) {
  return std::string(TESSERA_XEMA_TESTDATA) + "/" + name;
}

TEST(CliTest, XemaIntervals) {
  Result r = RunTessera("xema intervals --trace " + XemaTrace("tiny_t2i.json") + " --budget 40MiB");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("budget 40 MiB - weights 28 MiB - reserve 0 B = available 12 MiB"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("dit.attn@step1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 intervals, 3 of 10 ops under pressure, max excess 24 MiB"),
            std::string::npos)
      << r.out;
  std::string json = TempPath("intervals.json");
  r = RunTessera("xema intervals --trace " + XemaTrace("tiny_t2i.json") +
                 " --budget 40MiB --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = tessera::core::ReadJsonFile(json);
  ASSERT_TRUE(j.ok());
  ASSERT_EQ((*j)["intervals"].size(), 2u);
  EXPECT_EQ((*j)["intervals"][1]["excess_bytes"], 24 << 20);
  EXPECT_EQ((*j)["intervals"][1]["phases"][0], "vae");
  r = RunTessera("xema intervals --trace " + XemaTrace("tiny_t2i.json") + " --budget 1GB");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("no pressure interval"), std::string::npos) << r.out;
  ExpectUserError("xema intervals --trace " + XemaTrace("tiny_t2i.json") + " --budget 20MiB",
                  "budget: got 20 MiB (20971520 bytes), below the resident weights 28 MiB");
  ExpectUserError("xema intervals --trace " + XemaTrace("tiny_t2i.json") + " --budget 12XB",
                  "--budget: got '12XB', must be a size");
  ExpectUserError(
      "xema intervals --trace " + XemaTrace("free_before_alloc.json") + " --budget 1GiB",
      "tensors[8].free_op: got 2, before alloc_op 3 (free before alloc)");
  ExpectUserError("xema intervals --trace " + XemaTrace("negative_size.json") + " --budget 1GiB",
                  "tensors[6].bytes: got -4096, must be in [1, ");
  ExpectUserError("xema intervals --trace /nonexistent_trace.json --budget 1GiB",
                  "/nonexistent_trace.json: no such file");
}

TEST(CliTest, XemaLayout) {
  std::string out = TempPath("layout.json");
  Result r = RunTessera("xema layout --trace " + XemaTrace("tiny_t2i.json") + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* algo : {"tflite", "tflm", "xla", "milp"})
    EXPECT_NE(r.out.find(algo), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lower bound (peak live) 64 MiB"), std::string::npos) << r.out;
  auto j = tessera::core::ReadJsonFile(out);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["arena_bytes"], int64_t{64} << 20);
  EXPECT_EQ((*j)["tensors"].size(), 16u);
  // A trace where every greedy layout misses the bound the MILP reaches.
  r = RunTessera("xema layout --trace " + XemaTrace("greedy_gap.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("tflite  9.464 MiB      9923584         1.2276x"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("milp    7.709 MiB      8083968         1.0000x"), std::string::npos)
      << r.out;
  std::string cmp = TempPath("cmp.json");
  r = RunTessera("xema layout --trace " + XemaTrace("greedy_gap.json") + " --json " + cmp);
  ASSERT_EQ(r.code, 0) << r.out;
  auto c = tessera::core::ReadJsonFile(cmp);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ((*c)["layouts"].size(), 4u);
  EXPECT_EQ((*c)["layouts"][3]["algorithm"], "milp");
  EXPECT_EQ((*c)["layouts"][3]["arena_bytes"], 8083968);
  EXPECT_EQ((*c)["layouts"][3]["proven_optimal"], true);
  r = RunTessera("xema layout --trace " + XemaTrace("tiny_t2i.json") + " --algo tflm");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("milp"), std::string::npos) << r.out;
  ExpectUserError("xema layout --trace " + XemaTrace("tiny_t2i.json") + " --algo best",
                  "--algo: algo: got 'best', must be one of tflite, tflm, xla, milp");
  ExpectUserError("xema layout --trace " + XemaTrace("free_before_alloc.json"),
                  "free before alloc");
  ExpectUserError(
      "xema layout --trace " + XemaTrace("tiny_t2i.json") + " --out " + XemaTrace("tiny_t2i.json"),
      "is also the input of --trace");
  ExpectUserError("xema layout --trace " + XemaTrace("tiny_t2i.json") + " --milp-time-limit 0",
                  "--milp-time-limit: got '0'");
}

TEST(CliTest, XemaAllocsim) {
  Result r = RunTessera("xema allocsim --trace " + XemaTrace("tiny_t2i.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("peak reserved"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reserved / best layout arena"), std::string::npos) << r.out;
  r = RunTessera("xema allocsim --trace " + XemaTrace("tiny_t2i.json") +
                 " --policy pytorch:expandable_segments,max_split_size_mb=64");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("policy pytorch:expandable_segments,max_split_size_mb=64"),
            std::string::npos)
      << r.out;
  std::string json = TempPath("allocsim.json");
  r = RunTessera("xema allocsim --trace " + XemaTrace("tiny_t2i.json") + " --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = tessera::core::ReadJsonFile(json);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["stats"]["peak_reserved_bytes"], 84 << 20);
  EXPECT_EQ((*j)["best_layout_arena_bytes"], 64 << 20);
  r = RunTessera("xema allocsim --trace " + XemaTrace("tiny_t2i.json") + " --device-memory 50MiB");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("OOM at op"), std::string::npos) << r.out;
  ExpectUserError("xema allocsim --trace " + XemaTrace("tiny_t2i.json") + " --policy tcmalloc",
                  "policy: got 'tcmalloc'");
  ExpectUserError("xema allocsim --trace " + XemaTrace("tiny_t2i.json") +
                      " --policy pytorch,max_split_size_mb=5",
                  "max_split_size_mb");
  ExpectUserError("xema allocsim --trace " + XemaTrace("negative_size.json"),
                  "tensors[6].bytes: got -4096");
}

TEST(CliTest, XemaAnalyticTraces) {
  Result r = RunTessera("xema layout --analytic flux2-dev --size 1024x1024 --steps 28 --algo xla");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("flux2-dev 1024x1024x1 steps 28 cfg off sp 1 bf16 (modeled)"),
            std::string::npos)
      << r.out;
  r = RunTessera(
      "xema intervals --analytic cogvideox-5b --size 720x480 --frames 49 --steps 50 "
      "--budget 32GiB");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("vae.up"), std::string::npos) << r.out;
  r = RunTessera("xema allocsim --analytic ltx-2 --size 768x512 --frames 121 --steps 4");
  ASSERT_EQ(r.code, 0) << r.out;
  ExpectUserError("xema intervals --analytic flux2-dev --budget 80GiB",
                  "budget: got 80 GiB (85899345920 bytes), below the resident weights");
  ExpectUserError("xema layout", "--trace / --analytic: give exactly one (got neither)");
  ExpectUserError("xema layout --analytic flux2-dev --trace " + XemaTrace("tiny_t2i.json"),
                  "give exactly one (got both)");
  ExpectUserError("xema layout --analytic sdxl", "analytic: got 'sdxl', must be one of");
  ExpectUserError("xema layout --analytic flux2-dev --size 1000x1000",
                  "size: got 1000x1000, each side must be a multiple of 16");
  ExpectUserError("xema layout --analytic flux2-dev --cfg maybe", "--cfg: got 'maybe'");
  ExpectUserError("xema layout --analytic flux2-dev --steps 0", "--steps: got '0'");
}

// `xema trace` runs the tiny pipeline for real; its trace feeds the other commands.
TEST(CliTest, XemaTraceRecordsARealRun) {
  const std::string trace = TempPath("recorded.json");
  const std::string csv = TempPath("timeline.csv");
  Result r = RunTessera("xema trace --model tiny-t2i --size 32x32 --steps 2 --out " + trace +
                        " --timeline " + csv);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("trace tiny-t2i 32x32x1 steps 2 cfg on sp 1 f32 (recorded)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("in the trace: equal"), std::string::npos) << r.out;
  r = RunTessera("xema layout --trace " + trace + " --algo tflite");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("1.0000x"), std::string::npos) << r.out;
  r = RunTessera("xema intervals --trace " + trace + " --budget 40MiB");
  ASSERT_EQ(r.code, 0) << r.out;
  auto text = tessera::core::ReadJsonFile(trace);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ((*text)["provenance"], "recorded");
  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("op,name,section,step,phase,live_bytes", 0), 0u) << header;
}

TEST(CliTest, XemaTraceAnalyticWritesTheModeledTrace) {
  const std::string trace = TempPath("flux.json");
  Result r = RunTessera(
      "xema trace --analytic flux2-dev --size 512x512 --steps 2 --cfg off "
      "--out " +
      trace);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("flux2-dev 512x512x1 steps 2 cfg off sp 1 bf16 (modeled)"),
            std::string::npos)
      << r.out;
  auto j = tessera::core::ReadJsonFile(trace);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["provenance"], "modeled");
  ExpectUserError("xema trace --analytic sdxl --out " + trace, "analytic: got 'sdxl'");
}

TEST(CliTest, XemaCheckRerunsFromEveryLayout) {
  const std::string json = TempPath("check.json");
  Result r = RunTessera(
      "xema check --model tiny-t2v --size 16x16 --frames 5 --steps 1 --cfg off "
      "--json " +
      json);
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* row : {"layout:tflite", "layout:tflm", "layout:xla", "caching:pytorch"}) {
    EXPECT_NE(r.out.find(row), std::string::npos) << r.out;
  }
  EXPECT_NE(r.out.find("check passed"), std::string::npos) << r.out;
  auto j = tessera::core::ReadJsonFile(json);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["ok"], true);
  EXPECT_EQ((*j)["measured_peak_bytes"], (*j)["lower_bound_bytes"]);
}

TEST(CliTest, XemaRequestBadInputIsOneLine) {
  const std::string out = TempPath("never.json");
  ExpectUserError("xema trace --size 70x64 --out " + out, "request.width: got 70");
  ExpectUserError("xema trace --size 0x64 --out " + out, "size: got '0x64'");
  ExpectUserError("xema trace --model tiny-nope --out " + out, "tiny-nope");
  ExpectUserError("xema trace --model tiny-t2i --frames 5 --out " + out, "request.frames: got 5");
  ExpectUserError("xema trace --model tiny-t2v --frames 6 --out " + out, "request.frames: got 6");
  ExpectUserError("xema check --cfg maybe", "--cfg: got 'maybe', must be on or off");
  ExpectUserError("xema check --attention flash", "--attention: got 'flash'");
  ExpectUserError("xema check --steps 0", "--steps: got '0'");
  ExpectUserError("xema trace", "--out is required");
}

TEST(CliTest, XemaServeAndLoadgenBadInputIsOneLine) {
  ExpectUserError(
      "xema serve --policy fast --max-requests 1",
      "policy: got 'fast', must be one of none, static, offload, tiling, caching, xema");
  ExpectUserError("xema serve --budget 12XB", "--budget");
  ExpectUserError("xema serve --budget 0", "--budget");
  ExpectUserError("xema serve --budget 1000TB", "budget: got");
  ExpectUserError("xema serve --devices 0", "--devices: got '0'");
  ExpectUserError("xema serve --queue 0", "--queue: got '0'");
  const std::string mix = R"( --mix '[{"model":"tiny-t2i","size":"16x16","steps":1}]')";
  ExpectUserError("xema loadgen --url localhost:80" + mix, "url: got 'localhost:80'");
  ExpectUserError("xema loadgen --url http://127.0.0.1:1 --mix /nonexistent_mix.json",
                  "/nonexistent_mix.json");
  ExpectUserError(
      R"(xema loadgen --url http://127.0.0.1:1 --mix '[{"model":"tiny-t2i","steps":0}]')",
      "mix[0].steps: got 0");
  ExpectUserError("xema loadgen --url http://127.0.0.1:1 --mix " + Write("mix.json", "[{"),
                  "mix.json");
  ExpectUserError("xema loadgen --url http://127.0.0.1:1 --duration 1" + mix, "cannot reach");
  ExpectUserError("xema loadgen --url http://127.0.0.1:1 --arrivals uniform" + mix,
                  "arrivals: got 'uniform'");
  ExpectUserError("xema loadgen --url http://127.0.0.1:1 --rate 0" + mix, "--rate: got '0'");
  ExpectUserError("xema loadgen --mix x", "--url is required");
}

TEST(CliTest, XemaPlanWritesATableTheServerTakesAndRefusesBadInput) {
  const std::string mix = R"( --mix '[{"model":"tiny-t2i","size":"16x16","steps":1,"weight":2},)"
                          R"({"model":"tiny-t2i","size":"32x32","steps":1}]')";
  const std::string plan = TempPath("serving_plan.json");
  Result r = RunTessera(
      "xema plan --budget 64MiB --max-concurrency 2 --timing-runs 1 "
      "--duration 2 --rate 4 --out " +
      plan + mix);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("tiny-t2i 16x16x1 steps 1 cfg on"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("configurations simulated"), std::string::npos) << r.out;
  auto j = tessera::core::ReadJsonFile(plan);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["format"], "tessera.xema.plan_table/1");
  EXPECT_EQ((*j)["entries"].size(), 2u);
  // Bad input: one line, exit 1, naming the field and value.
  ExpectUserError(
      R"(xema plan --budget 64MiB --out x.json --mix '[{"model":"sdxl","size":"16x16"}]')",
      "mix[0].model");
  ExpectUserError("xema plan --budget 64MiB --rate 0 --out x.json" + mix, "--rate: got '0'");
  ExpectUserError("xema plan --budget 30MiB --out x.json" + mix,
                  "budget: got 31457280 bytes, the mix's models' weights alone take");
  ExpectUserError("xema plan --budget 37MiB --timing-runs 1 --max-concurrency 1 --out x.json " +
                      std::string(R"(--mix '[{"model":"tiny-t2i","size":"128x128","steps":1}]')"),
                  "no template of the mix fits");
  // A table from another device or model, or for a larger budget, is refused by serve. The
  // other device's: a modeled paper-scale table (SP over 2 GPUs, no profiling runs).
  const std::string modeled = TempPath("modeled_plan.json");
  r = RunTessera("xema plan --device h100-80g --devices 2 --rate 0.1 --out " + modeled +
                 R"( --mix '[{"model":"flux2-dev","size":"512x512","steps":4}]')");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("text encoders kept in host memory: [\"flux2-dev\"]"), std::string::npos)
      << r.out;
  ExpectUserError("xema serve --port 0 --budget 64MiB --plan " + modeled, "device: got 'h100-80g'");
  ExpectUserError("xema plan --device h100-80g --budget 81GB --out x.json" + mix,
                  "budget: got 75.437 GiB, the h100-80g has 74.506 GiB");
  ExpectUserError("xema plan --device h100-80g --out x.json" + mix,
                  "mix[0].model: got 'tiny-t2i', must be one of flux2-dev");
  ExpectUserError("xema plan --device a100-40g --out x.json" + mix, "device: got 'a100-40g'");
  (*j)["models"]["tiny-t2i"]["weight_bytes"] = 1000;
  ExpectUserError(
      "xema serve --port 0 --budget 64MiB --plan " + Write("other_model.json", j->dump()),
      "weight_bytes: got 1000");
  ExpectUserError("xema serve --port 0 --budget 48MiB --plan " + plan,
                  "budget_bytes: got 67108864");
}

// serve on a free port, stopping itself after the loadgen's requests (warm-up, solo, arrivals).
TEST(CliTest, XemaLoadgenAgainstServe) {
  auto arrivals = tessera::serve::ArrivalTimes(tessera::serve::ArrivalKind::kPoisson, 3, 1, 1, 5);
  ASSERT_TRUE(arrivals.ok());
  const size_t replies = arrivals->size() + tessera::xema::kSoloRuns;
  const std::string cmd = std::string(TESSERA_BIN) +
                          " xema serve --port 0 --budget 1GiB --duration-s 60 --max-requests " +
                          std::to_string(replies) + " 2>&1";
  FILE* server = popen(cmd.c_str(), "r");
  ASSERT_NE(server, nullptr);
  char line[512] = {0};
  ASSERT_NE(fgets(line, sizeof(line), server), nullptr);
  const std::string first = line;
  const size_t at = first.find("http://");
  ASSERT_NE(at, std::string::npos) << first;
  const std::string url = first.substr(at, first.find(' ', at) - at);
  const std::string json = TempPath("loadgen.json");
  Result r = RunTessera("xema loadgen --url " + url +
                        " --rate 3 --duration 1 --seed 5 --slo-scale 1000 --json " + json +
                        R"( --mix '[{"model":"tiny-t2i","size":"16x16","steps":1,"guidance":1}]')");
  std::string rest;
  while (fgets(line, sizeof(line), server) != nullptr) rest += line;
  const int st = pclose(server);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("SLO attainment 100.0%"), std::string::npos) << r.out;
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << rest;
  EXPECT_NE(rest.find("stopped after " + std::to_string(replies) + " replies"), std::string::npos)
      << rest;
  auto j = tessera::core::ReadJsonFile(json);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["completed"], arrivals->size());
}

std::string CliTestdata(const std::string& name) {
  return std::string(TESSERA_CLI_TESTDATA) + "/" + name;
}

TEST(CliTest, CompassTopoPresetShowsNvlinkPairsInRingOrder) {
  const std::string json = TempPath("topo.json");
  Result r = RunTessera("compass topo --topology a6000x8 --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("topology a6000x8: 8 x RTX-A6000-48GB, modeled from datasheets"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("gpu0  gpu1  nvlink"), std::string::npos) << r.out;
  const std::string ring = "best single ring over devices 0..7: ";
  const size_t at = r.out.find(ring);
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string order = r.out.substr(at + ring.size(), r.out.find('\n', at) - at - ring.size());
  for (const char* pair : {"gpu0 gpu1", "gpu2 gpu3", "gpu4 gpu5", "gpu6 gpu7"}) {
    EXPECT_NE(order.find(pair), std::string::npos) << order;
  }
  EXPECT_NE(r.out.find("bottleneck 24.00 GB/s per direction"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ring2"), std::string::npos) << r.out;
  auto j = tessera::core::ReadJsonFile(json);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ((*j)["label"], "modeled");
  EXPECT_EQ((*j)["topology"]["name"], "a6000x8");
  EXPECT_EQ((*j)["single_ring"]["order"], (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ((*j)["allgather"]["algos"].size(), 3u);
  EXPECT_EQ((*j)["allgather"]["algos"][0]["lockstep_step_s"].size(), 7u);
  EXPECT_LE((*j)["allgather"]["algos"][0]["total_s"].get<double>(),
            (*j)["allgather"]["algos"][0]["lockstep_total_s"].get<double>());

  r = RunTessera("compass topo --topology " + CliTestdata("topo_two_gpus.json") + " --tp 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("best single ring over devices 0..1: gpu0 gpu1"), std::string::npos)
      << r.out;
}

TEST(CliTest, CompassTopoBadInputIsOneLine) {
  ExpectUserError("compass topo --topology a6000x8 --tp 9",
                  "--tp: got 9, must be in [2, 8] for a6000x8");
  ExpectUserError("compass topo --topology rtx4090x4 --tp 1", "--tp: got '1'");
  ExpectUserError("compass topo --topology b200x8",
                  "topology: got 'b200x8', must be one of a6000x8, h100x8, rtx4090x4 or a JSON "
                  "file");
  ExpectUserError("compass topo --topology " + CliTestdata("topo_unknown_device.json"),
                  "topo_unknown_device.json: links[2].dst: got 'gpu9', not a vertex (vertices: "
                  "gpu0, gpu1, cpu0)");
  ExpectUserError("compass topo --topology " + CliTestdata("malformed.json"), "malformed.json");
  const std::string in = CliTestdata("topo_two_gpus.json");
  ExpectUserError("compass topo --topology " + in + " --json " + in, "--json");
}

#ifdef TESSERA_HAVE_RUNTIME
// `compass links` checks its topology and rank count before starting MPI: one line, exit 1.
TEST(CliTest, CompassLinksBadInputIsOneLineBeforeMpi) {
  ExpectUserError("compass links --ranks 9 --topology a6000x8",
                  "--ranks: got 9, must be in [2, 8] for a6000x8");
  ExpectUserError("compass links --ranks 4 --topology b200x8", "topology: got 'b200x8'");
  ExpectUserError("compass links --ranks 2 --topology " + CliTestdata("topo_unknown_device.json"),
                  "links[2].dst: got 'gpu9', not a vertex");
  ExpectUserError("compass links --ranks 2 --time-scale 0", "--time-scale");
  ExpectUserError("compass links --ranks 2 --sizes-kib 0", "--sizes-kib");
}
#endif

}  // namespace
