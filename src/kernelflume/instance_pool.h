// InstancePool: the baseline KernelFlume's scaling is measured against -- capacity added as
// whole model instances (ServerlessLLM-style), each holding its own copy of the weights and
// its own KV, instead of weightless attention nodes.
//
// An instance = the weights loaded from `weights_dir` (models::LlamaModel::Open: a start pays
// the real load) + its own KV (an in-process AttentionCluster of one node of capacity_tokens,
// "fake" transport: the monolithic instance's cache) + its own CompletionEngine. Requests are
// pinned: Submit places a request on the live instance with the most free KV that fits its
// reservation (CompletionEngine::ReservedTokens) and it stays there; when none fits, the
// request waits in the pool's queue (arrival order; Submit blocks) until one does.
// Scaling: a control thread ticks every tick_s with the same policy as KernelFlume's attention
// pool (Autoscaler, one "node" per instance: capacity = its KV, live = its engine's promised
// tokens, demand = all promised tokens plus the queue's): scale out = start one more instance
// (blocking the tick for its load time, recorded in start_ms()); scale in = stop placing on the
// chosen instance and destroy it once its requests have ended.
// With tick_s = 0 there is no control thread: the owner calls Tick() (tests step it).
// Errors: Start fails with the first instance's error (a bad weights_dir, bad options);
// Submit returns the engine's refusal, or Unavailable once the pool is stopping.
// Thread-safety: Submit and Snapshot from any thread; Start/Stop/destructor from one.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "kernelflume/autoscaler.h"
#include "kernelflume/completion_engine.h"

namespace tessera::kernelflume {

struct InstancePoolOptions {
  std::string weights_dir;         // a Hugging Face-style directory (config.json + safetensors)
  int64_t capacity_tokens = 8192;  // KV per instance
  int32_t page_tokens = 64;
  EngineOptions engine;
  AutoscalerOptions autoscaler;  // min_nodes / max_nodes count instances
  double tick_s = 0.1;           // 0: no control thread (see Tick)
};

class InstancePool {
 public:
  static core::StatusOr<std::unique_ptr<InstancePool>> Start(const InstancePoolOptions& options);
  ~InstancePool();
  void Stop();
  // One scaling decision and its action (what the control thread does every tick_s).
  void Tick();

  core::StatusOr<std::shared_ptr<CompletionStream>> Submit(CompletionParams params);

  struct Snapshot {
    int instances = 0;   // placing requests (not draining)
    double kv_use = 0;   // promised tokens / capacity over those
    int64_t queued = 0;  // waiting in the pool's queue
    int64_t scale_outs = 0, scale_ins = 0;
    std::string start_error;  // the last failed scale-out's error ("" if none)
  };
  Snapshot Load() const;
  std::vector<double> start_ms() const;  // every instance start, the first min_nodes included

 private:
  struct Instance;
  explicit InstancePool(const InstancePoolOptions& options);
  core::StatusOr<std::unique_ptr<Instance>> StartInstance(int id);
  void Control();

  InstancePoolOptions options_;
  Autoscaler policy_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Instance>> instances_;  // guarded by mu_
  uint64_t next_ticket_ = 0, head_ticket_ = 0;        // the queue, in arrival order
  int64_t queued_tokens_ = 0;
  std::vector<double> start_ms_;
  std::string start_error_;
  int next_id_ = 0;
  bool stop_ = false;
  std::atomic<int64_t> scale_outs_{0}, scale_ins_{0};
  double t0_s_ = 0;
  std::thread control_;
};

}  // namespace tessera::kernelflume
