// The AmTransport conformance suite on every backend, plus backend-specific tests.
#include "comm/am_transport.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "comm/am_conformance.h"
#include "comm/am_conformance_util.h"

namespace tessera::comm {
namespace {

std::vector<std::string> AmCheckNames() {
  std::vector<std::string> names;
  for (const auto& c : testing::AmConformanceChecks()) names.push_back(c.name);
  return names;
}

class AmConformance : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(AmConformance, Passes) {
  const auto& [backend, name] = GetParam();
  testing::AmCheckFn fn;
  for (const auto& c : testing::AmConformanceChecks()) {
    if (c.name == name) fn = c.fn;
  }
  ASSERT_TRUE(fn != nullptr);
  const std::string b = backend;
  const core::Status status = fn([b] { return MakeAmTransport(b); }, 4242);
  EXPECT_TRUE(status.ok()) << status.ToString();
}

INSTANTIATE_TEST_SUITE_P(AllChecks, AmConformance,
                         ::testing::Combine(::testing::Values("fake", "ucx"),
                                            ::testing::ValuesIn(AmCheckNames())),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

TEST(AmTransport, UnknownBackendIsInvalidArgument) {
  auto t = MakeAmTransport("carrier-pigeon");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("carrier-pigeon"), std::string::npos);
}

TEST(FakeAmTransport, GetOutsideTheRegionIsInvalidArgument) {
  std::vector<std::byte> memory(100);
  auto pair = testing::MakeAmPair([] { return MakeAmTransport("fake"); },
                                  [](AmTransport&, AmTransport&) {});
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  auto mem = pair->server->RegisterMemory(memory.data(), memory.size());
  ASSERT_TRUE(mem.ok());
  std::vector<std::byte> got(8);
  const auto key = (*mem)->remote_key();
  EXPECT_TRUE(
      pair->client->Get(pair->client_to_server, key, (*mem)->address() + 92, got.data(), 8).ok());
  EXPECT_EQ(
      pair->client->Get(pair->client_to_server, key, (*mem)->address() + 93, got.data(), 8).code(),
      core::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      pair->client->Get(pair->client_to_server, key, (*mem)->address() - 1, got.data(), 1).code(),
      core::StatusCode::kInvalidArgument);
}

TEST(FakeAmTransport, ListenOnAChosenPort) {
  auto a = MakeAmTransport("fake");
  auto b = MakeAmTransport("fake");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->Listen("ignored", 54321).ok());
  EXPECT_EQ((*a)->address(), "fake:54321");
  EXPECT_EQ((*b)->Listen("ignored", 54321).code(), core::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tessera::comm
