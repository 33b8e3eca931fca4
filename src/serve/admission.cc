#include "serve/admission.h"

namespace tessera::serve {

std::vector<std::shared_ptr<Job>> Admission::TakeBatch(Job&, BoundedQueue<std::shared_ptr<Job>>&) {
  return {};
}

OneJobPerDevice::OneJobPerDevice(int devices) : busy_(static_cast<size_t>(devices), false) {}

std::optional<Placement> OneJobPerDevice::Admit(Job&) {
  for (size_t d = 0; d < busy_.size(); ++d) {
    if (!busy_[d]) {
      busy_[d] = true;
      return Placement{static_cast<int>(d), 1};
    }
  }
  return std::nullopt;
}

void OneJobPerDevice::Release(Job&, const Placement& placement) {
  busy_[static_cast<size_t>(placement.device)] = false;
}

}  // namespace tessera::serve
