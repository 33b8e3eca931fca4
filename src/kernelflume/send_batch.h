// SendBatch: the weight node's messages to attention nodes gathered and sent as one kBatch per
// node (protocol.h), so that a micro-batch's queries of a layer cost one message per node, not
// one per request. A DisaggregatedAttention given a SendBatch (set_send_batch) adds its kQuery
// and kAppend messages here instead of sending them; the owner calls Flush once the
// micro-batch's BeginLayer calls are done (PipelinedDecode does, before computing K and V) and
// before waiting on any of their replies -- a query that is never flushed is never answered
// (its wait ends with the weight node's reply timeout). An attention node answers the queries
// of one kBatch with one kBatch of partials. Order is kept: entries go out in the order added,
// and a node handles them in that order.
// Flush before destroying a request whose messages it may hold (its kFree goes out at once).
// Add copies the header and payload. Thread-safety: one thread (the step's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "core/status.h"

namespace tessera::kernelflume {

class WeightNode;

class SendBatch {
 public:
  explicit SendBatch(WeightNode& weight_node) : wn_(weight_node) {}

  void Add(int32_t node_id, uint16_t am_id, std::span<const std::byte> header,
           std::span<const std::byte> payload);
  // Sends what was added: one message per node (a kBatch, or the message itself when alone).
  // The first failure (a lost node, named) is returned after trying every node; either way the
  // batch is empty afterwards.
  [[nodiscard]] core::Status Flush();
  bool empty() const { return pending_.empty(); }
  // Messages and kBatch sends so far (for tests and reports).
  int64_t messages_added() const { return messages_added_; }
  int64_t sends() const { return sends_; }

 private:
  struct Pending {
    uint16_t am_id = 0;
    std::vector<std::byte> header, payload;
  };
  WeightNode& wn_;
  std::map<int32_t, std::vector<Pending>> pending_;  // by node id
  int64_t messages_added_ = 0;
  int64_t sends_ = 0;
};

}  // namespace tessera::kernelflume
