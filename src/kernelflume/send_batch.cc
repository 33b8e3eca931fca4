#include "kernelflume/send_batch.h"

#include "kernelflume/protocol.h"
#include "kernelflume/weight_node.h"

namespace tessera::kernelflume {

void SendBatch::Add(int32_t node_id, uint16_t am_id, std::span<const std::byte> header,
                    std::span<const std::byte> payload) {
  pending_[node_id].push_back(Pending{am_id, std::vector<std::byte>(header.begin(), header.end()),
                                      std::vector<std::byte>(payload.begin(), payload.end())});
  ++messages_added_;
}

core::Status SendBatch::Flush() {
  core::Status first;
  for (const auto& [node, messages] : pending_) {
    core::Status st;
    if (messages.size() == 1) {
      st = wn_.SendTo(node, messages[0].am_id, messages[0].header, messages[0].payload);
    } else {
      std::vector<BatchEntry> entries;
      entries.reserve(messages.size());
      for (const Pending& m : messages) entries.push_back(BatchEntry{m.am_id, m.header, m.payload});
      st = wn_.SendTo(node, kBatch, EncodeBatchHeader(entries), EncodeBatchPayload(entries));
    }
    ++sends_;
    if (!st.ok() && first.ok()) first = st;
  }
  pending_.clear();
  return first;
}

}  // namespace tessera::kernelflume
