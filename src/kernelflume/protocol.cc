#include "kernelflume/protocol.h"

#include <fmt/format.h>

#include <cstring>
#include <type_traits>

namespace tessera::kernelflume {
namespace {

class Writer {
 public:
  template <typename T>
  Writer& Put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out_.insert(out_.end(), p, p + sizeof(T));
    return *this;
  }
  Writer& PutString(const std::string& s) {
    Put(static_cast<uint32_t>(s.size()));
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    out_.insert(out_.end(), p, p + s.size());
    return *this;
  }
  std::vector<std::byte> Take() { return std::move(out_); }

 private:
  std::vector<std::byte> out_;
};

class Reader {
 public:
  Reader(std::span<const std::byte> in, const char* what) : in_(in), what_(what) {}
  template <typename T>
  bool Get(T& v) {
    if (in_.size() - pos_ < sizeof(T)) return Fail();
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetString(std::string& s, uint32_t max_bytes = 4096) {
    uint32_t n = 0;
    if (!Get(n) || n > max_bytes || in_.size() - pos_ < n) return Fail();
    s.assign(reinterpret_cast<const char*>(in_.data() + pos_), n);
    pos_ += n;
    return true;
  }
  size_t remaining() const { return in_.size() - pos_; }
  core::Status Done() const {
    if (failed_) {
      return core::InvalidArgument(
          fmt::format("kernelflume {} message: header of {} bytes is truncated or malformed", what_,
                      in_.size()));
    }
    if (pos_ != in_.size()) {
      return core::InvalidArgument(fmt::format(
          "kernelflume {} message: header has {} trailing bytes", what_, in_.size() - pos_));
    }
    return core::Status::Ok();
  }

 private:
  bool Fail() {
    failed_ = true;
    return false;
  }
  std::span<const std::byte> in_;
  const char* what_;
  size_t pos_ = 0;
  bool failed_ = false;
};

template <typename M>
core::StatusOr<M> Finish(const Reader& r, M m) {
  if (core::Status st = r.Done(); !st.ok()) return st;
  return m;
}

}  // namespace

std::vector<std::byte> Encode(const JoinMsg& m) {
  return Writer()
      .Put(m.node_id)
      .Put(m.capacity_tokens)
      .Put(m.page_tokens)
      .PutString(m.fingerprint)
      .Take();
}

core::StatusOr<JoinMsg> DecodeJoin(std::span<const std::byte> h) {
  Reader r(h, "join");
  JoinMsg m;
  r.Get(m.node_id) && r.Get(m.capacity_tokens) && r.Get(m.page_tokens) &&
      r.GetString(m.fingerprint);
  return Finish(r, std::move(m));
}

std::vector<std::byte> Encode(const JoinReplyMsg& m) {
  return Writer()
      .Put(static_cast<uint8_t>(m.accepted))
      .PutString(m.reason)
      .Put(m.shape.num_layers)
      .Put(m.shape.num_heads)
      .Put(m.shape.num_kv_heads)
      .Put(m.shape.head_dim)
      .Put(m.shape.scale)
      .PutString(m.fingerprint)
      .Take();
}

core::StatusOr<JoinReplyMsg> DecodeJoinReply(std::span<const std::byte> h) {
  Reader r(h, "join reply");
  JoinReplyMsg m;
  uint8_t accepted = 0;
  r.Get(accepted) && r.GetString(m.reason) && r.Get(m.shape.num_layers) &&
      r.Get(m.shape.num_heads) && r.Get(m.shape.num_kv_heads) && r.Get(m.shape.head_dim) &&
      r.Get(m.shape.scale) && r.GetString(m.fingerprint);
  m.accepted = accepted != 0;
  return Finish(r, std::move(m));
}

std::vector<std::byte> Encode(const QueryMsg& m) {
  Writer w;
  w.Put(m.request_id)
      .Put(m.version)
      .Put(m.step)
      .Put(m.layer)
      .Put(m.num_q_tokens)
      .Put(static_cast<uint32_t>(m.ranges.size()));
  for (const RangeNeed& g : m.ranges) w.Put(g.range_id).Put(g.tokens);
  return w.Take();
}

core::StatusOr<QueryMsg> DecodeQuery(std::span<const std::byte> h) {
  Reader r(h, "query");
  QueryMsg m;
  uint32_t n = 0;
  if (r.Get(m.request_id) && r.Get(m.version) && r.Get(m.step) && r.Get(m.layer) &&
      r.Get(m.num_q_tokens) && r.Get(n) && n <= r.remaining() / 16) {
    m.ranges.resize(n);
    for (RangeNeed& g : m.ranges) r.Get(g.range_id) && r.Get(g.tokens);
  } else if (r.Done().ok()) {
    return core::InvalidArgument(
        fmt::format("kernelflume query message: {} ranges do not fit its header", n));
  }
  return Finish(r, std::move(m));
}

std::vector<std::byte> Encode(const PartialMsg& m) {
  return Writer()
      .Put(m.request_id)
      .Put(m.step)
      .Put(m.layer)
      .Put(m.node_id)
      .Put(m.code)
      .PutString(m.message)
      .Put(m.compute_us)
      .Take();
}

core::StatusOr<PartialMsg> DecodePartial(std::span<const std::byte> h) {
  Reader r(h, "partial");
  PartialMsg m;
  r.Get(m.request_id) && r.Get(m.step) && r.Get(m.layer) && r.Get(m.node_id) && r.Get(m.code) &&
      r.GetString(m.message) && r.Get(m.compute_us);
  return Finish(r, std::move(m));
}

std::vector<std::byte> Encode(const AppendMsg& m) {
  return Writer()
      .Put(m.request_id)
      .Put(m.range_id)
      .Put(m.layer)
      .Put(m.offset)
      .Put(m.num_tokens)
      .Take();
}

core::StatusOr<AppendMsg> DecodeAppend(std::span<const std::byte> h) {
  Reader r(h, "append");
  AppendMsg m;
  r.Get(m.request_id) && r.Get(m.range_id) && r.Get(m.layer) && r.Get(m.offset) &&
      r.Get(m.num_tokens);
  return Finish(r, std::move(m));
}

std::vector<std::byte> Encode(const FreeMsg& m) { return Writer().Put(m.request_id).Take(); }

core::StatusOr<FreeMsg> DecodeFree(std::span<const std::byte> h) {
  Reader r(h, "free");
  FreeMsg m;
  r.Get(m.request_id);
  return Finish(r, std::move(m));
}

std::vector<std::byte> Encode(const FreeRangeMsg& m) {
  return Writer().Put(m.request_id).Put(m.range_id).Take();
}

core::StatusOr<FreeRangeMsg> DecodeFreeRange(std::span<const std::byte> h) {
  Reader r(h, "free-range");
  FreeRangeMsg m;
  r.Get(m.request_id) && r.Get(m.range_id);
  return Finish(r, std::move(m));
}

std::vector<std::byte> Encode(const ExportMsg& m) {
  return Writer().Put(m.migration_id).Put(m.request_id).Put(m.range_id).Take();
}

core::StatusOr<ExportMsg> DecodeExport(std::span<const std::byte> h) {
  Reader r(h, "export");
  ExportMsg m;
  r.Get(m.migration_id) && r.Get(m.request_id) && r.Get(m.range_id);
  return Finish(r, std::move(m));
}

std::vector<std::byte> Encode(const RangeExportMsg& m) {
  Writer w;
  w.Put(m.migration_id)
      .Put(m.request_id)
      .Put(m.range_id)
      .Put(m.code)
      .PutString(m.message)
      .PutString(m.address)
      .Put(m.base_address)
      .Put(m.page_bytes)
      .Put(m.tokens)
      .PutString(
          std::string(reinterpret_cast<const char*>(m.remote_key.data()), m.remote_key.size()))
      .Put(static_cast<uint32_t>(m.pages.size()));
  for (int32_t p : m.pages) w.Put(p);
  return w.Take();
}

core::StatusOr<RangeExportMsg> DecodeRangeExport(std::span<const std::byte> h) {
  Reader r(h, "range-export");
  RangeExportMsg m;
  std::string key;
  uint32_t n = 0;
  if (r.Get(m.migration_id) && r.Get(m.request_id) && r.Get(m.range_id) && r.Get(m.code) &&
      r.GetString(m.message) && r.GetString(m.address) && r.Get(m.base_address) &&
      r.Get(m.page_bytes) && r.Get(m.tokens) && r.GetString(key, 1 << 16) && r.Get(n) &&
      n <= r.remaining() / sizeof(int32_t)) {
    m.pages.resize(n);
    for (int32_t& p : m.pages) r.Get(p);
  } else if (r.Done().ok()) {
    return core::InvalidArgument(
        fmt::format("kernelflume range-export message: {} pages do not fit its header", n));
  }
  const auto* kb = reinterpret_cast<const std::byte*>(key.data());
  m.remote_key.assign(kb, kb + key.size());
  return Finish(r, std::move(m));
}

std::vector<std::byte> Encode(const MigratedMsg& m) {
  return Writer().Put(m.migration_id).Put(m.node_id).Put(m.code).PutString(m.message).Take();
}

core::StatusOr<MigratedMsg> DecodeMigrated(std::span<const std::byte> h) {
  Reader r(h, "migrated");
  MigratedMsg m;
  r.Get(m.migration_id) && r.Get(m.node_id) && r.Get(m.code) && r.GetString(m.message);
  return Finish(r, std::move(m));
}

std::vector<std::byte> EncodeBatchHeader(std::span<const BatchEntry> entries) {
  Writer w;
  w.Put(static_cast<uint32_t>(entries.size()));
  std::vector<std::byte> out = w.Take();
  for (const BatchEntry& e : entries) {
    Writer one;
    one.Put(e.am_id)
        .Put(static_cast<uint32_t>(e.header.size()))
        .Put(static_cast<uint64_t>(e.payload.size()));
    std::vector<std::byte> fixed = one.Take();
    out.insert(out.end(), fixed.begin(), fixed.end());
    out.insert(out.end(), e.header.begin(), e.header.end());
  }
  return out;
}

std::vector<std::byte> EncodeBatchPayload(std::span<const BatchEntry> entries) {
  std::vector<std::byte> out;
  for (const BatchEntry& e : entries) out.insert(out.end(), e.payload.begin(), e.payload.end());
  return out;
}

core::StatusOr<std::vector<BatchEntry>> DecodeBatch(std::span<const std::byte> header,
                                                    std::span<const std::byte> payload) {
  auto bad = [&](const std::string& why) {
    return core::InvalidArgument(
        fmt::format("kernelflume batch message: {} (header {} bytes, payload {} bytes)", why,
                    header.size(), payload.size()));
  };
  size_t pos = 0, payload_pos = 0;
  auto get = [&](auto& v) {
    if (header.size() - pos < sizeof(v)) return false;
    std::memcpy(&v, header.data() + pos, sizeof(v));
    pos += sizeof(v);
    return true;
  };
  uint32_t n = 0;
  if (!get(n)) return bad("truncated count");
  // Every entry takes at least 14 header bytes: a count past that is corrupt.
  if (n > header.size() / 14) return bad(fmt::format("count {} does not fit the header", n));
  std::vector<BatchEntry> out(n);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t hbytes = 0;
    uint64_t pbytes = 0;
    if (!get(out[i].am_id) || !get(hbytes) || !get(pbytes)) {
      return bad(fmt::format("entry {} truncated", i));
    }
    if (out[i].am_id == kBatch) return bad(fmt::format("entry {} is itself a batch", i));
    if (header.size() - pos < hbytes) return bad(fmt::format("entry {}: header truncated", i));
    if (payload.size() - payload_pos < pbytes) {
      return bad(fmt::format("entry {}: payload of {} bytes runs past the end", i, pbytes));
    }
    out[i].header = header.subspan(pos, hbytes);
    out[i].payload = payload.subspan(payload_pos, pbytes);
    pos += hbytes;
    payload_pos += pbytes;
  }
  if (pos != header.size())
    return bad(fmt::format("{} trailing header bytes", header.size() - pos));
  if (payload_pos != payload.size()) {
    return bad(fmt::format("{} trailing payload bytes", payload.size() - payload_pos));
  }
  return out;
}

core::Status CopyFloats(std::span<const std::byte> payload, size_t count, const char* what,
                        std::vector<float>& out) {
  if (payload.size() != count * sizeof(float)) {
    return core::InvalidArgument(
        fmt::format("kernelflume {}: payload of {} bytes, expected {} "
                    "floats ({} bytes)",
                    what, payload.size(), count, count * sizeof(float)));
  }
  out.resize(count);
  if (count > 0) std::memcpy(out.data(), payload.data(), payload.size());
  return core::Status::Ok();
}

}  // namespace tessera::kernelflume
