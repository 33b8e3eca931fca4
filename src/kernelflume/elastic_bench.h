// KernelFlume's elasticity benchmarks as library services (`tessera kernelflume bench join` and
// `bench death` render them): both run RunElasticDecode on attention-node PROCESSES over UCX,
// with every request checked against the monolithic model, and derive their figures from the
// run's clocks (WeightNode::Now).
//
// Join: `events` nodes join one after another (every `every_tokens` generated tokens) while the
// requests decode. Per join:
//   start -> joined        the process is spawned until the weight node admits it (exec, UCX
//                          start, connect, join message);
//   joined -> first token  until the first step whose tail is on the new node is prepared
//                          (tails spread onto it at their next token boundary);
// beside the decode step time (median gap between consecutive tokens of one request over the
// run), and the time to start a full model instance of the same model the same way: a process
// that loads the weights from a safetensors directory and exits (instance_command + the
// directory), median of `instance_starts` spawns.
// Death: `events` times, a node holding ranges is SIGKILLed and a fresh node joins right after
// (so the pool keeps its size). Per kill, for the requests with a range on the killed node
// (affected), the stall = time from the SIGKILL to each one's next token; for the others, the
// token gap that spans the kill (a request still stalled by an earlier kill, or stalled by a
// later one before its next token, is counted as overlapped instead: UnaffectedSpanningGaps).
// That gap is length-biased (kernelflume/spanning_gap.h), so its
// control is the same statistic in a control run: the same options, workload and prompts, no
// kill and no join, at `placebo_instants` placebo instants drawn the way kills fire (just after
// the k-th generated token); the noise band is the spread of the median of n placebo gaps (n =
// the unaffected samples). The run's re-prefills run `refill_nice` nice levels below the
// request threads (WeightNodeOptions::refill_nice; 0, the default: on the request's thread).
// Errors: bad options are InvalidArgument naming the flag; a failed run is returned as it is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "kernelflume/elastic_decode.h"
#include "kernelflume/spanning_gap.h"
#include "models/llama.h"

namespace tessera::kernelflume {

struct ElasticBenchOptions {
  int requests = 4;
  int64_t prompt_tokens = 256;
  int64_t max_tokens = 200;
  int initial_nodes = 2;
  int events = 5;              // joins, or kills
  int64_t every_tokens = 40;   // generated tokens (all requests) between events
  int64_t reroute_every = 64;  // spreads each request over several nodes
  int64_t capacity_tokens = 65536;
  int32_t page_tokens = 64;
  uint64_t seed = 1;
  double min_partial_deadline_s = 1.0;        // WeightNodeOptions::min_partial_deadline_s
  int refill_nice = 0;                        // WeightNodeOptions::refill_nice
  int placebo_instants = 200;                 // death: 0 = no control run
  double join_delay_s = 0;                    // death: the replacement joins this long after
  std::vector<std::string> node_command;      // argv prefix of `attn-node`
  std::vector<std::string> instance_command;  // argv prefix; the weights directory is appended
  std::string weights_dir;                    // where the instance loads from (join only)
  int instance_starts = 5;
};

// Every request of a benchmark's run checked against the monolithic model.
struct BenchCheck {
  double max_rel_err = 0;
  int64_t mismatched_requests = 0;
  int64_t generated_tokens = 0;
  core::Status verdict = core::Status::Ok();  // ElasticVerdict of the run
};

struct JoinSample {
  int node = -1;
  double start_to_joined_ms = 0;
  double joined_to_first_token_ms = 0;
  double start_to_first_token_ms = 0;
};

struct JoinBenchReport {
  std::vector<JoinSample> joins;
  double decode_step_ms_p50 = 0;  // per request, gap between consecutive tokens
  double decode_step_ms_p99 = 0;
  std::vector<double> instance_start_ms;
  double instance_start_ms_p50 = 0;
  BenchCheck check;
};

struct DeathSample {
  int node = -1;
  int affected = 0, unaffected = 0;
  int overlapped = 0;                   // left alone by this kill, stalled by another
  double detect_ms = -1;                // SIGKILL -> the weight node marks it lost (-1: never)
  std::vector<double> stall_ms;         // affected: SIGKILL -> next token
  std::vector<double> spanning_gap_ms;  // unaffected: the token gap around the kill
};

struct DeathBenchReport {
  std::vector<DeathSample> kills;
  double stall_ms_p50 = 0, stall_ms_max = 0;    // over every affected request of every kill
  double detect_ms_p50 = 0, detect_ms_max = 0;  // SIGKILL -> marked lost
  double unaffected_gap_ms_p50 = 0;             // gaps spanning a kill
  double token_gap_ms_p50 = 0;  // every request's token gaps over the run, for comparison
  int64_t refills = 0;
  BenchCheck check;
  // The control run (placebo_instants > 0): every request's gap spanning each placebo instant.
  std::vector<double> placebo_gap_ms;
  int placebo_instants = 0;
  double placebo_gap_ms_p50 = 0;
  double control_token_gap_ms_p50 = 0;   // every token gap of the control run
  MedianBand placebo_band_ms;            // medians of n placebo gaps, n = unaffected samples
  double unaffected_excess_ms = 0;       // unaffected_gap_ms_p50 - placebo_gap_ms_p50
  bool unaffected_within_noise = false;  // unaffected_gap_ms_p50 <= placebo_band_ms.p95
  BenchCheck control_check;
};

core::StatusOr<JoinBenchReport> RunJoinBench(const models::LlamaModel& model,
                                             const ElasticBenchOptions& options);
core::StatusOr<DeathBenchReport> RunDeathBench(const models::LlamaModel& model,
                                               const ElasticBenchOptions& options);

// Seeded prompts of `tokens` tokens each over the model's vocabulary (benchmarks' workload).
std::vector<std::vector<int32_t>> BenchPrompts(const models::LlamaConfig& config, int count,
                                               int64_t tokens, uint64_t seed);

}  // namespace tessera::kernelflume
