#include "comm/buffer_layout.h"

#include <gtest/gtest.h>

#include <vector>

#include "comm/request.h"

namespace tessera::comm {
namespace {

using core::StatusCode;

TEST(BufferLayout, AcceptsBlocksInsideTheBuffer) {
  std::vector<int64_t> counts = {2, 0, 3};
  std::vector<int64_t> displs = {5, 7, 0};
  EXPECT_TRUE(CheckVarLayout("x", counts, displs, 7, 3).ok());
}

TEST(BufferLayout, RejectsWrongSizesNegativeValuesAndOverflow) {
  std::vector<int64_t> counts = {2, 1};
  std::vector<int64_t> displs = {0, 2};
  EXPECT_EQ(CheckVarLayout("x", counts, displs, 3, 3).code(), StatusCode::kInvalidArgument);
  std::vector<int64_t> negative_count = {-1, 1};
  EXPECT_EQ(CheckVarLayout("x", negative_count, displs, 3, 2).code(), StatusCode::kInvalidArgument);
  std::vector<int64_t> negative_displ = {0, -2};
  EXPECT_EQ(CheckVarLayout("x", counts, negative_displ, 3, 2).code(), StatusCode::kInvalidArgument);
  Status s = CheckVarLayout("AllToAllV send", counts, displs, 2, 2);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("AllToAllV send block 1"), std::string::npos) << s.message();
  std::vector<int64_t> huge = {0, INT64_MAX};
  EXPECT_EQ(CheckVarLayout("x", huge, displs, 3, 2).code(), StatusCode::kInvalidArgument);
}

TEST(BufferLayout, OverlapPeerTagAndPackedDispls) {
  float buffer[8] = {};
  EXPECT_FALSE(CheckNoOverlap("x", buffer, 16, buffer + 2, 16).ok());
  EXPECT_TRUE(CheckNoOverlap("x", buffer, 16, buffer + 4, 16).ok());
  EXPECT_TRUE(CheckNoOverlap("x", buffer, 16, buffer + 4, 0).ok());
  EXPECT_TRUE(CheckNoOverlap("x", buffer, 16, buffer + 5, 12).ok());
  EXPECT_TRUE(CheckNoOverlap("x", buffer + 4, 16, buffer, 16).ok());
  EXPECT_FALSE(CheckNoOverlap("x", buffer + 3, 8, buffer, 16).ok());
  EXPECT_TRUE(CheckPeer("x", 0, 1).ok());
  EXPECT_FALSE(CheckPeer("x", 1, 1).ok());
  EXPECT_FALSE(CheckPeer("x", -1, 4).ok());
  EXPECT_TRUE(CheckTag("x", kMaxTag).ok());
  EXPECT_FALSE(CheckTag("x", kMaxTag + 1).ok());
  EXPECT_FALSE(CheckTag("x", -1).ok());
  std::vector<int64_t> counts = {3, 0, 2, 5};
  std::vector<int64_t> displs(4);
  PackedDispls(counts, displs);
  EXPECT_EQ(displs, (std::vector<int64_t>{0, 3, 3, 5}));
}

TEST(Request, EmptyRequestIsComplete) {
  Request r;
  EXPECT_FALSE(r.pending());
  EXPECT_TRUE(r.Wait().ok());
  StatusOr<bool> t = r.Test();
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(*t);
  std::vector<Request> none;
  EXPECT_TRUE(WaitAll(none).ok());
}

}  // namespace
}  // namespace tessera::comm
