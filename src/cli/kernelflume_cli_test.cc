// `tessera kernelflume generate` and `attn-node` end to end: text through attention nodes checked
// against the monolithic model (in-process fake nodes and ucx node processes), and every bad
// input the issue lists refused with exit 1 and one line naming the field.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "cli/cli_test_util.h"
#include "core/json_util.h"
#include "models/llama.h"
#include "models/llama_config.h"
#include "models/llama_test_util.h"
#include "models/safetensors.h"

namespace tessera::cli {
namespace {

using testing::ExpectUserError;
using testing::Result;
using testing::RunTessera;
using testing::TempPath;
using testing::Write;

// A small seeded model saved as a Hugging Face style directory.
std::string SaveSmallModel(const std::string& name) {
  models::LlamaConfig c = models::testing::SmallLlamaConfig(2);
  c.max_context = 256;
  auto model = models::LlamaModel::FromSeed(c, 5, 0.1f);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  const std::string dir = TempPath(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  EXPECT_TRUE(model->Save(dir, models::TensorDtype::kF32).ok());
  return dir;
}

TEST(KernelFlumeCli, GeneratesThroughFakeNodesAndMatchesTheMonolithicModel) {
  const std::string json = TempPath("gen.json");
  Result r = RunTessera(
      "kernelflume generate --model tiny-gqa --prompt Hello --max-tokens 12 --attn-nodes 3 "
      "--reroute-every 4 --transport fake --check --ignore-eos --json " +
      json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("Hello", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("3 (fake, in process)"), std::string::npos) << r.out;
  const size_t equal = r.out.find("check: greedy tokens equal");
  ASSERT_NE(equal, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 of 1 prompts", equal), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 / 12"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(json));
}

TEST(KernelFlumeCli, GeneratesThroughUcxNodeProcesses) {
  const std::string prompts = Write("prompts.txt", "The cat\n\nA dog\n");
  Result r = RunTessera("kernelflume generate --model " + SaveSmallModel("model") + " --prompts " +
                        prompts +
                        " --max-tokens 20 --attn-nodes 3 --reroute-every 7 --check --ignore-eos");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("3 (ucx, separate processes)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 of 2 prompts"), std::string::npos) << r.out;
}

// Runs `generate` in the background, SIGKILLs the node process `--id N` one second after it
// started, and returns the output with "exit=CODE" appended.
std::string GenerateAndKill(const std::string& args, int node) {
  const std::string id = "'--id " + std::to_string(node) + "'";
  const std::string script =
      std::string(TESSERA_BIN) + " kernelflume generate " + args + " 2>&1 & p=$!; " +
      "for i in $(seq 1 600); do pgrep -P $p -f -- " + id +
      " >/dev/null && break; sleep 0.1; done; sleep 1; pkill -9 -P $p -f -- " + id +
      "; wait $p; echo \"exit=$?\"";
  FILE* pipe = popen(script.c_str(), "r");  // popen runs it with sh -c
  EXPECT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; pipe != nullptr && (n = fread(buf, 1, sizeof(buf), pipe)) > 0;) out.append(buf, n);
  if (pipe != nullptr) pclose(pipe);
  return out;
}

// A node process SIGKILLed mid-run (tails re-routed every 16 tokens, so it holds ranges the
// steps read): its ranges are re-prefilled on the survivor and the run still passes --check.
// When the only node is killed, generate fails with one line naming it, not a hang.
TEST(KernelFlumeCli, AKilledNodeProcessIsRecoveredFromAndTheLastOneFailsNamingIt) {
  std::string out = GenerateAndKill(
      "--model tiny-gqa --prompt hi --max-tokens 700 --ignore-eos --attn-nodes 2 "
      "--reroute-every 16 --quiet --check",
      1);
  EXPECT_NE(out.find("exit=0"), std::string::npos) << out;
  EXPECT_NE(out.find("1 of 1 prompts"), std::string::npos) << out;
  const size_t lost = out.find("nodes lost / ranges re-prefilled");
  ASSERT_NE(lost, std::string::npos) << out;
  EXPECT_NE(out.find(" 1 / ", lost), std::string::npos) << out;  // the kill hit a live run
  out = GenerateAndKill(
      "--model tiny-gqa --prompt hi --max-tokens 4000 --ignore-eos --attn-nodes 1 --quiet", 0);
  EXPECT_NE(out.find("exit=1"), std::string::npos) << out;
  EXPECT_NE(out.find("attention node 0"), std::string::npos) << out;
  EXPECT_EQ(testing::Lines(out), 2) << out;  // the error line and exit=
}

// The elasticity benchmarks at a tiny size: node processes join and die under a live decode,
// each run checked against the monolithic model; every figure is reported (values not judged).
TEST(KernelFlumeCli, BenchJoinAndDeathRunAndReportEachFigure) {
  const std::string json = TempPath("join.json");
  Result r = RunTessera(
      "kernelflume bench join --requests 2 --prompt-tokens 40 --max-tokens 40 --events 2 "
      "--every-tokens 20 --json " +
      json);
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* f : {"start -> joined (ms)", "joined -> first token (ms)",
                        "full model instance start p50", "decode step p50"}) {
    EXPECT_NE(r.out.find(f), std::string::npos) << f << "\n" << r.out;
  }
  EXPECT_TRUE(std::filesystem::exists(json));
  r = RunTessera(
      "kernelflume bench death --requests 3 --prompt-tokens 40 --max-tokens 40 --nodes 3 "
      "--events 2 --every-tokens 30 --reroute-every 8");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* f : {"SIGKILL -> next token p50 / max", "token gap spanning a kill",
                        "ranges re-prefilled", "requests with a greedy mismatch"}) {
    EXPECT_NE(r.out.find(f), std::string::npos) << f << "\n" << r.out;
  }
  ExpectUserError("kernelflume bench death --events 30 --every-tokens 100", "--events");
}

// `bench pipeline` at a tiny size over a ucx node process: every figure is reported (on stdout
// and in the JSON); the times themselves are never checked.
TEST(KernelFlumeCli, BenchPipelineReportsEveryFigure) {
  const std::string json = TempPath("pipeline.json");
  Result r = RunTessera(
      "kernelflume bench pipeline --batch 3 --context 40 --steps 2 --warmup 0 --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* figure :
       {"t_w: weight side alone (ms)", "t_w as two halves (ms)", "t_a: attention side alone (ms)",
        "bound (t_w + t_a) / max(t_w, t_a)", "one micro-batch step (ms)",
        "two micro-batches step (ms)", "speedup", "3 (2 + 1 requests)", "attention-node process",
        "validation: two vs one micro-batch logits"}) {
    EXPECT_NE(r.out.find(figure), std::string::npos) << figure << " not in:\n" << r.out;
  }
  auto j = core::ReadJsonFile(json);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  for (const char* key : {"t_w_ms", "t_w_split_ms", "t_a_ms", "bound", "one_mb_step_ms",
                          "two_mb_step_ms", "speedup", "validation_max_rel_err"}) {
    EXPECT_TRUE(j->contains(key)) << key;
  }
  EXPECT_LE((*j)["validation_max_rel_err"].get<double>(), 1e-5);
  EXPECT_EQ((*j)["samples_ms"]["one_mb"].size(), 2u);
}

TEST(KernelFlumeCli, BenchPipelineRefusesBadNumbers) {
  const std::string base = "kernelflume bench pipeline --transport fake --steps 1 ";
  ExpectUserError(base + "--batch 1", "--batch");
  ExpectUserError(base + "--context 0", "--context");
  // Past tiny-gqa's 65,536-token context once the bench's decode positions are added.
  ExpectUserError(base + "--context 65530", "--context");
  ExpectUserError(base + "--steps 0", "--steps");
  ExpectUserError("kernelflume bench", "subcommand");
}

TEST(KernelFlumeCli, BadNumbersNameTheFlag) {
  const std::string base = "kernelflume generate --model tiny-gqa --prompt hi --transport fake ";
  ExpectUserError(base + "--max-tokens 0", "--max-tokens");
  ExpectUserError(base + "--max-tokens -3", "--max-tokens");
  ExpectUserError(base + "--capacity-tokens 0", "--capacity-tokens");
  // More pages than a node's pool can hold (2^34 tokens in pages of 256).
  ExpectUserError(base + "--capacity-tokens 17179869184", "--capacity-tokens");
  ExpectUserError(base + "--attn-nodes 0", "--attn-nodes");
  ExpectUserError(base + "--transport carrier", "--transport");
  ExpectUserError("kernelflume attn-node --connect 127.0.0.1:1 --capacity-tokens 0",
                  "--capacity-tokens");
  ExpectUserError("kernelflume attn-node --connect 127.0.0.1:1 --capacity-tokens 17179869184",
                  "--capacity-tokens");
}

TEST(KernelFlumeCli, PromptsThatDoNotFitAreRefused) {
  const std::string model = SaveSmallModel("model");
  // 250 prompt bytes + BOS + 10 new tokens > the 256-token context.
  ExpectUserError("kernelflume generate --model " + model + " --transport fake --max-tokens 10 " +
                      "--prompt " + std::string(250, 'a'),
                  "context");
  ExpectUserError("kernelflume generate --model tiny-gqa --transport fake --prompt-ids " +
                      Write("ids.txt", "1 2 9999"),
                  "9999");
  ExpectUserError("kernelflume generate --model tiny-gqa --transport fake --prompts " +
                      Write("empty.txt", "\n\n"),
                  "no non-empty line");
  ExpectUserError("kernelflume generate --model tiny-gqa --transport fake", "--prompt");
}

TEST(KernelFlumeCli, BrokenModelDirectoriesNameTheTensor) {
  const std::string dir = SaveSmallModel("model");
  auto tensors = models::ReadSafetensors(dir + "/model.safetensors");
  ASSERT_TRUE(tensors.ok()) << tensors.status().ToString();
  const std::string victim = "model.layers.1.mlp.up_proj.weight";
  ASSERT_EQ(tensors->count(victim), 1u);

  models::TensorMap missing = *tensors;
  missing.erase(victim);
  ASSERT_TRUE(
      models::WriteSafetensors(dir + "/model.safetensors", missing, models::TensorDtype::kF32)
          .ok());
  ExpectUserError("kernelflume generate --model " + dir + " --prompt hi --transport fake", victim);

  models::TensorMap reshaped = *tensors;
  reshaped[victim].shape = {reshaped[victim].shape[1], reshaped[victim].shape[0]};
  ASSERT_TRUE(
      models::WriteSafetensors(dir + "/model.safetensors", reshaped, models::TensorDtype::kF32)
          .ok());
  ExpectUserError("kernelflume generate --model " + dir + " --prompt hi --transport fake", victim);

  std::filesystem::remove(dir + "/config.json");
  ExpectUserError("kernelflume generate --model " + dir + " --prompt hi --transport fake",
                  "config.json");
  ExpectUserError("kernelflume generate --model llama-3.1-8b --prompt hi --transport fake",
                  "llama-3.1-8b");
}

TEST(KernelFlumeCli, AnAttentionNodeWithNoWeightNodeFailsWithOneLine) {
  ExpectUserError("kernelflume attn-node --connect 127.0.0.1:1 --join-timeout 2", "127.0.0.1:1");
  ExpectUserError("kernelflume attn-node --connect nowhere --join-timeout 2", "nowhere");
  // An invalid TESSERA_LOG is reported with the first line the log writes; the transport's
  // disabled debug statements write none, so the failure is still one line.
  setenv("TESSERA_LOG", "-1", 1);
  ExpectUserError("kernelflume attn-node --connect 127.0.0.1:1 --join-timeout 1", "127.0.0.1:1");
  unsetenv("TESSERA_LOG");
}

}  // namespace
}  // namespace tessera::cli
