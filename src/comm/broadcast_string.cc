#include "comm/broadcast_string.h"

#include <span>
#include <vector>

namespace tessera::comm {

core::Status BroadcastString(Communicator& world, std::string* s, int root) {
  float len[2] = {static_cast<float>(s->size() & 0xFFFF),
                  static_cast<float>((s->size() >> 16) & 0xFFFF)};
  RETURN_IF_ERROR(world.Broadcast(std::span<float>(len, 2), root));
  const size_t n = static_cast<size_t>(len[0]) + (static_cast<size_t>(len[1]) << 16);
  std::vector<float> buf(n);
  if (world.rank() == root)
    for (size_t i = 0; i < n; ++i) buf[i] = static_cast<unsigned char>((*s)[i]);
  RETURN_IF_ERROR(world.Broadcast(buf, root));
  s->resize(n);
  for (size_t i = 0; i < n; ++i) (*s)[i] = static_cast<char>(static_cast<unsigned char>(buf[i]));
  return core::Status::Ok();
}

}  // namespace tessera::comm
