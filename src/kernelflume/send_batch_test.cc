// kBatch messages (protocol.h): entries round-trip with their ids, headers and payloads; a
// truncated or inconsistent batch, or a batch inside a batch, is refused naming what is wrong.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernelflume/protocol.h"

namespace tessera::kernelflume {
namespace {

std::vector<std::byte> Bytes(const std::string& s) {
  std::vector<std::byte> out;
  for (char c : s) out.push_back(static_cast<std::byte>(c));
  return out;
}

TEST(BatchMessage, EntriesRoundTrip) {
  const std::vector<std::byte> h0 = Bytes("query-header"), p0 = Bytes("q-floats"),
                               h1 = Bytes("append"), p1 = Bytes(""), h2 = Bytes(""),
                               p2 = Bytes("kv");
  const std::vector<BatchEntry> in = {{kQuery, h0, p0}, {kAppend, h1, p1}, {kPartial, h2, p2}};
  const std::vector<std::byte> header = EncodeBatchHeader(in), payload = EncodeBatchPayload(in);
  auto out = DecodeBatch(header, payload);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*out)[i].am_id, in[i].am_id);
    EXPECT_TRUE(std::equal((*out)[i].header.begin(), (*out)[i].header.end(), in[i].header.begin(),
                           in[i].header.end()));
    EXPECT_TRUE(std::equal((*out)[i].payload.begin(), (*out)[i].payload.end(),
                           in[i].payload.begin(), in[i].payload.end()));
  }
  auto empty = DecodeBatch(EncodeBatchHeader({}), {});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(BatchMessage, MalformedBatchesAreRefused) {
  const std::vector<std::byte> h = Bytes("hdr"), p = Bytes("payload");
  const std::vector<BatchEntry> in = {{kQuery, h, p}, {kAppend, h, p}};
  const std::vector<std::byte> header = EncodeBatchHeader(in), payload = EncodeBatchPayload(in);
  auto expect_bad = [](const core::StatusOr<std::vector<BatchEntry>>& r, const std::string& what) {
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.status().code(), core::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().ToString();
  };
  expect_bad(DecodeBatch(std::span(header).first(header.size() - 1), payload), "truncated");
  expect_bad(DecodeBatch(header, std::span(payload).first(payload.size() - 1)), "past the end");
  std::vector<std::byte> longer = payload;
  longer.push_back(std::byte{0});
  expect_bad(DecodeBatch(header, longer), "trailing payload");
  expect_bad(DecodeBatch(std::span(header).first(2), {}), "truncated count");
  const std::vector<BatchEntry> nested = {{kBatch, h, p}};
  expect_bad(DecodeBatch(EncodeBatchHeader(nested), EncodeBatchPayload(nested)), "itself a batch");
  std::vector<std::byte> huge_count = header;
  huge_count[3] = std::byte{0x7f};
  expect_bad(DecodeBatch(huge_count, payload), "does not fit");
}

}  // namespace
}  // namespace tessera::kernelflume
