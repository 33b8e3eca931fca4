#include "comm/ucx_am_transport.h"

namespace tessera::comm {

core::StatusOr<std::unique_ptr<AmTransport>> MakeUcxAmTransport() {
  return core::Unavailable("am transport backend 'ucx': not built yet");
}

}  // namespace tessera::comm
