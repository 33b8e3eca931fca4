// The fleet simulator's machinery (fleet_sim.h is the contract): requests, KV domains, the
// weight nodes and instances that run batches, the nodes that scale, and FleetSim, the event
// loop over them. Split over fleet_sim.cc (the run and its report), fleet_sim_scaling.cc (nodes
// and the autoscaler's ticks) and fleet_sim_batches.cc (admission, prefill, decode steps,
// sessions). Internal to kernelflume; not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "core/trace.h"
#include "kernelflume/autoscaler.h"
#include "kernelflume/decode_cost_model.h"
#include "kernelflume/fleet_sim.h"
#include "kernelflume/kv_prefix_cache.h"
#include "sim/event_queue.h"

namespace tessera::kernelflume::fleet_detail {

// Event kinds, in the order they run at equal times: a step's end frees KV before a node joins,
// both before an arrival is admitted, and the autoscaler sees the result.
enum FleetEvent : int { kFleetStepDone = 0, kFleetNodeReady, kFleetArrival, kFleetTick };
constexpr double kWeightBytesPerParam = 2;  // bf16

struct Request {
  const workload::TraceRequest* t = nullptr;
  int64_t prompt = 0;        // tokens to hold before decoding (grows when preempted)
  int64_t left = 0;          // output tokens still to generate
  int64_t kv = 0;            // KV tokens held while admitted
  int64_t cached = 0;        // prompt tokens the admission found cached
  int64_t prefilled = 0;     // chunked prefill: prompt tokens in KV so far (cached included)
  bool reuse_prefix = true;  // false after a preemption (recompute)
  double first_token_s = -1;
  double entered_s = 0;  // when it joined the queue (after any hold)
  int group = -1;
  std::vector<int> dependents;  // later turns of the session, held until this one finishes
};

// Where KV lives: the kernelflume pool or one instance.
struct Domain {
  int64_t capacity = 0;  // tokens, of active nodes
  int64_t active = 0;    // tokens held by admitted requests
  KvPrefixCache cache;
  // Room for `tokens` more after evicting cache; evicts as needed.
  bool MakeRoom(int64_t tokens) {
    const int64_t free = capacity - active - cache.tokens();
    if (free >= tokens) return true;
    if (capacity - active < tokens) return false;
    cache.Evict(tokens - free);
    return true;
  }
};

// A weight node or an instance: runs one batch.
struct Group {
  int domain = 0;
  int node = -1;
  bool up = false, busy = false;
  std::vector<int> running, prefilling, admitted;  // request indices, in admission order
  double stall_s = 0;                              // prefill time the running batch waited
  size_t stalled = 0;                              // how many of the running requests waited for it
  double prefill_s = 0;         // finished prefills' time (the autoscaler's busy time)
  double prefill_start_s = -1;  // the running prefill's start; -1: none
  double busy_at_tick_s = 0;    // PrefillBusy at the last autoscaler tick
  double slowest_step_s = 0;    // the slowest decode step since the last tick
  double PrefillBusy(double now) const {
    return prefill_s + (prefill_start_s >= 0 ? now - prefill_start_s : 0);
  }
  std::vector<int> chunking;  // chunked prefill: admitted, prompt not yet all in KV
  size_t load() const {
    return running.size() + prefilling.size() + admitted.size() + chunking.size();
  }
};

// What a node is: kernelflume's weight nodes and attention nodes, serverlessllm's instances.
enum class Tier { kWeight, kAttention, kInstance };

struct Node {
  Tier tier = Tier::kInstance;
  int gpus = 0;
  double usd_per_gpu_s = 0;
  double start_s = 0, release_s = -1;
  bool ready = false;
  int64_t capacity = 0;
  int group = -1;  // weight node, instance
  int machine = 0;
  sim::EventId ready_event = -1;
};

struct WindowAcc {
  std::vector<double> tpot_s, weight;
  double gpu_s = 0;
  int gpus_max = 0;
  double kv_use_sum = 0;
  int kv_use_n = 0;
};

class FleetSim {
 public:
  FleetSim(const std::vector<workload::TraceRequest>& trace, const models::LlamaConfig& model,
           const hw::Cluster& cluster, FleetSystem system, const FleetSimOptions& o,
           core::TraceWriter* perfetto)
      : trace_(trace),
        model_(model),
        cluster_(cluster),
        system_(system),
        o_(o),
        perfetto_(perfetto),
        kv_policy_(o.autoscaler),
        weight_policy_(o.autoscaler) {}

  core::StatusOr<FleetRunResult> Run();

 private:
  bool kf() const { return system_ == FleetSystem::kKernelFlume; }
  const hw::Device& AttnDevice() const {
    return o_.attn_device.name.empty() ? cluster_.device : o_.attn_device;
  }
  core::Status Setup();
  int AddNode(Tier tier, double now, bool warm_at_zero);
  // One autoscaler decision for a tier, carried out.
  void ScaleTier(Tier tier, Autoscaler& policy, double now);
  void NodeReady(int n);
  void ReleaseNode(int n, double now);
  void Tick();
  void TryAdmit();
  void StartGroup(int g);
  void GroupDone(int g, int64_t steps, double step_s);
  void Preempt(int g);
  // Chunked prefill (prefill_chunk_tokens > 0): one step of up to that many prompt tokens
  // beside one decode step of the running batch.
  void StartChunkedStep(int g);
  void ChunkedStepDone(int g, double step_s, double prefill_s, size_t batch);
  // A request's KV goes to the cache and it joins `done`.
  void Leave(int i, Domain& d, double now, std::vector<int>* done);
  // Its prompt is in KV: its first token now; it runs, or leaves (one output token).
  void FirstToken(int i, Group& g, Domain& d, double now, std::vector<int>* done);
  // One TPOT sample of `weight` tokens at the current time.
  void Sample(double tpot_s, double weight);
  // An arrival: held when an earlier turn of its session is still in flight, else Enter.
  void Arrive(int i);
  // Queues a request (or rejects it) and admits what fits.
  void Enter(int i);
  // Takes a completed request out of flight; its held turns enter.
  void Complete(int i);
  int64_t FullBlocks(const workload::TraceRequest& t) const {
    return std::min<int64_t>(t.input_length / workload::kTraceBlockTokens,
                             static_cast<int64_t>(t.hash_ids.size()));
  }
  // The group's step time with every running request `extra` tokens longer.
  double StepSeconds(const Group& g, double extra) const;
  int AttentionNodesUp() const;
  // A prefill on a weight node (its history on the attention nodes) or an instance.
  double Prefill(int64_t new_tokens, int64_t cached_tokens) const {
    return kf() ? KernelFlumePrefillSeconds(model_, cluster_, AttnDevice(), new_tokens,
                                            cached_tokens, AttentionNodesUp(), o_.weight_gpus)
                : PrefillSeconds(model_, cluster_, new_tokens, cached_tokens, o_.weight_gpus);
  }
  int ActiveGpus() const { return gpus_now_; }
  void SetGpus(int delta);
  void IntegrateGpus(double until_s);
  WindowAcc& Window(double t);
  WindowAcc& WindowAt(size_t k);

  const std::vector<workload::TraceRequest>& trace_;
  const models::LlamaConfig& model_;
  const hw::Cluster& cluster_;
  FleetSystem system_;
  FleetSimOptions o_;
  core::TraceWriter* perfetto_;
  Autoscaler kv_policy_;      // attention nodes or instances
  Autoscaler weight_policy_;  // kernelflume's weight nodes
  sim::EventQueue q_;
  FleetRunResult r_;

  int64_t node_capacity_ = 0;  // tokens per attention node or instance
  int total_gpus_ = 0;         // the fleet's GPUs (max_gpus of the cluster)
  int machines_ = 0;           // cluster nodes they span
  double weight_bytes_ = 0;
  std::vector<Request> reqs_;
  std::deque<int> queue_;
  std::vector<Domain> domains_;
  std::vector<Group> groups_;
  std::vector<Node> nodes_;
  std::vector<int> machine_loads_;  // model loads per machine (a cluster node)
  std::vector<int> machine_gpus_;   // GPUs in use per machine
  int64_t finished_ = 0;            // completed + rejected
  int gpus_now_ = 0;
  double gpus_since_ = 0;
  int64_t largest_request_ = 0;                 // prompt + output a place can hold at most
  std::unordered_map<int64_t, int> in_flight_;  // a request's last full block id -> request
  std::vector<WindowAcc> windows_;
  std::vector<double> all_tpot_s_, all_weight_, ttft_s_;
};

}  // namespace tessera::kernelflume::fleet_detail
