// WeightNode: the KernelFlume process that holds the model's weights. It listens on an AM
// transport for attention nodes, admits them (same model fingerprint, unique id), routes each
// request's KV token ranges to them (router.h over route_store.h), and collects their partial
// attention replies; OpenRequest gives the CoreAttention (disaggregated_attention.h) that a
// Llama forward uses to run its core attention on those nodes.
//
// Joins are answered on the transport's progress thread: refused (with the reason sent to the
// node and kept in refusals()) when the fingerprint differs from this model's or the id is
// taken. A node whose endpoint fails is marked lost: every wait for one of its replies ends
// with Unavailable naming it (recovery by re-prefill is a later part), never a hang; replies
// that do not come within reply_timeout_s end the wait with DeadlineExceeded naming the node.
// Thread-safety: all methods may be called from any thread; requests run one thread each.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "comm/am_transport.h"
#include "core/status.h"
#include "kernelflume/protocol.h"
#include "kernelflume/route_store.h"
#include "kernelflume/router.h"

namespace tessera::kernelflume {

struct WeightNodeOptions {
  RouterOptions router;
  double reply_timeout_s = 60;
  std::string listen_host = "127.0.0.1";
  int listen_port = 0;  // 0 = any free port
};

// One attention node's reply to a query.
struct Partial {
  int32_t node_id = 0;
  core::Status status;
  std::vector<float> o_lse;  // o (Tq, H, D) then lse (Tq, H)
};

class DisaggregatedAttention;
class SendBatch;

class WeightNode {
 public:
  static core::StatusOr<std::unique_ptr<WeightNode>> Start(
      std::unique_ptr<comm::AmTransport> transport, const AttentionShape& shape,
      const std::string& fingerprint, const WeightNodeOptions& options);
  ~WeightNode();

  std::string address() const { return transport_->address(); }
  const AttentionShape& shape() const { return shape_; }
  // Waits until `count` nodes are active; DeadlineExceeded naming how many joined (and any
  // refusals) after timeout_s, or early with `abort()` returning a non-OK status (e.g. a node
  // process that exited).
  [[nodiscard]] core::Status WaitForNodes(int count, double timeout_s,
                                          const std::function<core::Status()>& abort = {});
  std::vector<std::string> refusals() const;

  // A request's core attention on the nodes (request ids unique among open requests).
  core::StatusOr<std::unique_ptr<DisaggregatedAttention>> OpenRequest(uint64_t request_id);
  // Sends kShutdown to every node that is not lost.
  void ShutdownNodes();

  std::shared_ptr<const RoutingTable> routes() const { return store_.Current(); }
  int64_t reroutes() const;

 private:
  friend class DisaggregatedAttention;
  friend class SendBatch;
  WeightNode(const AttentionShape& shape, const std::string& fingerprint,
             const WeightNodeOptions& options);
  void OnJoin(comm::PeerId from, std::span<const std::byte> header);
  // Delivers kPartial messages (one, or a kBatch's) to the mailbox under one lock and one
  // notification, so a batch of replies wakes the waiting step once, not once per entry.
  void OnPartials(std::span<const BatchEntry> partials);
  void OnFailure(comm::PeerId peer, const core::Status& why);

  // For DisaggregatedAttention: under the lock.
  core::StatusOr<std::shared_ptr<const RoutingTable>> PrepareStep(uint64_t request, int64_t pos0,
                                                                  int64_t num_tokens);
  [[nodiscard]] core::Status SendTo(int32_t node_id, uint16_t am_id,
                                    std::span<const std::byte> header,
                                    std::span<const std::byte> payload);
  // Waits for the replies of `nodes` to (request, step, layer); fills `out` in `nodes` order.
  [[nodiscard]] core::Status WaitPartials(uint64_t request, int64_t step, int32_t layer,
                                          std::span<const int32_t> nodes,
                                          std::vector<Partial>& out);
  void CloseRequest(uint64_t request_id);

  struct NodeEntry {
    comm::PeerId peer = 0;
    std::string endpoint;
    bool lost = false;
    std::string lost_reason;
  };
  struct Key {
    uint64_t request;
    int64_t step;
    int32_t layer;
    int32_t node;
    auto operator<=>(const Key&) const = default;
  };

  AttentionShape shape_;
  std::string fingerprint_;
  WeightNodeOptions options_;
  RouteStore store_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Router router_;                       // guarded by mu_
  std::map<int32_t, NodeEntry> nodes_;  // by node id
  std::map<Key, Partial> mailbox_;
  std::map<uint64_t, core::Status> request_errors_;  // failures reported outside a query
  std::vector<std::string> refusals_;
  std::unique_ptr<comm::AmTransport> transport_;  // last: stopped first
};

}  // namespace tessera::kernelflume
