// `tessera elaswave run` end to end on real processes: a fault-free reference, then runs with
// kill -9, SIGSTOP, a killed coordinator and a death during a recovery that must stay bitwise
// equal to it; every holder of a layer killed ends the job with exit 1 and spilled state; the
// torchft policy changes the batch and reports how far its loss moved; and every bad input of the
// issue is refused with exit 1 and one line, before any process starts.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli/cli_test_util.h"

namespace tessera::cli {
namespace {

using testing::ExpectUserError;
using testing::Result;
using testing::RunTessera;
using testing::TempPath;
using testing::Write;

// gpt-tiny at 16 tokens: fast enough for 8 processes on 2 cores.
const std::string kJob =
    " --model gpt-tiny --seq 16 --global-batch 8 --micro-batch 1 --steps 5 --quiet "
    "--job-timeout 300";

// A fault-free run's per-step digests (one per test binary run of each shape).
std::string Reference(const std::string& shape) {
  const std::string ref = TempPath("ref.json");
  Result r = RunTessera("elaswave run" + kJob + shape + " --save-ref " + ref + " --run-dir " +
                        TempPath("ref-run"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("finished"), std::string::npos) << r.out;
  return ref;
}

TEST(ElasWaveCli, KillAndStopRecoverBitwiseEqualToTheFaultFreeRun) {
  const std::string shape = " --dp 2 --pp 2 --tp 2";
  const std::string ref = Reference(shape);
  const std::string faults = Write("faults.json", R"([
    {"at": {"step": 1, "phase": "backward", "micro_batch": 5}, "action": "kill", "target": {"rank": 5}},
    {"at": {"step": 3, "phase": "commit"}, "action": "stop", "target": {"rank": 1}}])");
  const std::string json = TempPath("run.json");
  const std::string trace = TempPath("trace.json");
  Result r = RunTessera("elaswave run" + kJob + shape + " --faults " + faults + " --check " + ref +
                        " --json " + json + " --trace " + trace + " --run-dir " + TempPath("run"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("bitwise equal to " + ref + ": yes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("every holder of every slot agrees at every step: yes"), std::string::npos);
  const std::string out = testing::ReadWhole(json);
  EXPECT_NE(out.find("\"bitwise_equal_to_reference\": true"), std::string::npos) << out;
  // Two recoveries: the kill (epoch 1) and the stop, found by the heartbeat (epoch 2).
  EXPECT_NE(out.find("\"epoch\": 2"), std::string::npos) << out;
  const std::string spans = testing::ReadWhole(trace);
  EXPECT_NE(spans.find("recovery (epoch 2)"), std::string::npos);
  EXPECT_NE(spans.find("\"step 4\""), std::string::npos);
}

TEST(ElasWaveCli, KilledCoordinatorAndADeathDuringRecoveryStayBitwiseEqual) {
  const std::string shape = " --dp 2 --pp 2 --tp 1";
  const std::string ref = Reference(shape);
  // Rank 3 (replica 1, stage 1) dies; during that recovery rank 0 (replica 0, stage 0) dies
  // too: each replica keeps one stage and takes the other's slots from the other replica.
  const std::string faults = Write("faults.json", R"([
    {"at": {"step": 1, "phase": "forward"}, "action": "kill", "target": {"role": "coordinator"}},
    {"at": {"step": 3, "phase": "backward", "micro_batch": 5}, "action": "kill", "target": {"rank": 3}},
    {"at": {"step": 3, "phase": "recover"}, "action": "kill", "target": {"rank": 0}}])");
  Result r = RunTessera("elaswave run" + kJob + shape + " --faults " + faults + " --check " + ref +
                        " --run-dir " + TempPath("run"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("bitwise equal to " + ref + ": yes"), std::string::npos) << r.out;
}

TEST(ElasWaveCli, KillingEveryHolderOfALayerEndsTheJobWithItsStateSpilled) {
  const std::string run_dir = TempPath("run");
  std::filesystem::remove_all(run_dir);
  const std::string faults = Write("faults.json", R"([
    {"at": {"step": 2, "phase": "forward"}, "action": "kill", "target": {"rank": 0}},
    {"at": {"step": 2, "phase": "recover"}, "action": "kill", "target": {"rank": 2}}])");
  Result r = RunTessera("elaswave run" + kJob + " --dp 2 --pp 2 --tp 1 --faults " + faults +
                        " --run-dir " + run_dir);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(
      r.out.find("unrecoverable: embedding (tp rank 0) was held by ranks 0, 2 only, all dead"),
      std::string::npos)
      << r.out;
  // The survivors spilled their last complete step.
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/spill-1.json")) << r.out;
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/spill-1.bin"));
  EXPECT_NE(testing::ReadWhole(run_dir + "/spill-1.json").find("\"step\": 1"), std::string::npos);
}

TEST(ElasWaveCli, TorchFtPolicyShrinksTheBatchAndReportsTheDeviation) {
  const std::string shape = " --dp 2 --pp 2 --tp 1";
  const std::string ref = Reference(shape);
  const std::string faults = Write("faults.json", R"([
    {"at": {"step": 1, "phase": "backward", "micro_batch": 5}, "action": "kill", "target": {"rank": 3}}])");
  Result r = RunTessera("elaswave run" + kJob + shape + " --policy torchft --faults " + faults +
                        " --check " + ref + " --run-dir " + TempPath("run"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("bitwise equal to " + ref + ": NO"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("loss deviation from it: mean "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("loss deviation from it: mean 0,"), std::string::npos) << r.out;
}

TEST(ElasWaveCli, RestartPolicyStartsEveryProcessAgainFromTheLastCheckpoint) {
  const std::string shape = " --dp 2 --pp 2 --tp 1";
  const std::string ref = Reference(shape);
  const std::string run_dir = TempPath("run");
  const std::string faults = Write("faults.json", R"([
    {"at": {"step": 3, "phase": "backward", "micro_batch": 5}, "action": "kill", "target": {"rank": 3}}])");
  Result r = RunTessera("elaswave run" + kJob + shape + " --policy restart --faults " + faults +
                        " --check " + ref + " --run-dir " + run_dir);
  ASSERT_EQ(r.code, 0) << r.out;
  // The same batch from the checkpoint of step 2: the run that never failed, bit for bit.
  EXPECT_NE(r.out.find("bitwise equal to " + ref + ": yes"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/ckpt/step-2/slot-0-tp-0.bin")) << r.out;
  // Every process started twice: each worker's log has two starts.
  const std::string log = testing::ReadWhole(run_dir + "/worker-0.jsonl");
  const size_t first = log.find("\"event\":\"started\"");
  ASSERT_NE(first, std::string::npos);
  EXPECT_NE(log.find("\"event\":\"started\"", first + 1), std::string::npos) << log;
}

TEST(ElasWaveCli, BadInputIsRefusedBeforeAnyProcessStarts) {
  ExpectUserError("elaswave run --dp 2 --pp 2 --tp 2 --processes 6",
                  "--processes: got 6, but dp x pp x tp = 2 x 2 x 2 = 8");
  ExpectUserError("elaswave run --pp 9", "--pp: got 9, but the model has 8 layers");
  ExpectUserError("elaswave run --global-batch 31",
                  "--global-batch: got 31, not divisible by micro-batch 2");
  ExpectUserError("elaswave run --dp 3 --global-batch 32", "not divisible by dp 3");
  ExpectUserError("elaswave run --tp 3", "--tp 3");
  ExpectUserError("elaswave run --policy reboot", "--policy");
  const std::string bad_rank = Write(
      "rank.json",
      R"([{"at": {"step": 1, "phase": "forward"}, "action": "kill", "target": {"rank": 8}}])");
  ExpectUserError("elaswave run --faults " + bad_rank, "target.rank: got 8, must be in [0, 7]");
  const std::string past = Write(
      "past.json",
      R"([{"at": {"step": 20, "phase": "forward"}, "action": "kill", "target": {"rank": 1}}])");
  ExpectUserError("elaswave run --steps 20 --faults " + past, "step: got 20, must be in [0, 19]");
  const std::string broken = Write("broken.json", R"([{"at": )");
  ExpectUserError("elaswave run --faults " + broken, "broken.json");
  const std::string phase =
      Write("phase.json",
            R"([{"at": {"step": 1, "phase": "fwd"}, "action": "kill", "target": {"rank": 1}}])");
  ExpectUserError("elaswave run --faults " + phase, "phase: got 'fwd', must be one of forward");
  const std::string join =
      Write("join.json",
            R"([{"at": {"step": 1, "phase": "forward"}, "action": "kill", "target": {"rank": 1}},
      {"at": {"step": 3, "phase": "forward"}, "action": "join", "target": {"rank": 1}}])");
  ExpectUserError("elaswave run --faults " + join, "join is not supported yet");
}

}  // namespace
}  // namespace tessera::cli
