// BroadcastString: sends a byte string from `root` to every rank of a communicator (e.g. a
// plan JSON planned on rank 0, so every rank runs the identical plan even when the planner
// is not deterministic across processes). Collective over `world`: the length travels as
// one int64, then the bytes packed eight to an int64 element (exact, any length).
// To send a result that may be an error, prefer BroadcastResult (broadcast_result.h).
#pragma once

#include <string>

#include "comm/communicator.h"
#include "core/status.h"

namespace tessera::comm {

core::Status BroadcastString(Communicator& world, std::string* s, int root);

}  // namespace tessera::comm
