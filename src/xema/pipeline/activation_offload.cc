#include "xema/pipeline/activation_offload.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/check.h"
#include "xema/pipeline/tiny_pipeline.h"

namespace tessera::xema {

ActivationOffload::ActivationOffload(HostTier* tier, const OffloadSet& set,
                                     runtime::DeviceAllocator& allocator, int64_t steps)
    : tier_(tier),
      allocator_(allocator),
      text_(set.text_context),
      latent_(set.latent),
      image_(set.image),
      steps_(steps) {
  CHECK(tier_ != nullptr || !(text_ || latent_ || image_))
      << "activation offload without a host tier";
}

core::Status ActivationOffload::TextContextReady(runtime::DeviceTensor* text_ctx,
                                                 runtime::DeviceTensor* pool_ctx) {
  if (!text_) return core::Status::Ok();
  text_ctx_ = tier_->Adopt(std::move(*text_ctx));
  pool_ctx_ = tier_->Adopt(std::move(*pool_ctx));
  RETURN_IF_ERROR(tier_->ToHost(text_ctx_));
  return tier_->ToHost(pool_ctx_);
}

core::Status ActivationOffload::LatentReady(runtime::DeviceTensor* x, int64_t step) {
  if (!latent_ || step >= steps_) return core::Status::Ok();
  x_ = tier_->Adopt(std::move(*x));
  return tier_->ToHost(x_);
}

void ActivationOffload::BeforeDit(int64_t step) {
  if (!text_ || step == 0) return;
  tier_->Fetch(text_ctx_);
  tier_->Fetch(pool_ctx_);
}

runtime::DeviceTensor* ActivationOffload::text_ctx(runtime::DeviceTensor* own) {
  return text_ ? &text_ctx_.device() : own;
}

runtime::DeviceTensor* ActivationOffload::pool_ctx(runtime::DeviceTensor* own) {
  return text_ ? &pool_ctx_.device() : own;
}

const float* ActivationOffload::latent(const runtime::DeviceTensor& own) {
  return latent_ ? x_.device().f32() : own.f32();
}

std::function<core::Status()> ActivationOffload::EmbedHook() {
  if (!text_ && !latent_) return {};
  return [this]() -> core::Status {
    if (text_) {
      RETURN_IF_ERROR(tier_->Park(text_ctx_));
      RETURN_IF_ERROR(tier_->Park(pool_ctx_));
    }
    if (latent_) RETURN_IF_ERROR(tier_->Park(x_));
    return core::Status::Ok();
  };
}

core::Status ActivationOffload::AfterDit(int64_t step) {
  if (text_ && step + 1 < steps_) {
    RETURN_IF_ERROR(
        tier_->Prefetch(text_ctx_, allocator_, "dit.text_ctx.restored", TensorKind::kActivation));
    RETURN_IF_ERROR(
        tier_->Prefetch(pool_ctx_, allocator_, "dit.pool_ctx.restored", TensorKind::kActivation));
  } else if (text_) {
    ASSIGN_OR_RETURN(unused_ctx_, allocator_.Allocate(text_ctx_.bytes(), "dit.text_ctx.restored",
                                                      TensorKind::kActivation));
    ASSIGN_OR_RETURN(unused_pool_, allocator_.Allocate(pool_ctx_.bytes(), "dit.pool_ctx.restored",
                                                       TensorKind::kActivation));
  }
  if (latent_) {
    RETURN_IF_ERROR(tier_->Prefetch(x_, allocator_, "latent.x.restored", TensorKind::kActivation));
  }
  return core::Status::Ok();
}

const float* ActivationOffload::LatentForStep(const runtime::DeviceTensor& own) {
  if (!latent_) return own.f32();
  tier_->Fetch(x_);
  return x_.device().f32();
}

void ActivationOffload::DropLatent() {
  if (latent_) x_.Reset();
}

void ActivationOffload::InUnpatchify() {
  unused_ctx_.Reset();
  unused_pool_.Reset();
}

models::VaeFrameSink ActivationOffload::FrameSink(int64_t frame_floats) {
  if (!image_) return {};
  frame_floats_ = frame_floats;
  return [this](int64_t f0, int64_t f1, runtime::DeviceTensor frames) -> core::Status {
    CHECK(frames.f32_count() == (f1 - f0) * frame_floats_) << "frame sink: wrong frame size";
    Frames f{f0, tier_->Adopt(std::move(frames))};
    RETURN_IF_ERROR(tier_->Park(f.frames));
    frames_.push_back(std::move(f));
    return core::Status::Ok();
  };
}

void ActivationOffload::GatherFrames(std::span<float> output) {
  for (Frames& f : frames_) {
    const std::span<const std::byte> host = f.frames.host();
    const size_t offset = static_cast<size_t>(f.f0 * frame_floats_);
    CHECK(offset * sizeof(float) + host.size() <= output.size_bytes())
        << "frames beyond the output";
    std::memcpy(output.data() + offset, host.data(), host.size());
  }
}

}  // namespace tessera::xema
