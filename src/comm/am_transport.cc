#include "comm/am_transport.h"

#include <fmt/format.h>

#include "comm/fake_am_transport.h"
#include "comm/ucx_am_transport.h"

namespace tessera::comm {

core::StatusOr<std::unique_ptr<AmTransport>> MakeAmTransport(const std::string& backend) {
  if (backend == "fake") return MakeFakeAmTransport();
  if (backend == "ucx") return MakeUcxAmTransport();
  return core::InvalidArgument(
      fmt::format("am transport backend: got '{}', must be one of fake, ucx", backend));
}

void DestroyTransport(std::unique_ptr<AmTransport>& t) {
  delete t.get();  // the progress thread stops here; t still points at the object meanwhile
  (void)t.release();
}

}  // namespace tessera::comm
