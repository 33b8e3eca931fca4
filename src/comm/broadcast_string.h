// BroadcastString: sends a byte string from `root` to every rank of a communicator (e.g. a
// plan JSON planned on rank 0, so every rank runs the identical plan even when the planner
// is not deterministic across processes). Collective over `world`; bytes travel as floats
// (one byte each, exact), the length as two 16-bit halves (strings up to 4 GiB).
#pragma once

#include <string>

#include "comm/communicator.h"
#include "core/status.h"

namespace tessera::comm {

core::Status BroadcastString(Communicator& world, std::string* s, int root);

}  // namespace tessera::comm
