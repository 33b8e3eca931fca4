// RunElasticDecode: several requests decoding at once on an AttentionCluster while the attention
// pool changes under them -- nodes join, ranges migrate, a node drains, a node dies -- each
// request checked against the same model run in one process. The workload behind KernelFlume's
// exactness-under-change test and its join and death benchmarks.
//
// Each request runs on its own thread: its prompt is prefilled (chunks of <= 512 tokens), then
// it decodes max_tokens greedily, one token per step, every forward through
// ForwardWithRecovery (a lost node's ranges are re-prefilled and the step retried). With
// `check`, a models::LocalKvCache copy of the request is fed the same tokens (teacher forcing):
// the logits of every step are compared (norm-wise relative error) and the monolithic argmax
// is compared with the token taken. The time of every generated token is recorded on the
// weight node's clock (WeightNode::Now), so a benchmark can measure the stall around a change.
//
// Actions fire from a controller thread when the requests together have generated
// `after_tokens` tokens (in the listed order):
//   join      cluster.AddNode(): a new node joins and takes its share of the open tails;
//   migrate   `count` sealed ranges (the longest first) move from node `node` (-1: the node
//             holding the most) to the active node with the fewest tokens;
//   drain     WeightNode::DrainNode(node);
//   kill      cluster.KillNode(node) (SIGKILL for processes).
// Errors: bad options are InvalidArgument naming the field; a request that cannot recover, or
// an action that fails, ends the run with its error naming the request or action.
// Thread-safety: one call at a time per cluster.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "kernelflume/attention_cluster.h"
#include "kernelflume/weight_node.h"
#include "models/llama.h"

namespace tessera::kernelflume {

struct ElasticAction {
  enum class Kind { kJoin, kMigrate, kDrain, kKill };
  Kind kind = Kind::kJoin;
  int64_t after_tokens = 0;
  int node = -1;
  int count = 1;       // migrate: ranges to move
  double delay_s = 0;  // wait this long after after_tokens is reached (a diagnostic)
};
const char* ElasticActionName(ElasticAction::Kind kind);
// "join@20", "migrate:1x3@40" (node 1, three ranges; "migrate:x3@40": the fullest node),
// "drain:1@60", "kill:0@90"; InvalidArgument naming the text and the forms.
core::StatusOr<ElasticAction> ParseElasticAction(const std::string& text);

struct ElasticDecodeOptions {
  int64_t max_tokens = 32;
  bool check = true;
  std::vector<ElasticAction> actions;
};

struct ElasticRequestResult {
  std::vector<int32_t> prompt;
  std::vector<int32_t> tokens;        // generated
  std::vector<double> token_times_s;  // on the weight node's clock, one per generated token
  double max_rel_err = 0;
  int64_t first_mismatch = -1;
  int64_t recoveries = 0;
};

struct AppliedAction {
  ElasticAction action;
  double start_s = 0, end_s = 0;  // weight node clock
  int node = -1;                  // the node joined / drained / killed / migrated from
  int64_t ranges_moved = 0;
  std::vector<uint64_t> affected_requests;  // kill: requests with a range on the node
  NodeTimes node_times;                     // join: when it joined and first got a token
};

struct ElasticDecodeReport {
  std::vector<ElasticRequestResult> requests;
  std::vector<AppliedAction> actions;
  std::vector<ElasticEvent> events;
  double max_rel_err = 0;
  int64_t mismatched_requests = 0;
  int64_t generated_tokens = 0;
  double wall_s = 0;
};

core::StatusOr<ElasticDecodeReport> RunElasticDecode(
    const models::LlamaModel& model, AttentionCluster& cluster,
    const std::vector<std::vector<int32_t>>& prompts, const ElasticDecodeOptions& options);

// OK when check found every request's logits within kCheckRelErrBar and no greedy mismatch;
// else Internal stating both.
core::Status ElasticVerdict(const ElasticDecodeReport& report);

}  // namespace tessera::kernelflume
