// WeightParking: the idle-weight half of offload (OffloadSet::idle_weights, tiny_pipeline.h):
// the pipeline's weight tensors that the host tier (host_tier.h) may hold while they are idle,
// in groups parked together:
//   kTextEncoder  "text.embed", "text.layer<l>"  idle after the prompt's encoding
//   kDitText      "dit.text"                     idle after "dit.text_proj"
//   kDitParams    "dit.params"                   idle during the VAE
// (the VAE's weights, about 1 MiB, stay). Create mirrors every one to the host at load time
// (HostTier::Mirror: a server loads its weights through host memory and can keep them there;
// not paced, loading is not part of a request), so parking copies nothing: Park frees the
// group's device tensors (inside an open op: released when it ends). Restoring is the paid
// part: StartRestore allocates each parked tensor again under its own name as a weight
// (outside ops: the restored weights are the next request's resident weights) and starts its
// host->device copy; FinishRestore waits for the copies and hands the tensors back to their
// owners (text encoder, DiT). The pipeline restores at the start of the next Run, so that
// request pays the copy, less what its own first ops overlap.
//
// Invariant: a slot's tensor is either held by its owner (resident) or empty (parked, or
// being restored into its home). Lifetime: the owners' tensors and the tier must outlive it.
// Thread-safety: one thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/device_allocator.h"
#include "xema/pipeline/host_tier.h"

namespace tessera::xema {

class WeightParking {
 public:
  enum Group { kTextEncoder = 0, kDitText = 1, kDitParams = 2 };
  static constexpr int kGroups = 3;
  struct Slot {
    std::string name;               // the weight's allocation name
    runtime::DeviceTensor* tensor;  // owned by the text encoder or the DiT
  };

  // Mirrors every slot's tensor (all resident) to the host. Infeasible when the host budget
  // cannot hold them.
  static core::StatusOr<WeightParking> Create(HostTier& tier,
                                              std::array<std::vector<Slot>, kGroups> groups);

  // Frees the group's resident device tensors (the host keeps their copies).
  void Park(Group group);
  bool parked(Group group) const;
  // Aligned bytes of the weights not resident now (parked or being restored).
  int64_t ParkedBytes() const;
  // Starts restoring every parked weight of every group, in group order. Infeasible (out of
  // device memory) passes out; the weights restored so far are handed back at the next
  // FinishRestore.
  [[nodiscard]] core::Status StartRestore(runtime::DeviceAllocator& allocator);
  // Waits for the group's restore copies and hands the tensors back to their owners.
  void FinishRestore(Group group);
  void FinishRestoreAll();

 private:
  struct Home {
    Slot slot;
    TieredTensor host;  // the host copy; a device copy while being restored
  };
  explicit WeightParking(HostTier& tier) : tier_(&tier) {}

  HostTier* tier_;
  std::array<std::vector<Home>, kGroups> homes_;
};

}  // namespace tessera::xema
