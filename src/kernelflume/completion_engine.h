// CompletionEngine: KernelFlume's serving loop -- requests admitted from a queue, prefilled, then
// decoded together one token per step (continuous batching: a request joins the running batch
// after its prefill and leaves it when done), each token delivered to the request's
// CompletionStream as soon as it is sampled. The core attention of every request runs on the
// cluster's attention nodes (DisaggregatedAttention); a lost node is recovered from (its ranges
// re-prefilled, the step retried) without failing the requests.
//
// Admission (Submit, answered at once):
//   InvalidArgument  empty prompt, a token outside the vocabulary, max_tokens < 1, prompt +
//                    max_tokens over the model's context, temperature < 0 (naming the field);
//   Unavailable      no active attention node (every node lost or retired);
//   Infeasible       the queue holds max_queued requests, or the request's KV (prompt +
//                    max_tokens) exceeds what the pool can ever hold at max_nodes nodes;
// then the request waits in the queue until its KV fits beside the running requests'
// reservations, and until the batch has room (max_active). A request reserves its tokens
// (prompt + max_tokens) plus a page of slack for each range it may be cut into (ranges of at
// most the router's re-route period or range_tokens_max; nodes allocate whole pages per range,
// ReservedTokens), so a running request never finds the pool full.
// Scheduling, on one thread, each iteration: admit what fits; prefill at most
// prefill_tokens_per_step prompt tokens (oldest admitted request first, chunks of at most 512
// tokens: chunked prefill, so a long prompt delays the running requests' next token by one
// chunk per step, not by its whole prefill); then one decode step for every running request
// whose prompt is prefilled: the step runs as ONE batched
// forward (models::LlamaBatchDecode: each weight GEMM over all rows; attention per request),
// then each request's token is sampled (greedy, or at its temperature with its seed) and sent.
// A request ends at max_tokens, at the end-of-text token (stop_at_eos), when cancelled (its
// consumer left: CompletionStream::Cancel), or on an error it cannot recover from; its ranges
// are freed on every node when it ends.
// Metrics: TPOT (gap between consecutive tokens of one request) p50/p99 over the last 4096
// tokens, routing version, active nodes, KV use, requests by state. DemandTokens is what the
// pool has promised: the running requests' reservations plus the waiting ones' (the
// autoscaler scales on it, so a queue waiting for KV makes the pool grow).
// Thread-safety: Submit, Metrics and the streams from any thread; Stop/destructor from one.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "kernelflume/attention_cluster.h"
#include "kernelflume/router.h"
#include "models/llama.h"

namespace tessera::kernelflume {

struct CompletionParams {
  std::vector<int32_t> prompt;
  int64_t max_tokens = 16;
  double temperature = 0;
  uint64_t seed = 0;
  bool stop_at_eos = true;
};

// The consumer's side of one request.
class CompletionStream {
 public:
  struct Event {
    enum class Kind { kToken, kDone, kError };
    Kind kind = Kind::kToken;
    int32_t token = 0;
    std::string finish_reason;  // kDone: "length" | "stop"
    core::Status error;         // kError
    int64_t iteration = 0;      // the scheduler iteration that sent it (counts from 1)
  };
  explicit CompletionStream(uint64_t id) : id_(id) {}
  // The next event, waiting up to timeout_s; nullopt on timeout.
  std::optional<Event> Next(double timeout_s);
  // The consumer left: the engine drops the request at its next step and frees its ranges.
  void Cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }
  uint64_t id() const { return id_; }
  // The scheduler iteration that admitted the request (it left the queue); 0 while queued.
  int64_t admitted_iteration() const { return admitted_iteration_; }

 private:
  friend class CompletionEngine;
  void Push(Event e);
  uint64_t id_;
  std::atomic<bool> cancelled_{false};
  std::atomic<int64_t> admitted_iteration_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
};

struct EngineOptions {
  int max_active = 16;
  int max_queued = 64;
  int max_nodes = 8;                      // the pool's most nodes (for the "can never fit" refusal)
  int64_t prefill_tokens_per_step = 512;  // >= 1; prompt tokens prefilled between two steps
  bool record_iterations = false;         // keep an EngineIteration per busy iteration
};

// One scheduler iteration that did work (Iterations(), with record_iterations): what it ran and
// how long it took, from admission to the end of the batched forward -- what a cost profile of
// the engine is fitted to (engine_profile.h).
struct EngineIteration {
  double duration_s = 0;
  int64_t decode_batch = 0;      // requests in the batched forward
  int64_t decode_kv_tokens = 0;  // their KV tokens (positions attended)
  int64_t prefill_tokens = 0;    // prompt tokens prefilled in this iteration
  double prefill_pairs = 0;      // sum over its chunks of len x (start + (len + 1) / 2)
};

struct EngineMetrics {
  double tpot_ms_p50 = 0, tpot_ms_p99 = 0;
  uint64_t routing_version = 0;
  int nodes = 0;
  double kv_use = 0;  // live tokens / capacity over active nodes
  int64_t active = 0, queued = 0, completed = 0, cancelled = 0, failed = 0, tokens = 0;
};

// What a request of `need` tokens (prompt + max_tokens) reserves when its KV is cut into ranges
// of at most `range_tokens` on nodes that allocate `page_tokens`-token pages: need plus a page of
// slack per range and one more (CompletionEngine::ReservedTokens; the engine simulator's too).
int64_t ReserveTokens(int64_t need, int64_t page_tokens, int64_t range_tokens);
// The longest range a request's KV is cut into under `router`: its re-route period when set
// (at most range_tokens_max), else range_tokens_max.
int64_t ReserveRangeTokens(const RouterOptions& router);

class CompletionEngine {
 public:
  CompletionEngine(const models::LlamaModel& model, AttentionCluster& cluster,
                   EngineOptions options);
  ~CompletionEngine();
  core::StatusOr<std::shared_ptr<CompletionStream>> Submit(CompletionParams params);
  EngineMetrics Metrics() const;
  // Reserved tokens of the running requests plus those of the waiting ones (see above).
  int64_t DemandTokens() const;
  // The tokens a request reserves while it waits and runs (see the file comment).
  int64_t ReservedTokens(const CompletionParams& p) const;
  // Stops the loop; requests still queued or running end with Unavailable.
  void Stop();
  // The recorded iterations so far (empty unless record_iterations).
  std::vector<EngineIteration> Iterations() const;

 private:
  struct Running;
  void Run();
  void Admit();
  void PrefillSome();
  void DecodeStep();
  void Finish(Running& r, CompletionStream::Event e);
  int64_t FreeTokens() const;  // pool capacity minus the running requests' reservations

  const models::LlamaModel& model_;
  AttentionCluster& cluster_;
  EngineOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::shared_ptr<CompletionStream>, CompletionParams>> queue_;
  std::vector<std::unique_ptr<Running>> running_;  // scheduler thread only
  int64_t iteration_ = 0;                          // scheduler thread only
  int64_t reserved_tokens_ = 0;                    // guarded by mu_
  int64_t queued_tokens_ = 0;  // the waiting requests' reservations; guarded by mu_
  uint64_t next_id_ = 1;
  bool stop_ = false;
  std::vector<double> tpot_ms_;              // ring of 4096
  EngineIteration current_;                  // scheduler thread only
  std::vector<EngineIteration> iterations_;  // guarded by mu_
  size_t tpot_next_ = 0;
  int64_t completed_ = 0, cancelled_ = 0, failed_ = 0, tokens_ = 0, active_ = 0;
  std::thread thread_;
};

}  // namespace tessera::kernelflume
