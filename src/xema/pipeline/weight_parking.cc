#include "xema/pipeline/weight_parking.h"

#include <utility>

#include "core/check.h"

namespace tessera::xema {

core::StatusOr<WeightParking> WeightParking::Create(HostTier& tier,
                                                    std::array<std::vector<Slot>, kGroups> groups) {
  WeightParking p(tier);
  for (int g = 0; g < kGroups; ++g) {
    for (Slot& slot : groups[g]) {
      CHECK(slot.tensor != nullptr && !slot.tensor->empty())
          << "WeightParking: weight " << slot.name << " is not resident";
      ASSIGN_OR_RETURN(TieredTensor host, tier.Mirror(*slot.tensor));
      p.homes_[g].push_back({std::move(slot), std::move(host)});
    }
  }
  return p;
}

void WeightParking::Park(Group group) {
  for (Home& h : homes_[group]) h.slot.tensor->Reset();
}

bool WeightParking::parked(Group group) const {
  for (const Home& h : homes_[group]) {
    if (h.slot.tensor->empty()) return true;
  }
  return false;
}

int64_t WeightParking::ParkedBytes() const {
  int64_t bytes = 0;
  for (const auto& group : homes_) {
    for (const Home& h : group) {
      if (h.slot.tensor->empty()) bytes += AlignBytes(h.host.bytes());
    }
  }
  return bytes;
}

core::Status WeightParking::StartRestore(runtime::DeviceAllocator& allocator) {
  for (auto& group : homes_) {
    for (Home& h : group) {
      if (!h.slot.tensor->empty() || h.host.on_device()) continue;
      RETURN_IF_ERROR(tier_->Prefetch(h.host, allocator, h.slot.name, TensorKind::kWeight));
    }
  }
  return core::Status::Ok();
}

void WeightParking::FinishRestore(Group group) {
  for (Home& h : homes_[group]) {
    if (h.host.on_device()) *h.slot.tensor = tier_->TakeDevice(h.host);
  }
}

void WeightParking::FinishRestoreAll() {
  for (int g = 0; g < kGroups; ++g) FinishRestore(static_cast<Group>(g));
}

}  // namespace tessera::xema
