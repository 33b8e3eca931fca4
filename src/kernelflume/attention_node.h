// AttentionNode: a weightless KernelFlume attention node. It joins a weight node over an AM
// transport (comm/am_transport.h), keeps the token ranges of KV the weight node appends in a
// paged store (range_kv_store.h), and answers each query with the partial attention (o, lse)
// of the query over the requested ranges (kernels/decode_attention.h) -- it holds no weights
// and runs no projection.
//
// Protocol (kernelflume/protocol.h): the node sends kJoin (id, capacity, page size, the model
// fingerprint it was started for, "" if none) and waits for kJoinReply, which carries the
// attention shape or the reason for a refusal (another model, a duplicate id). Then it serves
// kQuery, kAppend, kFree, kFreeRange and kShutdown on the transport's progress thread, and
// takes part in migrations: it listens for peer nodes (listen_host, any port); on kExport it
// registers its page pool for one-sided reads (once) and answers kRangeExport with where a
// sealed range's pages are; on a kRangeExport forwarded to it as a migration's target it
// connects to the source node, reads the pages with one-sided gets into its own pool and
// answers kMigrated (the source keeps serving the range until the weight node frees it). A
// query whose
// ranges do not yet hold the tokens it needs (its append still in flight) waits for them; any
// other failure (unknown range, bad message, pool full) is answered as a failed partial
// naming this node, so the weight node reports it instead of waiting. A kBatch of queries and
// appends is handled entry by entry in order, and the partials it produces go back as one
// kBatch (a query deferred past the batch is answered alone when its append arrives).
// Lifetime: owns its transport; destroying the node stops the transport first, so no handler
// runs on a destroyed node. Thread-safety: Wait from one thread; the rest is internal.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "comm/am_transport.h"
#include "core/status.h"
#include "kernelflume/protocol.h"
#include "kernelflume/range_kv_store.h"

namespace tessera::kernelflume {

struct AttentionNodeOptions {
  int32_t node_id = 0;
  int64_t capacity_tokens = 0;
  int32_t page_tokens = 256;
  std::string fingerprint;  // the model this node is for; "" = accept the weight node's
  double join_timeout_s = 30;
  std::string listen_host = "127.0.0.1";  // where peer nodes reach this one (migrations)
};

struct AttentionNodeStats {
  int64_t queries = 0;
  int64_t appends = 0;
  int64_t deferred_queries = 0;
  int64_t failed_queries = 0;
  int64_t ranges_exported = 0;
  int64_t ranges_imported = 0;
  int64_t ranges = 0;  // held now
};

class AttentionNode {
 public:
  // Connects to the weight node at `address` and joins. FailedPrecondition with the weight
  // node's reason when refused; Unavailable when it cannot be reached in join_timeout_s.
  static core::StatusOr<std::unique_ptr<AttentionNode>> Join(
      std::unique_ptr<comm::AmTransport> transport, const std::string& address,
      const AttentionNodeOptions& options);
  ~AttentionNode();

  // Blocks until the weight node sends kShutdown (OK) or is lost (Unavailable).
  [[nodiscard]] core::Status Wait();
  AttentionNodeStats stats() const;
  const AttentionShape& shape() const { return shape_; }

 private:
  struct PendingQuery {
    QueryMsg msg;
    std::vector<float> q;
  };
  AttentionNode(const AttentionNodeOptions& options);
  void OnJoinReply(std::span<const std::byte> header);
  void OnQuery(std::span<const std::byte> header, std::span<const std::byte> payload);
  void OnAppend(std::span<const std::byte> header, std::span<const std::byte> payload);
  void OnBatch(std::span<const std::byte> header, std::span<const std::byte> payload);
  // A kPartial to the weight node: gathered while a kBatch is handled, else sent at once.
  void Reply(std::span<const std::byte> header, std::span<const std::byte> payload);
  // Answers `q` if its ranges hold what it needs; false when it must wait.
  bool TryAnswer(const PendingQuery& q);
  void SendFailure(const QueryMsg& m, const core::Status& st);
  void OnExport(std::span<const std::byte> header);
  void OnImport(std::span<const std::byte> header);
  core::StatusOr<comm::PeerId> PeerNode(const std::string& address);
  void AnswerPending();
  void NoteRanges();  // on the progress thread, after the store's ranges change
  void Finish(core::Status st);

  AttentionNodeOptions options_;
  AttentionShape shape_;
  std::unique_ptr<RangeKvStore> store_;  // set once the join is accepted
  std::string store_error_;              // why the store could not be made after the join
  comm::PeerId weight_ = 0;
  std::deque<PendingQuery> pending_;
  std::vector<float> o_, lse_;  // reply scratch: o (Tq, H, D) then lse (Tq, H)
  std::vector<kernels::KvSegment> segments_;
  std::unique_ptr<comm::RegisteredMemory> pool_key_;  // after store_: unregistered first
  std::map<std::string, comm::PeerId> peer_nodes_;    // by listen address
  // Replies gathered while a kBatch is handled (progress thread only).
  bool gathering_ = false;
  std::vector<std::vector<std::byte>> reply_headers_, reply_payloads_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool join_answered_ = false;
  JoinReplyMsg join_reply_;
  bool finished_ = false;
  core::Status finish_status_;
  AttentionNodeStats stats_;
  // Declared last: destroyed first, which stops the progress thread before the members above.
  std::unique_ptr<comm::AmTransport> transport_;
};

// Joins the weight node at `address` over a new `transport` ("ucx"; "fake" only reaches weight
// nodes in this process) and serves until it is shut down (OK) or the weight node is lost
// (Unavailable): the body of `tessera kernelflume attn-node`.
[[nodiscard]] core::Status ServeAttentionNode(const std::string& address,
                                              const std::string& transport,
                                              const AttentionNodeOptions& options);

}  // namespace tessera::kernelflume
