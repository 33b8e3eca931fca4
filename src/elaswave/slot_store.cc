#include "elaswave/slot_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/fnv64.h"

namespace tessera::elaswave {
namespace {

template <typename T>
void PutBits(T value, float* out) {
  static_assert(sizeof(T) == 2 * sizeof(float));
  std::memcpy(out, &value, sizeof value);
}

template <typename T>
T GetBits(const float* in) {
  T value;
  std::memcpy(&value, in, sizeof value);
  return value;
}

}  // namespace

std::vector<int> SlotStore::Slots() const {
  std::vector<int> out;
  for (const auto& [slot, state] : slots_) out.push_back(slot);
  return out;
}

core::Status SlotStore::Add(int slot, std::span<const float> params) {
  ASSIGN_OR_RETURN(models::AdamW opt,
                   models::AdamW::Create(static_cast<int64_t>(params.size()), options_));
  slots_.erase(slot);
  slots_.emplace(slot,
                 SlotState{std::vector<float>(params.begin(), params.end()), std::move(opt), 0.0});
  return core::Status::Ok();
}

core::StatusOr<SlotState*> SlotStore::Get(int slot) {
  auto it = slots_.find(slot);
  if (it == slots_.end()) {
    return core::InvalidArgument(fmt::format("slot {} is not held by this worker", slot));
  }
  return &it->second;
}

core::StatusOr<std::vector<float>> SlotStore::Pack(int slot) const {
  auto it = slots_.find(slot);
  if (it == slots_.end()) {
    return core::InvalidArgument(fmt::format("slot {} is not held by this worker", slot));
  }
  const SlotState& s = it->second;
  const auto n = static_cast<int64_t>(s.params.size());
  std::vector<float> out(static_cast<size_t>(PackedSize(n)));
  std::copy(s.params.begin(), s.params.end(), out.begin());
  std::copy(s.opt.first_moment().begin(), s.opt.first_moment().end(), out.begin() + n);
  std::copy(s.opt.second_moment().begin(), s.opt.second_moment().end(), out.begin() + 2 * n);
  PutBits<int64_t>(s.opt.step(), out.data() + 3 * n);
  PutBits<double>(s.grad_bound, out.data() + 3 * n + 2);
  return out;
}

core::Status SlotStore::Unpack(int slot, std::span<const float> packed) {
  if (packed.size() < 4 || (packed.size() - 4) % 3 != 0) {
    return core::InvalidArgument(
        fmt::format("slot {}: packed state of {} floats is not 3n + 4", slot, packed.size()));
  }
  const auto n = static_cast<int64_t>((packed.size() - 4) / 3);
  RETURN_IF_ERROR(Add(slot, packed.subspan(0, static_cast<size_t>(n))));
  SlotState& s = slots_.at(slot);
  std::copy(packed.begin() + n, packed.begin() + 2 * n, s.opt.first_moment().begin());
  std::copy(packed.begin() + 2 * n, packed.begin() + 3 * n, s.opt.second_moment().begin());
  s.opt.set_step(GetBits<int64_t>(packed.data() + 3 * n));
  s.grad_bound = GetBits<double>(packed.data() + 3 * n + 2);
  return core::Status::Ok();
}

uint64_t SlotStore::Digest(int slot) const {
  auto packed = Pack(slot);
  if (!packed.ok()) return 0;
  core::Fnv64 h;
  h.Floats(*packed);
  return h.value();
}

void SlotStore::Snapshot(int64_t step) {
  auto& snap = snapshots_[step];
  snap.clear();
  for (const auto& [slot, state] : slots_) snap[slot] = *Pack(slot);
}

core::Status SlotStore::Restore(int64_t step) {
  auto it = snapshots_.find(step);
  if (it == snapshots_.end()) {
    return core::NotFound(fmt::format("no in-memory snapshot of step {}", step));
  }
  slots_.clear();
  for (const auto& [slot, packed] : it->second) RETURN_IF_ERROR(Unpack(slot, packed));
  return core::Status::Ok();
}

void SlotStore::PruneSnapshotsBefore(int64_t step) {
  snapshots_.erase(snapshots_.begin(), snapshots_.lower_bound(step));
}

}  // namespace tessera::elaswave
