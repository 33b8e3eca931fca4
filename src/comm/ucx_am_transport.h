// The UCX backend of AmTransport (am_transport.h).
#pragma once

#include <memory>

#include "comm/am_transport.h"

namespace tessera::comm {

core::StatusOr<std::unique_ptr<AmTransport>> MakeUcxAmTransport();

}  // namespace tessera::comm
