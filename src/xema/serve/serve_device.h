// ServeDevice: one serving device, i.e. one memory budget and one request at a time, under a
// MemoryPolicy (memory_policy.h). Owned and driven by one worker thread of DiffusionServer.
//
//   none    one CachingDeviceAllocator (PyTorch rules, device limit = budget_bytes) for the
//           device's life; a pipeline per model is loaded on first use and stays resident.
//   static  templates are planned once per server (a TemplateCache shared by the devices):
//           the first request of a template is recorded with its activations on a heap
//           bounded by the budget less the model's weights (its output is the reply,
//           template_hit false), then a tflite layout of those activations is planned; a
//           template whose weights plus arena exceed the budget is refused from then on. The
//           device holds each model's weights once (a weight pool: loaded on first use, kept
//           while there is room) and one activation region, mapped and touched once, as
//           large as the largest arena it has run: every template's arena lies in it (one
//           request at a time, so they never overlap in time), and a switch between templates
//           maps, loads and evicts nothing. When room is needed (weights of another model, a
//           larger region) the region goes first, then the least recently used other model;
//           the device's memory is its weights and its region and nothing else (a recording
//           run first drops the region and every other model).
//
// Errors: Infeasible (out of device memory, or a static arena above the budget: HTTP 507);
// FailedPrecondition when a replay diverged from its trace (the arena is dropped); the
// pipeline's own errors otherwise. After any error the device holds only weights (none) or
// nothing (static): nothing of the request is leaked.
// Thread-safety: Execute on one thread at a time; Snapshot from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "xema/memory_trace.h"
#include "xema/pipeline/caching_device_allocator.h"
#include "xema/pipeline/host_tier.h"
#include "xema/pipeline/layout_allocator.h"
#include "xema/pipeline/tiny_pipeline.h"
#include "xema/serve/memory_policy.h"
#include "xema/static_layout.h"

namespace tessera::xema {

// A planned template: its trace, expansion and layout, or why it cannot run.
struct TemplatePlan {
  MemoryTrace trace;
  ExpandedTrace expanded;
  Layout layout;
  core::Status refused;  // OK when the template runs from `layout`
};

// A template's planned mitigations (caching, xema): the mitigation fields to run it with, or
// why it cannot fit.
struct MitigatedTemplate {
  DiffusionRequest settings;        // only the mitigation fields are used (CopyMitigations)
  std::vector<std::string> labels;  // the chosen options that are not "off"
  int64_t verified_peak_bytes = 0;
  double added_s = 0;    // modeled from the profiled options
  core::Status refused;  // Infeasible when nothing fits the budget
};

// The plans of a server's templates (layouts and mitigations), by TemplateKeyString.
// Thread-safe.
class TemplateCache {
 public:
  std::shared_ptr<const TemplatePlan> Find(const std::string& key) const;
  // Keeps the first plan inserted for `key` and returns it.
  std::shared_ptr<const TemplatePlan> Insert(const std::string& key,
                                             std::shared_ptr<const TemplatePlan> plan);
  std::shared_ptr<const MitigatedTemplate> FindMitigated(const std::string& key) const;
  std::shared_ptr<const MitigatedTemplate> InsertMitigated(
      const std::string& key, std::shared_ptr<const MitigatedTemplate> plan);
  int64_t size() const;  // templates with a layout plan

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const TemplatePlan>> plans_;
  std::map<std::string, std::shared_ptr<const MitigatedTemplate>> mitigated_;
};

// `to` with the mitigation fields of `from` (ffn_chunks, attention_chunks, vae_frame_slices,
// vae_tiles, offload); every other field (prompt, seed, ...) stays.
DiffusionRequest CopyMitigations(const DiffusionRequest& from, const DiffusionRequest& to);
// The mitigations a request runs with, e.g. {"ffn_chunks=4", "vae_tiles=2", "offload:latent"}.
std::vector<std::string> MitigationLabels(const DiffusionRequest& request);

// "tiny-t2i 64x64x1 steps 4 cfg on": what a static layout depends on.
std::string TemplateKeyString(const DiffusionRequest& request);

struct DeviceRun {
  std::vector<float> output;             // (frames, 3, height, width)
  int64_t peak_bytes = 0;                // peak live bytes of the request's run, weights included
  bool template_hit = false;             // static: ran from an already planned arena
  std::vector<std::string> mitigations;  // MitigationLabels of the request as run
};

struct DeviceSnapshot {
  int64_t live_bytes = 0;           // now (weights between requests)
  int64_t peak_bytes = 0;           // most live bytes of any request so far
  int64_t peak_reserved_bytes = 0;  // none: the caching allocator's peak reserved;
                                    // static: weights plus the activation region
  int64_t requests = 0;             // requests executed (any outcome)
  int64_t weight_loads = 0;         // times a model's weights were loaded (all policies)
  int64_t region_maps = 0;          // static: times the activation region was mapped
};

class ServeDevice {
 public:
  // `cache` is shared by the devices of a server and must outlive them. `host`: the device's
  // host tier (UsesHostTier policies; offloading requests fail without one).
  ServeDevice(int index, MemoryPolicy policy, int64_t budget_bytes, TemplateCache* cache,
              std::unique_ptr<HostTier> host = nullptr);
  ~ServeDevice();
  ServeDevice(const ServeDevice&) = delete;
  ServeDevice& operator=(const ServeDevice&) = delete;

  // `request` must pass ValidateRequest for its preset model.
  core::StatusOr<DeviceRun> Execute(const DiffusionRequest& request);
  // Plans the template of `request` before serving, as its first request would (the
  // mitigations profiled under caching and xema; the static arena recorded and laid out under
  // static; nothing under the other policies), into the shared TemplateCache; a template that
  // cannot fit is kept refused there (its requests get Infeasible), which is not an error
  // here. Counts no request. InvalidArgument for a request that fails ValidateRequest; the
  // planner's other errors.
  core::Status Prepare(const DiffusionRequest& request);
  DeviceSnapshot Snapshot() const;
  int index() const { return index_; }

 private:
  core::StatusOr<DiffusionRequest> Mitigate(const TinyModelSpec& spec, const DiffusionRequest& r);
  core::StatusOr<DeviceRun> ExecuteNone(const TinyModelSpec& spec, const DiffusionRequest& r);
  core::StatusOr<DeviceRun> ExecuteStatic(const TinyModelSpec& spec, const DiffusionRequest& r);
  core::StatusOr<std::shared_ptr<const TemplatePlan>> Plan(const TinyModelSpec& spec,
                                                           const DiffusionRequest& r,
                                                           DeviceRun* recorded);
  void Publish(int64_t live_bytes, int64_t request_peak_bytes, int64_t reserved_bytes);

  int index_;
  MemoryPolicy policy_;
  int64_t budget_bytes_;
  TemplateCache* cache_;
  std::unique_ptr<HostTier> host_;  // before the pipelines: their tiered tensors use it

  // Caching-allocator policies: the allocator, then the pipelines (destroyed first).
  std::unique_ptr<CachingDeviceAllocator> caching_;
  std::map<std::string, std::unique_ptr<DiffusionPipeline>> pipelines_;

  // static: the weight pool (each model's weights loaded once into weights_, most recently
  // used first; declared after weights_, so destroyed before it), the activation region and
  // the templates' arenas in it (the plan kept alive for the allocator's trace reference;
  // declared after the region, so destroyed before it is unmapped).
  struct Model {
    std::string name;
    std::unique_ptr<DiffusionPipeline> pipeline;
  };
  std::unique_ptr<runtime::HeapDeviceAllocator> weights_;
  std::list<Model> models_;
  std::map<std::string, int64_t> model_weight_bytes_;  // learned at each model's first load
  struct Region {
    char* data = nullptr;
    int64_t bytes = 0;
  };
  Region region_;
  struct Arena {
    std::shared_ptr<const TemplatePlan> plan;
    std::unique_ptr<LayoutDeviceAllocator> allocator;
  };
  std::list<Arena> arenas_;  // over region_
  int64_t ArenaLiveBytes() const;
  int64_t ResidentBytes() const;  // weights_ live + region_.bytes
  void DropRegion();              // the arenas, then the region
  // Drops the region, then other models than `keep` (least recently used first), until
  // `bytes` more fit the budget (or nothing more can go).
  void MakeRoom(int64_t bytes, const std::string& keep);
  // The model's pipeline with its weights resident (loaded now if need be, moved to the front).
  core::StatusOr<DiffusionPipeline*> ResidentModel(const TinyModelSpec& spec);
  // The arena of `plan` in a region of at least its size (the region grown if need be).
  core::StatusOr<LayoutDeviceAllocator*> ArenaFor(std::shared_ptr<const TemplatePlan> plan,
                                                  const std::string& keep);

  std::atomic<int64_t> live_bytes_{0};
  std::atomic<int64_t> peak_bytes_{0};
  std::atomic<int64_t> peak_reserved_bytes_{0};
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> weight_loads_{0};
  std::atomic<int64_t> region_maps_{0};
};

}  // namespace tessera::xema
