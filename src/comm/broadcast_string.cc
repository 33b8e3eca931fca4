#include "comm/broadcast_string.h"

#include <cstring>
#include <span>
#include <vector>

namespace tessera::comm {

core::Status BroadcastString(Communicator& world, std::string* s, int root) {
  int64_t len = static_cast<int64_t>(s->size());
  RETURN_IF_ERROR(world.Broadcast(std::span<int64_t>(&len, 1), root));
  const size_t n = static_cast<size_t>(len);
  std::vector<int64_t> buf((n + sizeof(int64_t) - 1) / sizeof(int64_t), 0);
  if (world.rank() == root && n > 0) std::memcpy(buf.data(), s->data(), n);
  RETURN_IF_ERROR(world.Broadcast(std::span<int64_t>(buf), root));
  s->resize(n);
  if (n > 0) std::memcpy(s->data(), buf.data(), n);
  return core::Status::Ok();
}

}  // namespace tessera::comm
