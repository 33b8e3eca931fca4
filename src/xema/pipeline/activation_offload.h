// ActivationOffload: the activation half of a request's offload set (DiffusionRequest::offload,
// tiny_pipeline.h) during one DiffusionPipeline::Run: which tensors are parked in the host tier
// (host_tier.h) over which ops, and where they come back. Each method is one call at a fixed
// place of Run; with an item off, its methods do nothing and hand back the pipeline's own
// tensors, so the unmitigated run is unchanged. Outputs are bitwise those of the unmitigated
// run: a parked tensor comes back byte for byte and every kernel reads the same values.
//
// text_context: the DiT's projected text context "dit.text_ctx" and pooled "dit.pool_ctx" are
//   read only in "dit.embed" (tiny_dit.cc). Their host copy starts after "dit.text_proj" (once:
//   they never change); "dit.embed" of every step parks them (after_embed hook: released when
//   "dit.embed" ends); the first op after the DiT pass of step i ("cfg.combine" with cfg, else
//   "euler.step") prefetches them as "dit.text_ctx.restored" / "dit.pool_ctx.restored" for
//   step i + 1, whose DiT pass waits for them first. The last step allocates the same two (the
//   steps of a template are identical, so the recorded trace folds) but copies nothing into
//   them (nothing reads them); "vae.unpatchify" frees them.
// latent: x_i ("latent.x") is read by "dit.embed" and "euler.step". Its host copy starts as
//   soon as it is complete (after "latent.init" or the previous "euler.step"; never for the
//   last latent, which stays); "dit.embed" parks it; the first op after the DiT pass
//   prefetches it ("latent.x.restored"); "euler.step" waits for it and frees it with x_i.
// image: the VAE hands each slice's frames to FrameSink() inside the slice's last block op,
//   which copies them to the host, waits and frees them in that op: no decoded frame stays on
//   the device after its slice. "vae.output" copies the host frames into the caller's buffer:
//   the image is assembled on the host, where it ends anyway, never gathered on the device.
//   (The copy of slice s could overlap slice s + 1's first block; that needs a hook in every
//   VAE op and is left out: each slice's copy is exposed.)
// Saved device bytes = the parked tensor's aligned bytes over the ops it is away; exposed time
// per copy = max(0, copy seconds - the ops it overlaps), measured by the tier.
//
// Lifetime: holds the parked tensors (TieredTensor waits for its copies before freeing), so
// an error return of Run leaves no copy in flight and nothing allocated; it must be destroyed
// before the allocator and the tier. Thread-safety: Run's thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/status.h"
#include "models/vae_decoder.h"
#include "runtime/device_allocator.h"
#include "xema/pipeline/host_tier.h"

namespace tessera::xema {

struct OffloadSet;

class ActivationOffload {
 public:
  // `tier` may be null only when `set` offloads no activation. `steps` >= 1.
  ActivationOffload(HostTier* tier, const OffloadSet& set, runtime::DeviceAllocator& allocator,
                    int64_t steps);
  ActivationOffload(const ActivationOffload&) = delete;
  ActivationOffload& operator=(const ActivationOffload&) = delete;

  // After "dit.text_proj" (outside ops): takes the projected context and starts its host copy.
  [[nodiscard]] core::Status TextContextReady(runtime::DeviceTensor* text_ctx,
                                              runtime::DeviceTensor* pool_ctx);
  // After the op that completed x_step (outside ops): takes it and starts its host copy.
  [[nodiscard]] core::Status LatentReady(runtime::DeviceTensor* x, int64_t step);
  // Before the DiT pass of `step`: waits for the prefetched context.
  void BeforeDit(int64_t step);
  // What the DiT reads: the parked tensors' device copies, else the pipeline's own.
  runtime::DeviceTensor* text_ctx(runtime::DeviceTensor* own);
  runtime::DeviceTensor* pool_ctx(runtime::DeviceTensor* own);
  const float* latent(const runtime::DeviceTensor& own);
  // models::TinyDit::Input::after_embed: parks what is offloaded (empty when nothing is).
  std::function<core::Status()> EmbedHook();
  // Inside the first op after the DiT pass of `step`: the prefetches.
  [[nodiscard]] core::Status AfterDit(int64_t step);
  // Inside "euler.step": x_i on the device (waits for its prefetch), then, once x_{i+1} is
  // computed, DropLatent frees it (released when the op ends).
  const float* LatentForStep(const runtime::DeviceTensor& own);
  void DropLatent();
  // Inside "vae.unpatchify": frees the last step's unused context prefetch.
  void InUnpatchify();
  // The VAE's frame sink with image offload, else empty. `frame_floats` = out_channels H W.
  models::VaeFrameSink FrameSink(int64_t frame_floats);
  // Inside "vae.output": copies the parked frames into `output` (image offload).
  void GatherFrames(std::span<float> output);

 private:
  struct Frames {
    int64_t f0 = 0;
    TieredTensor frames;
  };
  HostTier* tier_;
  runtime::DeviceAllocator& allocator_;
  bool text_, latent_, image_;
  int64_t steps_;
  int64_t frame_floats_ = 0;
  TieredTensor text_ctx_, pool_ctx_, x_;
  runtime::DeviceTensor unused_ctx_, unused_pool_;  // the last step's prefetch slots
  std::vector<Frames> frames_;
};

}  // namespace tessera::xema
