// The messages between KernelFlume's weight node and its attention nodes, as active messages
// of comm/am_transport.h: an id, a small binary header (encoded here) and a payload of fp32
// tensors. Headers are packed fields in host byte order (both ends run the same build on
// x86-64); Decode* checks the size and every count against the payload and returns
// InvalidArgument naming the message and field, so a corrupt or foreign message is refused,
// never read past its end.
//
//   kJoin        node -> weight  node id, capacity_tokens, page_tokens, model fingerprint ("" =
//                                not given); no payload
//   kJoinReply   weight -> node  accepted or the reason; the model's attention shape
//   kQuery       weight -> node  (request, version, step, layer, Tq, ranges [(range id, tokens
//                                required)]); payload q (Tq, H, D)
//   kPartial     node -> weight  (request, step, layer, node, status code + message); payload o
//                                (Tq, H, D) then lse (Tq, H) when ok
//   kAppend      weight -> node  (request, range id, layer, offset in range, T); payload k then
//                                v, each (T, Hkv, D)
//   kFree        weight -> node  (request): drop all of its ranges
//   kShutdown    weight -> node  exit cleanly
//   kFreeRange   weight -> node  (request, range): drop one range (migrated away, or reclaimed)
//   kExport      weight -> node  (migration, request, range): describe a sealed range for a
//                                one-sided read -> kRangeExport back
//   kRangeExport node -> weight  where the range's pages are: the node's listen address, the
//                weight -> node  registered pool's remote key and base address, page bytes,
//                                tokens, page ids (or a failure); the weight node forwards it
//                                to the migration's target, which reads the pages itself
//   kMigrated    node -> weight  (migration, node, status): the target holds the range
//   kBatch       either way      several of the messages above in one (kQuery and kAppend from
//                                the weight node, kPartial from a node): per entry its id, header
//                                and payload size, the payloads concatenated; the receiver
//                                handles the entries in order, exactly as if sent one by one.
//                                Pipelined decode sends a micro-batch's queries (and appends) of
//                                a layer as one kBatch per node, and a node answers a kBatch's
//                                queries with one kBatch of partials (send_batch.h).
// A step is identified by a step id the weight node draws per request (a retried step or a
// re-prefill chunk gets a new one), so a late partial of an abandoned attempt is never taken
// for the answer to a later one.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::kernelflume {

enum MessageId : uint16_t {
  kJoin = 1,
  kJoinReply = 2,
  kQuery = 3,
  kPartial = 4,
  kAppend = 5,
  kFree = 6,
  kShutdown = 7,
  kFreeRange = 8,
  kExport = 9,
  kRangeExport = 10,
  kMigrated = 11,
  kBatch = 12,
};

// The shape an attention node needs: per-layer KV of Hkv heads of D floats, queries of H heads.
struct AttentionShape {
  int32_t num_layers = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  float scale = 0;  // softmax scale
  bool operator==(const AttentionShape&) const = default;
};

struct JoinMsg {
  int32_t node_id = 0;
  int64_t capacity_tokens = 0;
  int32_t page_tokens = 0;
  std::string fingerprint;
};

struct JoinReplyMsg {
  bool accepted = false;
  std::string reason;  // why not, when refused
  AttentionShape shape;
  std::string fingerprint;  // the weight node's model
};

struct RangeNeed {
  uint64_t range_id = 0;
  int64_t tokens = 0;  // the first `tokens` tokens of the range are attended
};

struct QueryMsg {
  uint64_t request_id = 0;
  uint64_t version = 0;
  int64_t step = 0;  // the step id (see above)
  int32_t layer = 0;
  int32_t num_q_tokens = 0;
  std::vector<RangeNeed> ranges;  // in position order
};

struct PartialMsg {
  uint64_t request_id = 0;
  int64_t step = 0;
  int32_t layer = 0;
  int32_t node_id = 0;
  int32_t code = 0;  // core::StatusCode; 0 = ok
  std::string message;
  int64_t compute_us = 0;  // the node's CPU time computing this partial (its load, for autoscaling)
};

struct AppendMsg {
  uint64_t request_id = 0;
  uint64_t range_id = 0;
  int32_t layer = 0;
  int64_t offset = 0;  // position within the range of the first appended token
  int32_t num_tokens = 0;
};

struct FreeMsg {
  uint64_t request_id = 0;
};

struct FreeRangeMsg {
  uint64_t request_id = 0;
  uint64_t range_id = 0;
};

struct ExportMsg {
  uint64_t migration_id = 0;
  uint64_t request_id = 0;
  uint64_t range_id = 0;
};

// A sealed range's pages on its source node, for the target's one-sided reads.
struct RangeExportMsg {
  uint64_t migration_id = 0;
  uint64_t request_id = 0;
  uint64_t range_id = 0;
  int32_t code = 0;  // core::StatusCode of the export; 0 = ok
  std::string message;
  std::string address;  // the source node's listen address
  uint64_t base_address = 0;
  int64_t page_bytes = 0;
  int64_t tokens = 0;  // tokens in every layer of the range
  std::vector<std::byte> remote_key;
  std::vector<int32_t> pages;  // page ids in the source's pool, in token order
};

struct MigratedMsg {
  uint64_t migration_id = 0;
  int32_t node_id = 0;
  int32_t code = 0;
  std::string message;
};

std::vector<std::byte> Encode(const JoinMsg& m);
std::vector<std::byte> Encode(const JoinReplyMsg& m);
std::vector<std::byte> Encode(const QueryMsg& m);
std::vector<std::byte> Encode(const PartialMsg& m);
std::vector<std::byte> Encode(const AppendMsg& m);
std::vector<std::byte> Encode(const FreeMsg& m);
std::vector<std::byte> Encode(const FreeRangeMsg& m);
std::vector<std::byte> Encode(const ExportMsg& m);
std::vector<std::byte> Encode(const RangeExportMsg& m);
std::vector<std::byte> Encode(const MigratedMsg& m);

core::StatusOr<JoinMsg> DecodeJoin(std::span<const std::byte> header);
core::StatusOr<JoinReplyMsg> DecodeJoinReply(std::span<const std::byte> header);
core::StatusOr<QueryMsg> DecodeQuery(std::span<const std::byte> header);
core::StatusOr<PartialMsg> DecodePartial(std::span<const std::byte> header);
core::StatusOr<AppendMsg> DecodeAppend(std::span<const std::byte> header);
core::StatusOr<FreeMsg> DecodeFree(std::span<const std::byte> header);
core::StatusOr<FreeRangeMsg> DecodeFreeRange(std::span<const std::byte> header);
core::StatusOr<ExportMsg> DecodeExport(std::span<const std::byte> header);
core::StatusOr<RangeExportMsg> DecodeRangeExport(std::span<const std::byte> header);
core::StatusOr<MigratedMsg> DecodeMigrated(std::span<const std::byte> header);

// One message inside a kBatch. Decoded entries point into the batch's header and payload.
struct BatchEntry {
  uint16_t am_id = 0;
  std::span<const std::byte> header;
  std::span<const std::byte> payload;
};
// Header: u32 count, then per entry u16 id, u32 header bytes, u64 payload bytes, the header.
// The payload is the entries' payloads concatenated (EncodeBatchPayload).
std::vector<std::byte> EncodeBatchHeader(std::span<const BatchEntry> entries);
std::vector<std::byte> EncodeBatchPayload(std::span<const BatchEntry> entries);
// InvalidArgument when the header is malformed, an entry is a kBatch, or the payload sizes do
// not add up to the payload's.
core::StatusOr<std::vector<BatchEntry>> DecodeBatch(std::span<const std::byte> header,
                                                    std::span<const std::byte> payload);

// Copies the payload into `out` (resized to `count` floats): InvalidArgument naming `what`
// unless it holds exactly `count` floats. (Payload buffers need not be float-aligned.)
[[nodiscard]] core::Status CopyFloats(std::span<const std::byte> payload, size_t count,
                                      const char* what, std::vector<float>& out);
inline std::span<const std::byte> BytesOf(std::span<const float> f) { return std::as_bytes(f); }

}  // namespace tessera::kernelflume
